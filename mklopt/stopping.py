"""Pluggable stopping criteria for :func:`mklopt.solve`.

A criterion is called with each :class:`~mklopt.Progress` row and returns a
:class:`Stop` (why to stop, and whether that means convergence) or ``None``
to go on. Criteria compose with ``|`` (any) and ``&`` (all); any callable
``fn(progress) -> bool`` is accepted wherever a criterion is. A callable may
instead return ``Stop(reason, converged=True)`` to report convergence, and
its ``reset()`` method, if it has one, is called before every solve.

Examples
--------
>>> from mklopt.stopping import DualityGap, MaxIter, TimeLimit
>>> stop = DualityGap(1e-2) | MaxIter(500) | TimeLimit(60)
>>> stop
AnyOf(DualityGap(tol=0.01, relative=True), MaxIter(n=500), TimeLimit(seconds=60.0))
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ._policy import relative_gap, relative_target
from ._validation import check_int, check_real

__all__ = [
    "Stop",
    "StopCriterion",
    "AnyOf",
    "AllOf",
    "DualityGap",
    "BoundGap",
    "MaxIter",
    "MaxOracleCalls",
    "TimeLimit",
    "WeightChange",
    "as_criterion",
    "NoPointError",
    "InvalidQueryError",
]


class NoPointError(RuntimeError):
    """A run stopped (a time limit, a callback) before any oracle call finished.

    Raised by :func:`mklopt.solve` and the estimators' ``fit`` when the stop
    came during the first oracle call (or while a ``fit`` built its
    kernels): no point was certified, so there is nothing to return. Raise
    the time limit. Ctrl-C at that stage raises ``KeyboardInterrupt``
    instead.
    """


class InvalidQueryError(ValueError):
    """A method asked for a query that is not finite or not in its feasible set.

    :func:`mklopt.solve` never passes such a query to the oracle. When the
    run has a certified point already, it ends there and returns it (reason
    ``"invalid_query"``, as an interrupted run does) with a
    :class:`~mklopt.oracles.ConvergenceWarning` carrying this message; when
    the bad query is the first one, there is nothing to return and this is
    raised. ``method`` names the method, ``query`` is the offending point
    and ``n_oracle_calls`` the calls made before it.
    """

    def __init__(self, message, method=None, query=None, n_oracle_calls=0):
        super().__init__(message)
        self.method = method
        self.query = query
        self.n_oracle_calls = n_oracle_calls


class Stop(NamedTuple):
    """Why a run stopped: ``reason`` and whether that is ``converged``."""

    reason: str
    converged: bool


class StopCriterion:
    """Base class: ``__call__(progress) -> Stop | None`` plus ``reset()``."""

    def __call__(self, progress):  # pragma: no cover - abstract
        raise NotImplementedError

    def reset(self):
        """Forget any state kept from an earlier run."""

    def target_gap(self, upper):
        """The relative gap this criterion waits for (``inf``: none).

        The driver sets the inner solver's tolerance from it, so that a gap
        that stops the run is computed precisely enough to be believed
        (see :func:`mklopt.solve`). ``upper`` is the best value so far, for
        criteria on absolute gaps.
        """
        return math.inf

    def __or__(self, other):
        return AnyOf(self, as_criterion(other))

    def __ror__(self, other):
        return AnyOf(as_criterion(other), self)

    def __and__(self, other):
        return AllOf(self, as_criterion(other))

    def __rand__(self, other):
        return AllOf(as_criterion(other), self)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"

    def _params(self):
        return {}


class _Callable(StopCriterion):
    """A user's ``fn(progress)`` seen as a criterion.

    ``fn`` returns a truth value (true stops the run, not converged) or a
    :class:`Stop` (its own reason, and ``converged=True`` to report
    convergence). If ``fn`` has a ``reset()`` method (a counter, say) it is
    called before every solve, so a criterion reused across solves starts
    afresh.
    """

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, progress):
        out = self.fn(progress)
        if isinstance(out, Stop):
            return out
        if out:
            return Stop(getattr(self.fn, "__name__", "user criterion"), False)
        return None

    def reset(self):
        reset = getattr(self.fn, "reset", None)
        if callable(reset):
            reset()

    def __repr__(self):
        return f"as_criterion({getattr(self.fn, '__name__', self.fn)!r})"


def as_criterion(obj):
    """Return ``obj`` as a :class:`StopCriterion` (wrapping plain callables)."""
    if isinstance(obj, StopCriterion):
        return obj
    if callable(obj):
        return _Callable(obj)
    raise TypeError(
        "stop must be a StopCriterion or a callable taking a Progress row, "
        f"got {type(obj).__name__}"
    )


class AnyOf(StopCriterion):
    """Stops when any part stops; the first part that fires gives the reason."""

    def __init__(self, *parts):
        flat = []
        for p in parts:
            p = as_criterion(p)
            flat.extend(p.parts if isinstance(p, AnyOf) else [p])
        self.parts = tuple(flat)

    def __call__(self, progress):
        for p in self.parts:
            s = p(progress)
            if s is not None:
                return s
        return None

    def reset(self):
        for p in self.parts:
            p.reset()

    def target_gap(self, upper):
        return min((p.target_gap(upper) for p in self.parts), default=math.inf)

    def __repr__(self):
        return f"AnyOf({', '.join(map(repr, self.parts))})"


class AllOf(StopCriterion):
    """Stops when every part stops at the same row; converged if any part is."""

    def __init__(self, *parts):
        flat = []
        for p in parts:
            p = as_criterion(p)
            flat.extend(p.parts if isinstance(p, AllOf) else [p])
        self.parts = tuple(flat)

    def __call__(self, progress):
        # Evaluate every part so that stateful parts see every row.
        stops = [p(progress) for p in self.parts]
        if any(s is None for s in stops):
            return None
        return Stop(" & ".join(s.reason for s in stops), any(s.converged for s in stops))

    def reset(self):
        for p in self.parts:
            p.reset()

    def target_gap(self, upper):
        return min((p.target_gap(upper) for p in self.parts), default=math.inf)

    def __repr__(self):
        return f"AllOf({', '.join(map(repr, self.parts))})"


class DualityGap(StopCriterion):
    """Stop when the certified duality gap of the best point is below ``tol``.

    Parameters
    ----------
    tol : float
        Threshold, > 0.
    relative : bool, default=True
        Compare ``gap / |J(w)|`` (the papers' rule: relative gap < 0.01)
        instead of the absolute gap.

    Notes
    -----
    The gap ``J(w) - D(alpha)`` (see docs/formulations.md) is computed by the
    formulation's :class:`~mklopt.domains.Domain`. Its accuracy is limited by
    the inner solve: the oracle's KKT tolerance should be well below ``tol``
    times the objective scale (see the user guide, "Tolerances").
    """

    def __init__(self, tol=1e-2, relative=True):
        self.tol = check_real(tol, "tol", low=0.0, strict_low=True)
        if not isinstance(relative, bool):
            raise TypeError(f"relative must be a bool, got {relative!r}")
        self.relative = relative

    def __call__(self, progress):
        g = progress.rel_gap if self.relative else progress.gap
        if g is not None and not math.isnan(g) and g <= self.tol:
            return Stop("duality_gap", True)
        return None

    def target_gap(self, upper):
        return _relative(self.tol, self.relative, upper)

    def _params(self):
        return {"tol": self.tol, "relative": self.relative}


class BoundGap(StopCriterion):
    """Stop when ``upper - lower`` of a bundle method is below ``tol``.

    Parameters
    ----------
    tol : float
        Threshold, > 0.
    relative : bool, default=True
        Divide the bound gap by ``|upper|``.
    """

    def __init__(self, tol=1e-2, relative=True):
        self.tol = check_real(tol, "tol", low=0.0, strict_low=True)
        self.relative = bool(relative)

    def __call__(self, progress):
        lo, up = progress.lower, progress.upper
        if not (np.isfinite(lo) and np.isfinite(up)):
            return None
        g = up - lo
        if self.relative:
            g = relative_gap(g, up)
        if g <= self.tol:
            return Stop("bound_gap", True)
        return None

    def target_gap(self, upper):
        return _relative(self.tol, self.relative, upper)

    def _params(self):
        return {"tol": self.tol, "relative": self.relative}


def _relative(tol, relative, upper):
    return relative_target(tol, relative, upper)


class MaxIter(StopCriterion):
    """Stop after ``n`` outer iterations (as the method counts them)."""

    def __init__(self, n=500):
        self.n = check_int(n, "n", low=1)

    def __call__(self, progress):
        return Stop("max_iter", False) if progress.iteration >= self.n else None

    def _params(self):
        return {"n": self.n}


class MaxOracleCalls(StopCriterion):
    """Stop after ``n`` oracle calls."""

    def __init__(self, n):
        self.n = check_int(n, "n", low=1)

    def __call__(self, progress):
        return Stop("max_oracle_calls", False) if progress.n_oracle_calls >= self.n else None

    def _params(self):
        return {"n": self.n}


class TimeLimit(StopCriterion):
    """Stop once ``seconds`` of wall-clock time have elapsed.

    Unlike the other criteria, which are checked between oracle calls, a
    time limit also stops a call in progress: :func:`mklopt.solve` sets a
    deadline that the jitted loops look at between blocks of rows, so the
    run returns within a block of work of it (the best point of the calls
    that finished; see :class:`NoPointError` when none did). This holds
    when the limit is the criterion itself or part of an ``|`` chain.
    """

    def __init__(self, seconds):
        self.seconds = check_real(seconds, "seconds", low=0.0, strict_low=True)

    def __call__(self, progress):
        return Stop("time_limit", False) if progress.elapsed >= self.seconds else None

    def _params(self):
        return {"seconds": self.seconds}


class WeightChange(StopCriterion):
    """Stop when the evaluated weights move less than ``tol`` (max norm)
    between consecutive oracle calls.

    Parameters
    ----------
    tol : float
        Threshold, > 0.
    """

    def __init__(self, tol=1e-6):
        self.tol = check_real(tol, "tol", low=0.0, strict_low=True)
        self._last = None

    def reset(self):
        self._last = None

    def __call__(self, progress):
        w = np.asarray(progress.weights)
        last, self._last = self._last, w.copy()
        if last is None or last.shape != w.shape:
            return None
        if float(np.max(np.abs(w - last))) <= self.tol:
            return Stop("weight_change", True)
        return None

    def _params(self):
        return {"tol": self.tol}
