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
    method : MethodBase
        An outer method (ask/tell); it is (re)started here.
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
    Long runs report progress on the ``"mklopt"`` logger at INFO level (at
    most one line a second); per-call detail goes to ``callback``.

    The driver alone warm-starts the oracle (with the previous answer's
    ``alpha``), times the run and counts oracle calls. Every row's ``gap`` is
    the duality gap of the best point so far, computed by the method's
    :class:`~mklopt.domains.Domain`.
    """
    if stop is None:
        stop = DualityGap(1e-2) | MaxIter(500)
    stop = as_criterion(stop)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable, taking one Progress row")
    stop.reset()
    method.start(oracle)
    history = []
    calls0 = getattr(oracle, "n_calls", 0)
    value_only = bool(getattr(oracle, "supports_value_only", False))
    subsets = bool(getattr(oracle, "supports_kernel_subsets", False)) and hasattr(
        method, "query_kernels"
    )
    warm = warm_start
    verdict = None
    t0 = time.perf_counter()
    # Progress for long runs: an INFO line at most once a second on the
    # "mklopt" logger (enable with logging.basicConfig(level=logging.INFO)).
    report = log.isEnabledFor(logging.INFO)
    next_report = 1.0
    gap_target = _relative_gap_target(stop)
    try:
        while verdict is None:
            query = method.ask()
            kwargs = {}
            if value_only and not method.query_needs_q():
                kwargs["need_q"] = False
            elif subsets:
                # A method working on part of a large bank (a kernel working
                # set) asks for q on those kernels only.
                kernels = method.query_kernels()
                if kernels is not None:
                    kwargs["kernels"] = kernels
            answer = oracle(query, warm_start=warm, **kwargs)
            method.tell(query, answer)
            warm = getattr(answer, "alpha", None)
            lower, upper = method.bounds()
            best = method.best
            gap = float(method.best_gap)
            value_best = best.value if best is not None else math.nan
            row = Progress(
                iteration=method.n_iter,
                elapsed=time.perf_counter() - t0,
                n_oracle_calls=getattr(oracle, "n_calls", len(history) + 1) - calls0,
                value=float(answer.value),
                lower=float(lower),
                upper=float(upper),
                gap=gap,
                rel_gap=gap / abs(value_best) if value_best else math.nan,
                weights=np.array(method.query_weights(query), dtype=np.float64),
            )
            history.append(row)
            if report and row.elapsed >= next_report:
                next_report = row.elapsed + 1.0
                log.info("%s", _progress_line(method, oracle, row, history, gap_target))
            if callback is not None:
                try:
                    callback(row)
                except StopIteration:
                    verdict = Stop("callback", False)
                    break
            verdict = method.stop or stop(row)
    except KeyboardInterrupt:
        verdict = Stop("interrupted", False)
        log.warning("run interrupted; returning the best point found so far")
    elapsed = time.perf_counter() - t0
    return _result(method, oracle, history, verdict, elapsed, calls0)


def _relative_gap_target(stop):
    """The relative-gap tolerance a criterion stops at, if it has one (else None)."""
    if isinstance(stop, DualityGap) and stop.relative:
        return stop.tol
    targets = [_relative_gap_target(p) for p in getattr(stop, "parts", ())]
    targets = [t for t in targets if t is not None]
    return max(targets) if targets else None


def _eta(history, target):
    """Seconds until the relative gap reaches ``target`` at its recent rate, or None.

    Fits ``log(rel_gap)`` against time over the second half of the run: the
    rate the gap has been closing lately, not a promise.
    """
    pts = [(r.elapsed, r.rel_gap) for r in history if r.rel_gap > 0 and math.isfinite(r.rel_gap)]
    pts = pts[len(pts) // 2 :]
    if target is None or len(pts) < 3:
        return None
    t = np.array([p[0] for p in pts])
    g = np.log(np.array([p[1] for p in pts]))
    if np.ptp(t) <= 0:
        return None
    slope = np.polyfit(t, g, 1)[0]
    if not slope < 0:
        return None
    return max(0.0, (math.log(target) - g[-1]) / slope)


def _progress_line(method, oracle, row, history, target):
    """One INFO line: calls, seconds per call, rows per second, J, gap and an ETA."""
    parts = [
        f"{type(method).__name__}: {row.n_oracle_calls} oracle calls "
        f"({row.elapsed / max(row.n_oracle_calls, 1):.3g} s each)",
        f"iteration {row.iteration}",
        f"J={row.upper:.6g}",
        f"relative gap {row.rel_gap:.3g}",
    ]
    stats = getattr(oracle, "last_stats", None)
    rate = getattr(stats, "rows_per_second", math.nan)
    if rate is not None and math.isfinite(rate) and stats.n_blocks:
        parts.insert(1, f"{rate:,.0f} kernel rows/s")
    eta = _eta(history, target)
    if eta is not None:
        parts.append(f"about {eta:.0f} s to {target:g} at the recent rate")
    return ", ".join(parts)


def _result(method, oracle, history, verdict, elapsed, calls0):
    best = method.best
    if best is None:
        raise RuntimeError(
            f"the run stopped ({verdict.reason}) before any point was evaluated; nothing to return"
        )
    lower = method.bounds()[0]
    gap = float(method.best_gap)
    return Result(
        weights=np.array(method.best_w, dtype=np.float64),
        alpha=getattr(best, "alpha", None),
        bias=float(getattr(best, "bias", math.nan)),
        value=float(best.value),
        gap=gap,
        rel_gap=gap / abs(best.value) if best.value else math.nan,
        lower=float(max(lower, method.best_dual)),
        n_iter=method.n_iter,
        n_oracle_calls=getattr(oracle, "n_calls", len(history)) - calls0,
        converged=bool(verdict.converged),
        reason=verdict.reason,
        history=tuple(history),
        elapsed=elapsed,
        extra=method.extra(),
    )
