"""The oracle a ``loss`` names, on every path of every estimator.

An estimator's ``loss`` is a name in the task registry
(:mod:`mklopt.tasks`), and every path that solves a problem for it (a fit
on features, on precomputed kernels, every fold and point of a
cross-validated path, the shared-weight multiclass problem, the command
line) builds its oracle here, from the registry alone. No path chooses an
oracle class by the loss's name: a loss registered by a user is the one
fitted wherever the built-in ones are.

What a path needs to know about an oracle beyond the protocol comes from
the registry entry too:

* ``exact_step``: whether the dual is a box-constrained quadratic program,
  so that a method chain may end with the exact active-set step
  (:func:`method_for`);
* whether the C path may scale its dual vector and cuts between values of
  C: decided in :mod:`._path` from the oracle's own structure (a
  box-constrained problem, or a smooth loss's ``l``), with a plain
  warm start of the weights for any other oracle.
"""

from __future__ import annotations

from functools import partial

from ..tasks import get_oracle

__all__ = ["oracle_entry", "make_oracle", "method_for", "pair_offset", "gives_probabilities",
           "check_sample_bounds"]


def oracle_entry(task, loss, where=None):
    """The registry entry of ``loss`` for ``task``.

    Parameters
    ----------
    task : str
        ``"classification"``, ``"regression"``, ``"one-class"`` or a user's.
    loss : str
        A name registered for ``task``.
    where : str, optional
        The path asking (``"MKLClassifierCV"``, ``"kernels='precomputed'"``),
        named in the error.

    Raises
    ------
    ValueError
        If ``loss`` is not registered for ``task``; the message lists the
        registered names.
    """
    try:
        return get_oracle(task, loss)
    except ValueError as exc:
        if where is None:
            raise
        raise ValueError(f"{where}: {exc}") from None


def make_oracle(task, loss, bank, y=None, **values):
    """The oracle ``loss`` names for ``task`` on ``bank`` (targets ``y``).

    ``values`` are the estimator's validated values (``C``, ``tol``,
    ``epsilon``, ``nu``); the entry takes those its factory declares.
    """
    return oracle_entry(task, loss).make(bank, y, **values)


def method_for(entry, new_method):
    """The method factory a problem of ``entry``'s oracle runs.

    The tight-tolerance chain of the estimators ends with the exact
    active-set step, a quadratic program over a box-constrained dual; an
    oracle whose dual is not one (the logistic loss, or a user's smooth
    loss) runs the chain's first stage, the level method, alone, which
    certifies the same gap.
    """
    from ..methods import Chain, LevelBundle

    if not entry.exact_step and isinstance(new_method, partial) and new_method.func is Chain:
        return LevelBundle
    return new_method



def gives_probabilities(task, loss):
    """Whether the oracle of ``loss`` declares its decision function the log-odds.

    An oracle class says so with ``log_odds = True`` (the logistic loss's
    :class:`~mklopt.oracles.LogisticDual`); its estimator then offers
    ``predict_proba``, the sigmoid of the decision function. A loss that is
    not registered (a model saved with a plugin's loss, loaded without it)
    gives none.
    """
    try:
        entry = oracle_entry(task, loss)
    except ValueError:
        return False
    return bool(getattr(entry.factory, "log_odds", False))


def pair_offset(part, w, alpha, tol):
    """One part of a shared-weight problem solved again at ``w`` from its ``alpha``.

    The joint run keeps the best point's dual vector but no per-part
    offset; ``alpha`` is already optimal at ``w``, so the inner solver
    stops at once and its answer carries the part's bias. An oracle that
    supports value-only answers is asked for no ``q``.
    """
    if tol is not None and hasattr(part, "tol"):
        part.tol = tol
    if getattr(part, "supports_value_only", False):
        return part(w, warm_start=alpha, need_q=False)
    return part(w, warm_start=alpha)


def check_sample_bounds(entry, where):
    """Refuse class or sample weights for a loss whose oracle cannot take them.

    An oracle whose ``C`` may be one bound per sample declares the class
    attribute ``sample_bounds = True`` (the hinge, epsilon-insensitive and
    squared losses); the one-class oracle takes ``sample_weight`` among its
    registered parameters.
    """
    factory = entry.factory
    ok = bool(getattr(factory, "sample_bounds", False))
    if entry.task == "one-class":
        ok = ok and "sample_weight" in entry.params
    if not ok:
        raise ValueError(
            f"{where}: loss={entry.name!r} takes no per-sample weights (class_weight, "
            "sample_weight); its oracle does not declare per-sample bounds. Use a loss that "
            "does (loss='hinge' for classification) or fit without weights"
        )
