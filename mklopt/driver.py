"""The generic driver: any outer method against any oracle (DESIGN section 5)."""

from __future__ import annotations

import logging
import math
import time

import numpy as np

from ._types import Progress, Result
from .stopping import DualityGap, MaxIter, Stop, as_criterion

__all__ = ["solve"]

log = logging.getLogger("mklopt")


def solve(oracle, method, stop=None, callback=None, warm_start=None):
    """Run an outer ``method`` against an ``oracle`` until ``stop`` holds.

    Parameters
    ----------
    oracle : callable
        ``oracle(w, warm_start=alpha) -> answer``, e.g.
        :class:`mklopt.oracles.SVMDual`.
    method : OuterMethod
        An outer method (ask/tell; see :class:`mklopt._types.OuterMethod`);
        it is (re)started here.
    stop : StopCriterion or callable, default=DualityGap(1e-2) | MaxIter(500)
        Checked after every oracle call; see :mod:`mklopt.stopping`.
    callback : callable, optional
        ``callback(progress)`` after every oracle call; raising
        ``StopIteration`` ends the run with reason ``"callback"``.
    warm_start : ndarray, optional
        Dual variables to warm-start the first oracle call.

    Returns
    -------
    Result
        The best point found, how the run ended and one history row per
        oracle call. A run ended by ``KeyboardInterrupt`` or a time limit still
        returns the best point found so far (``converged=False``).

    Notes
    -----
    The driver reads the method only through ``start``, ``ask``, ``tell``,
    ``report`` and ``extra``. After every oracle call it records a
    :class:`~mklopt.Progress` row from the method's
    :class:`~mklopt._types.MethodReport` (the best point's gap and the
    lower bound are computed there, by one rule), calls ``callback`` and
    checks ``stop`` and the method's own ``report().stop``.

    *Warm starts.* Each call is warm-started with the previous answer's
    ``alpha``, unless the method's report names another start (an exact
    step hands over its restricted solution).

    Long runs report progress on the ``"mklopt"`` logger at INFO level (at
    most one line a second); per-call detail goes to ``callback``.
    """
    if stop is None:
        stop = DualityGap(1e-2) | MaxIter(500)
    stop = as_criterion(stop)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable, taking one Progress row")
    stop.reset()
    method.start(oracle)
    rep = method.report()
    history = []
    calls0 = getattr(oracle, "n_calls", 0)
    value_only = bool(getattr(oracle, "supports_value_only", False))
    warm = warm_start
    verdict = rep.stop
    t0 = time.perf_counter()
    # Progress for long runs: an INFO line at most once a second on the
    # "mklopt" logger (enable with logging.basicConfig(level=logging.INFO)).
    log_progress = log.isEnabledFor(logging.INFO)
    next_report = 1.0
    try:
        while verdict is None:
            query = method.ask()
            if rep.warm_start is not None:
                warm = rep.warm_start
            if value_only and rep.need == "value":
                answer = oracle(query, warm_start=warm, need_q=False)
            else:
                answer = oracle(query, warm_start=warm)
            method.tell(query, answer)
            warm = getattr(answer, "alpha", None)
            rep = method.report()
            row = Progress(
                iteration=rep.n_iter,
                elapsed=time.perf_counter() - t0,
                n_oracle_calls=getattr(oracle, "n_calls", len(history) + 1) - calls0,
                value=float(answer.value),
                lower=rep.lower,
                upper=rep.upper,
                gap=rep.gap,
                rel_gap=rep.rel_gap,
                weights=np.array(query if rep.evaluated is None else rep.evaluated,
                                 dtype=np.float64),
            )
            history.append(row)
            if log_progress and row.elapsed >= next_report:
                next_report = row.elapsed + 1.0
                log.info(
                    "%s: %d oracle calls, iteration %d, J=%.6g, relative gap %.3g",
                    type(method).__name__, row.n_oracle_calls, row.iteration, row.upper,
                    row.rel_gap,
                )
            if callback is not None:
                try:
                    callback(row)
                except StopIteration:
                    verdict = Stop("callback", False)
                    break
            verdict = rep.stop or stop(row)
    except KeyboardInterrupt:
        verdict = Stop("interrupted", False)
        log.warning("run interrupted; returning the best point found so far")
    elapsed = time.perf_counter() - t0
    return _result(method, method.report(), oracle, history, verdict, elapsed, calls0)


def _result(method, rep, oracle, history, verdict, elapsed, calls0):
    if rep.best is None:
        raise RuntimeError(
            f"the run stopped ({verdict.reason}) before any point was evaluated; nothing to return"
        )
    return Result(
        weights=np.array(rep.weights, dtype=np.float64),
        alpha=getattr(rep.best, "alpha", None),
        bias=float(getattr(rep.best, "bias", math.nan)),
        value=rep.upper,
        gap=rep.gap,
        rel_gap=rep.rel_gap,
        lower=rep.lower,
        n_iter=rep.n_iter,
        n_oracle_calls=getattr(oracle, "n_calls", len(history)) - calls0,
        converged=bool(verdict.converged),
        reason=verdict.reason,
        history=tuple(history),
        elapsed=elapsed,
        extra=method.extra(),
    )
