"""Class and sample weights as per-sample box constraints ``C_i = C * s_i * c_{y_i}``.

A weighted SVM minimises ``1/2 |f|^2 + C sum_i s_i c_{y_i} xi_i``: the
weights scale each sample's hinge loss, so the dual keeps its form with the
box ``0 <= alpha_i <= C_i`` (libsvm's ``weight`` and ``W``; scikit-learn's
``class_weight`` and ``sample_weight``). The oracles take the vector of
``C_i`` (:mod:`mklopt.oracles._box`); this module turns the estimators'
arguments into it.

* ``class_weight``: None (all 1), a dict from class label to weight (classes
  not named get 1; scikit-learn's rule for keys), or ``"balanced"``,
  ``n_samples / (n_classes * n_c)`` from the class counts of ``y`` (as
  ``SVC`` computes it: counts not weighted by ``sample_weight``).
* ``sample_weight``: None, a number (every sample) or one weight per sample,
  finite and ``>= 0``. A sample of weight 0 is left out of the fit, as libsvm
  leaves it out.

With one-vs-one, every pair's problem reads the ``C_i`` of its samples: the
class weights are those of the whole training set, as libsvm's
``weighted_C``.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from .._validation import check_per_sample

__all__ = ["check_sample_weight", "class_weight_vector", "sample_bounds"]


def check_sample_weight(sample_weight, n_samples, name="sample_weight"):
    """``sample_weight`` as a float64 vector of ``n_samples`` weights ``>= 0``, or None.

    Raises
    ------
    ValueError
        On a negative, NaN or infinite weight, a wrong length or shape, or
        weights that are all zero; the message names ``name``.
    TypeError
        On weights that are not numbers.

    Examples
    --------
    >>> check_sample_weight(2, 3).tolist()
    [2.0, 2.0, 2.0]
    """
    if sample_weight is None:
        return None
    if isinstance(sample_weight, (bool, np.bool_)):
        raise TypeError(f"{name} must be numbers, got {sample_weight!r}")
    if isinstance(sample_weight, (Real, np.number)) or (
            isinstance(sample_weight, np.ndarray) and sample_weight.ndim == 0):
        sample_weight = np.full(n_samples, float(sample_weight))
    return check_per_sample(sample_weight, n_samples, name, "weight")


def class_weight_vector(class_weight, classes, y_idx, name="class_weight"):
    """The weight of each class, shape (n_classes,).

    Parameters
    ----------
    class_weight : None, dict or "balanced"
    classes : ndarray
        The distinct labels (``classes_``).
    y_idx : ndarray of int
        Each sample's index into ``classes``.

    Examples
    --------
    >>> import numpy as np
    >>> class_weight_vector("balanced", np.array([0, 1]), np.array([0, 0, 0, 1])).tolist()
    [0.6666666666666666, 2.0]
    """
    k = len(classes)
    if class_weight is None:
        return np.ones(k)
    if isinstance(class_weight, str):
        if class_weight != "balanced":
            raise ValueError(f"{name} must be None, a dict or 'balanced', got {class_weight!r}")
        counts = np.bincount(y_idx, minlength=k).astype(np.float64)
        return y_idx.size / (k * counts)
    if not isinstance(class_weight, dict):
        raise TypeError(
            f"{name} must be None, a dict from class label to weight or 'balanced', got "
            f"{type(class_weight).__name__}"
        )
    out = np.ones(k)
    named = 0
    for c, label in enumerate(classes.tolist()):
        if label in class_weight:
            value = class_weight[label]
            if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (Real, np.number))
                    or not np.isfinite(value) or value < 0):
                raise ValueError(
                    f"{name}[{label!r}] must be a finite number >= 0, got {value!r}"
                )
            out[c] = float(value)
            named += 1
    if named < k and named != len(class_weight):
        # scikit-learn's rule: keys that are no class, while some class has no weight
        missing = [lab for lab in classes.tolist() if lab not in class_weight]
        raise ValueError(
            f"{name} names labels that are not classes of y ({sorted(map(repr, class_weight))} "
            f"against classes {classes.tolist()}); the classes {missing} are not in {name}"
        )
    return out


def sample_bounds(C, classes, y_idx, class_weight=None, sample_weight=None):
    """``C_i = C * s_i * c_{y_i}`` for every sample, or the scalar ``C`` when all weights are 1.

    Parameters
    ----------
    C : float
    classes, y_idx
        As for :func:`class_weight_vector`.
    class_weight : None, dict or "balanced"
    sample_weight : ndarray of shape (n_samples,) or None
        Checked by :func:`check_sample_weight`.

    Returns
    -------
    float or ndarray of shape (n_samples,)

    Raises
    ------
    ValueError
        When the weights leave a class with no sample of positive weight.
    """
    cw = class_weight_vector(class_weight, classes, y_idx)
    if sample_weight is None and np.all(cw == 1.0):
        return float(C)
    bounds = float(C) * cw[y_idx]
    if sample_weight is not None:
        bounds = bounds * sample_weight
    alive = np.bincount(y_idx, weights=(bounds > 0.0).astype(np.float64), minlength=len(classes))
    if np.any(alive == 0):
        dead = [classes[c].item() if hasattr(classes[c], "item") else classes[c]
                for c in np.flatnonzero(alive == 0)]
        raise ValueError(
            f"class_weight and sample_weight leave no sample of positive weight in class(es) "
            f"{dead}; every class needs one (drop the class from y, or give it a weight)"
        )
    return bounds
