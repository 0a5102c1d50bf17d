"""One-vs-one classification: pairs of classes, their warm starts, and the vote.

A classifier trains one binary problem per pair of classes (the
``"classification"`` task, :mod:`._tasks`) and predicts by majority vote,
breaking ties with the summed decision values, as the MKL papers do
(:func:`ovo_vote`). The pairs start from the weights of pairs sharing a
class (:func:`star_parents`, :func:`relatives`, :func:`waves`), and
:func:`set_pair_attributes` gives the fitted attributes their "one pair or
many" form.
"""

from __future__ import annotations

import numpy as np

__all__ = ["ovo_vote", "pair_label", "set_pair_attributes", "pair_values"]


def ovo_vote(decisions, pairs, n_classes):
    """Combine pairwise decision values into per-class scores.

    Parameters
    ----------
    decisions : ndarray of shape (n_samples, n_pairs)
        Decision value of each binary problem; positive favours the second
        class of the pair.
    pairs : ndarray of shape (n_pairs, 2)
        Class indices ``(i, j)``, ``i < j``, of each binary problem.
    n_classes : int
        Number of classes.

    Returns
    -------
    ndarray of shape (n_samples, n_classes)
        Number of votes of each class plus a tie-break term in
        ``(-1/3, 1/3)`` that grows with the summed decision values in favour
        of the class. The term is too small to overturn a vote, so the
        ``argmax`` is the majority vote with ties broken by confidence.
    """
    n = decisions.shape[0]
    votes = np.zeros((n, n_classes))
    conf = np.zeros((n, n_classes))
    for k, (i, j) in enumerate(pairs):
        d = decisions[:, k]
        pos = d > 0
        votes[:, j] += pos
        votes[:, i] += ~pos
        conf[:, j] += d
        conf[:, i] -= d
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))


def star_parents(pairs):
    """Warm-start parents of one-vs-one problems: each shares a class with its parent.

    For the pairs ``(i, j)``, ``i < j``, of :func:`itertools.combinations`,
    ``(0, j)`` starts from ``(0, j - 1)`` and ``(i, j)`` from ``(0, j)``;
    ``(0, 1)`` is the root. Pairs that share a class tend to have similar
    optimal kernel weights, and the tree is shallow: ``(i, j)`` is
    ``j - 1 + [i > 0]`` steps from the root, so the waves of independent
    pairs grow quickly.

    Parameters
    ----------
    pairs : ndarray of shape (n_pairs, 2)

    Returns
    -------
    list of int
        The parent's index of each pair, -1 for the root (and for any pair
        whose parent is not among ``pairs``).
    """
    index = {(int(i), int(j)): k for k, (i, j) in enumerate(pairs)}
    parents = []
    for i, j in pairs:
        i, j = int(i), int(j)
        parent = (0, j) if i > 0 else (0, j - 1)
        parents.append(index.get(parent, -1) if parent != (i, j) else -1)
    return parents


def relatives(pairs, parents, fitted, p):
    """The problems a one-vs-one problem starts from: its parent, then its fitted class-mates.

    ``fitted[q]`` says whether problem ``q`` is fitted; when problem ``p``
    runs (in its wave, see :func:`waves`) the fitted ones are exactly those
    of the earlier waves, whatever ``n_jobs``. Returns the indices of the
    parent and of the other fitted problems that share a class with ``p``
    (in pair order), or ``[]`` for a root.
    """
    parent = parents[p]
    if parent < 0:
        return []
    pairs = np.asarray(pairs)
    # (Two comparisons, not np.isin: its sort costs more than the rest of a
    # small pair's bookkeeping.)
    a, b = pairs[p]
    mates = ((pairs == a) | (pairs == b)).any(axis=1) & np.asarray(fitted, dtype=bool)
    mates[parent] = False
    return [int(parent), *np.flatnonzero(mates).tolist()]


def mean_weights(models):
    """The mean of the models' kernel weights (a point of the simplex when theirs are)."""
    return np.mean([np.asarray(m.weights, dtype=np.float64) for m in models], axis=0)


def waves(parents, n):
    """Problem indices in waves: each wave after the waves of its problems' parents."""
    if parents is None:
        return [list(range(n))]
    depth = [None] * n

    def settle(p):
        chain = []
        while depth[p] is None and parents[p] >= 0:
            chain.append(p)
            p = parents[p]
            if len(chain) > n:
                raise ValueError("the problems' parents form a cycle")
        d = 0 if depth[p] is None else depth[p]
        depth[p] = d
        for q in reversed(chain):
            d += 1
            depth[q] = d

    for p in range(n):
        settle(p)
    out = [[] for _ in range(max(depth) + 1)]
    for p in range(n):
        out[depth[p]].append(p)
    return out


def class_indices(y, name):
    """``(classes, y_idx)``: the distinct labels and each sample's index among them.

    Raises ``ValueError`` naming the estimator ``name`` when ``y`` has a
    single class.
    """
    classes, y_idx = np.unique(y, return_inverse=True)
    if classes.shape[0] < 2:
        raise ValueError(
            f"y has only one class ({classes[0].tolist()!r}); {name} needs at least two "
            "classes to train a classifier"
        )
    return classes, y_idx.ravel()


def class_order(y_idx):
    """``(order, position)``: the samples class by class, and where each one goes.

    ``order`` is the stable sort of the samples by class (``X[order]`` holds
    them class by class, each class in the order of ``X``) and ``position``
    its inverse (sample ``i`` is at ``position[i]`` of ``X[order]``).
    """
    order = np.argsort(y_idx, kind="stable")
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    return order, position


def pair_rows(y_idx, pairs, by_class=False):
    """The training rows of each binary problem.

    Parameters
    ----------
    y_idx : ndarray of shape (n_samples,), int
        Class index of each training sample.
    pairs : ndarray of shape (n_pairs, 2)
        The class indices of each problem (one-vs-one pairs ``i < j``).
    by_class : bool, default=False
        Order each pair's rows class by class (those of class ``i``, then
        those of class ``j``, each ascending) instead of ascending.

    Returns
    -------
    list of ndarray of int64
        With one pair (two classes), all rows in ascending order.
    """
    if len(pairs) == 1:
        return [np.arange(y_idx.shape[0], dtype=np.int64)]
    if by_class:
        members = [np.flatnonzero(y_idx == c) for c in range(int(np.max(pairs)) + 1)]
        return [np.concatenate((members[i], members[j])) for i, j in pairs]
    return [np.flatnonzero((y_idx == i) | (y_idx == j)) for i, j in pairs]


def pair_label(classes, i, j):
    """``"'a' vs 'b'"``: classes ``i`` and ``j`` as the user wrote them (no NumPy scalar reprs)."""
    a, b = np.asarray(classes)[[i, j]].tolist()
    return f"{a!r} vs {b!r}"


def _one(value):
    """The single pair's entry, as a Python scalar when it is a NumPy one."""
    return value.item() if isinstance(value, np.generic) else value


def set_pair_attributes(estimator, **per_pair):
    """Set fitted attributes given one value per one-vs-one pair.

    With one pair (two classes, or a regressor or one-class model) each
    attribute is that pair's value itself, a NumPy scalar becoming the
    Python ``int``/``float``/``bool``; with several pairs it is the whole
    array or list, one entry per pair. This is the form of ``weights_``,
    ``n_iter_``, ``gap_``, ``result_`` and the like in every estimator and
    in models loaded from files.

    Parameters
    ----------
    estimator : object
        Receives the attributes.
    **per_pair : ndarray or list, each of length n_pairs
        Attribute name mapped to its values, in pair order (an ndarray of
        shape (n_pairs, m) gives rows of shape (m,)).

    Examples
    --------
    >>> import numpy as np
    >>> class Fitted: pass
    >>> one, many = Fitted(), Fitted()
    >>> set_pair_attributes(one, n_iter_=np.array([7]), weights_=np.ones((1, 3)))
    >>> one.n_iter_, one.weights_.shape
    (7, (3,))
    >>> set_pair_attributes(many, n_iter_=np.array([7, 9]))
    >>> many.n_iter_.tolist()
    [7, 9]
    """
    for name, values in per_pair.items():
        if len(values) == 0:
            raise ValueError(f"{name} has no value: a fitted model has at least one pair")
        setattr(estimator, name, _one(values[0]) if len(values) == 1 else values)



def pair_values(estimator, name):
    """The inverse of :func:`set_pair_attributes`: attribute ``name`` as a list, one per pair.

    The number of pairs is ``len(estimator.models_)``.
    """
    value = getattr(estimator, name)
    return [value] if len(estimator.models_) == 1 else list(value)
