"""The generic driver: any outer method against any oracle."""

from __future__ import annotations

import functools
import inspect
import logging
import math
import time
import warnings

import numpy as np

from . import _interrupt
from ._policy import inner_tol_for, relative_gap
from ._types import Handover, OracleAnswer, OracleRequest, Progress, Result
from .domains import retract_onto
from .oracles._warnings import ConvergenceWarning
from .stopping import (
    AnyOf,
    DualityGap,
    InvalidQueryError,
    MaxIter,
    NoPointError,
    Stop,
    TimeLimit,
    as_criterion,
)

__all__ = ["solve"]

log = logging.getLogger("mklopt")


def solve(oracle, method, stop=None, callback=None, warm_start=None, adapt_tol=True,
          initial=None):
    """Run an outer ``method`` against an ``oracle`` until ``stop`` holds.

    Parameters
    ----------
    oracle : callable
        ``oracle(w, warm_start=alpha) -> answer``, e.g.
        :class:`mklopt.oracles.SVMDual`.
    method : OuterMethod or str
        An outer method (ask/tell; see :class:`mklopt._types.OuterMethod`),
        (re)started here, or the registered name of one (``"level"``,
        ``"cutting_plane"``, ...; see :func:`mklopt.methods.method_names`),
        built with its default parameters. A class is refused with a
        ``TypeError`` saying to pass an instance: its parameters would be
        guessed.
    stop : StopCriterion or callable, default=DualityGap(1e-2) | MaxIter(500)
        Checked after every oracle call; see :mod:`mklopt.stopping`.
    callback : callable, optional
        ``callback(progress)`` after every oracle call; raising
        ``StopIteration`` (or returning ``True`` or ``StopIteration``) ends
        the run with reason ``"callback"``.
    warm_start : ndarray, optional
        Dual variables to warm-start the first oracle call.
    adapt_tol : bool, default=True
        Let the oracle's tolerance follow the gap (see Notes). Only oracles
        with a ``tol`` attribute are affected, and it is restored at the end.
    initial : Result, Handover or array-like of shape (n_kernels,), optional
        Where to start. A :class:`~mklopt._types.Handover` (weights, their
        answer, cuts) starts the method from that point as a
        :class:`~mklopt.methods.Chain` stage does, warm-starting the first
        call with its ``alpha``: no call is made at the hand-over, and a
        hand-over that names its ``domain`` and whose own gap meets ``stop``
        ends the run there without starting the method (a C path hands
        each point to the next ``C`` this way). A :class:`~mklopt.Result` resumes an earlier run
        (see Notes): the method starts from its best point (weights,
        ``alpha``, ``q``, value and lower bound) without calling the oracle
        there, and the first call is warm-started with its ``alpha`` unless
        ``warm_start`` is given. An array of kernel weights is evaluated
        first instead of the method's own starting point, for example the
        optimum of a similar problem: it is projected onto the method's
        feasible set, the first oracle call is made there, and the method
        resumes from that answer as from a chain's hand-over. Either way the
        certificate is unchanged: only the path to it differs.

    Returns
    -------
    Result
        The best point found, how the run ended and one history row per
        oracle call. A run ended by Ctrl-C (reason ``"interrupted"``), a
        time limit (``"time_limit"``) or the callback still returns the best
        point found so far (``converged=False``), even when the stop came
        in the middle of an oracle call. So does a run whose method asks for
        a query that is not finite or not in its feasible set (reason
        ``"invalid_query"``, with a
        :class:`~mklopt.oracles.ConvergenceWarning` naming the method and
        the query): the query is never passed to the oracle.

    Raises
    ------
    KeyboardInterrupt
        Ctrl-C before the first oracle call finished: there is no point to
        return.
    NoPointError
        A time limit (or the callback) stopped the run inside its first
        oracle call: there is no certified point to return. A
        ``RuntimeError``.
    InvalidQueryError
        The method's first query is not finite or not in its feasible set
        (a ``ValueError`` naming the method and the query): there is no
        point to return.
    TypeError
        ``method`` is a class, or not an outer method.

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

    *Inner tolerance follows the outer one.* A duality gap ``J(w) - D(alpha)``
    is only as accurate as the inner solve that gave ``J(w)``: with SMO at
    tolerance ``tol`` the value errs by up to about ``2 tol`` relatively
    (:class:`~mklopt.oracles.SVMDual`, Notes). With ``adapt_tol=True`` the
    driver therefore sets, before every call,

        ``oracle.tol = min(tol_0, max(1e-9, 0.01 * max(target, rel_gap)))``

    where ``tol_0`` is the oracle's own tolerance, ``rel_gap`` the current
    best point's relative gap and ``target`` the relative gap the stopping
    criterion waits for (:meth:`~mklopt.stopping.StopCriterion.target_gap`:
    the smallest ``DualityGap`` / ``BoundGap`` tolerance in it). The inner
    error thus stays near 2 % of the gap being resolved, and never above
    2 % of the target once the gap reaches it: a gap that stops the run can
    be believed. A call the method marks ``need="exact"`` (a certificate)
    uses the target alone, since its gap may drop far below the current one.
    Cheap early calls and precise late ones: nobody sets the inner
    tolerance by hand to reach 1e-6.

    *The converged point is checked.* The first calls run at the oracle's
    own tolerance, and an early answer can show a small gap that is only
    as accurate as that tolerance (at a vertex of the simplex the gap of a
    single answer is zero whatever the inner error). When the run is about
    to stop converged on a best point whose answer was computed at a
    looser tolerance than the target allows, the driver evaluates that
    point again at ``max(1e-9, 0.01 * target)`` (one more oracle call,
    warm-started from its ``alpha``) and gives the method the new answer
    (:meth:`~mklopt.methods.MethodBase.refine_best`); the stopping rule is
    then checked again, and the run goes on if the gap no longer meets it.

    *Convergence is checked.* ``Result.converged`` is true only if the
    stopping reason is a convergence (a gap, a weight change, or a method's
    own test) *and*, when ``stop`` contains a
    :class:`~mklopt.stopping.DualityGap` and the method has a gap, the best
    point's gap meets it. A
    method that claims convergence with the gap still above the target is
    reported ``converged=False`` with the reason ``"<its reason>; gap target
    unmet"``, and a :class:`~mklopt.oracles.ConvergenceWarning` (a
    ``UserWarning``) is issued.

    *Resuming.* With ``initial=result`` the method is started through the
    hand-over it uses in a :class:`~mklopt.methods.Chain` (``start(oracle,
    handover=...)``): the result's best point is rebuilt as an answer from
    ``weights``, ``alpha``, ``bias``, ``value`` and ``q`` (its linear term
    is ``value + w'q / 2``), and it stays the best point until a better one
    is found. Before the first call the stopping criterion is checked once on
    that point's row (``n_oracle_calls=0``), so resuming a result that
    already meets ``stop`` costs no oracle call. The new result counts this
    run's calls and iterations only. Cutting-plane models restart from the
    one cut of that answer (a result keeps no cuts), so a resumed run may
    need a few more calls than an uninterrupted one. The method must accept
    a hand-over (every :class:`~mklopt.methods.MethodBase` on a dual oracle
    does); boosting, whose state is its ensemble, cannot resume.

    *Stopping inside an oracle call.* A :class:`~mklopt.stopping.TimeLimit`
    in ``stop`` (alone or in an ``|`` chain) is also a deadline that
    interrupts a call in progress, and so is Ctrl-C (SIGINT, while ``solve``
    runs in the main thread; the previous handler is restored on return).
    The jitted loops (kernel rows, combine, ``q``, SMO) look at a stop flag
    between blocks of rows and return early; the unfinished call is
    discarded, and the run ends with the best point of the calls that
    finished, so a time limit holds to within a block of work (see the
    user guide's page on long runs).

    Long runs report progress on the ``"mklopt"`` logger at INFO level (at
    most one line a second); per-call detail goes to ``callback``.
    """
    method = _as_method(method)
    if stop is None:
        stop = DualityGap(1e-2) | MaxIter(500)
    stop = as_criterion(stop)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable, taking one Progress row")
    stop.reset()
    seconds = _time_limit(stop)
    with _interrupt.Run(None if seconds is None else time.time() + seconds) as run:
        return _run(oracle, method, stop, callback, warm_start, adapt_tol, run, initial)


def _run(oracle, method, stop, callback, warm_start, adapt_tol, run, initial=None):
    """The loop of :func:`solve`, inside its stoppable :class:`~mklopt._interrupt.Run`."""
    first = None
    if initial is None:
        method.start(oracle)
    elif isinstance(initial, Result):
        method.start(oracle, handover=_handover(initial, oracle, method))
        if warm_start is None:
            warm_start = initial.alpha
    elif isinstance(initial, Handover):
        # A hand-over certified by its own answer needs no method at all.
        done = _certified_handover(initial, stop)
        if done is not None:
            return done
        method.start(oracle, handover=initial)
        if warm_start is None:
            warm_start = getattr(initial.answer, "alpha", None)
    else:
        method.start(oracle)
        first = _initial_query(method, oracle, initial)
    rep = method.report()
    history = []
    calls0 = getattr(oracle, "n_calls", 0)
    value_only = bool(getattr(oracle, "supports_value_only", False))
    subsets = bool(getattr(oracle, "supports_kernel_subsets", False))
    inner = _InnerTolerance(oracle, stop) if adapt_tol else None
    warm = warm_start
    verdict = rep.stop
    if verdict is None and initial is not None and rep.best is not None:
        # The resumed point may already meet the criterion: no call needed.
        verdict = stop(_row(rep, 0.0, 0, float(rep.upper), rep.weights))
    t0 = time.perf_counter()
    # Progress for long runs: an INFO line at most once a second on the
    # "mklopt" logger (enable with logging.basicConfig(level=logging.INFO)).
    log_progress = log.isEnabledFor(logging.INFO)
    next_report = 1.0
    gap_target = _relative_gap_target(stop)
    # The certificate's value is only as accurate as the inner solve that
    # gave it: the inner tolerance each best answer was computed at, and a
    # best point to evaluate again at the target's tolerance (see Notes).
    best_obj = best_tol = recheck = None
    rechecked = set()
    try:
        while verdict is None:
            request = _request_of(rep)
            if recheck is not None:
                query, warm = recheck[0], getattr(recheck[1], "alpha", None)
            else:
                query = method.ask() if first is None else first
                if request.warm_start is not None:
                    warm = request.warm_start
            bad = _invalid_query(method, query)
            if bad is not None:
                verdict = _refuse_query(method, query, bad, rep, len(history))
                break
            if inner is not None:
                inner.set(rep, exact=recheck is not None or request.need == "exact")
            kwargs = {}
            if first is not None or recheck is not None:
                pass  # a hand-over or a re-check needs the whole answer (q on every kernel)
            elif value_only and request.need == "value":
                kwargs["need_q"] = False
            elif subsets and request.kernels is not None:
                # A method working on part of a large bank (a kernel working
                # set) asks for q on those kernels only.
                kwargs["kernels"] = request.kernels
            answer = oracle(query, warm_start=warm, **kwargs)
            used_tol = getattr(oracle, "tol", None)
            if recheck is not None:
                # The best point again, at the target's tolerance: its answer
                # replaces the looser one (the bound can only move up).
                method.refine_best(query, answer)
                rechecked.update((id(recheck[1]), id(answer)))
                recheck = None
            elif first is None:
                method.tell(query, answer)
            else:
                # The given start is evaluated: the method resumes from it as
                # from a chain's hand-over (it becomes the best point).
                method.start(oracle, Handover(weights=query, answer=answer))
                first = None
            warm = getattr(answer, "alpha", None)
            rep = method.report()
            if rep.best is answer:
                best_obj, best_tol = answer, used_tol
            elif rep.best is not best_obj:
                best_obj, best_tol = rep.best, None  # not from a call seen here
            row = _row(rep, time.perf_counter() - t0,
                       getattr(oracle, "n_calls", len(history) + 1) - calls0,
                       float(answer.value), query if rep.evaluated is None else rep.evaluated)
            history.append(row)
            if log_progress and row.elapsed >= next_report:
                next_report = row.elapsed + 1.0
                log.info("%s", _progress_line(method, oracle, row, history, gap_target))
            if callback is not None:
                try:
                    said = callback(row)
                except StopIteration:
                    said = StopIteration
                if said is True or said is StopIteration or isinstance(said, StopIteration):
                    run.set(_interrupt.CALLBACK)
                    verdict = Stop("callback", False)
                    break
            # The user's criterion names the reason when both hold; a flag
            # set between two calls (Ctrl-C in the method's step) ends it too.
            verdict = stop(row) or rep.stop
            if verdict is None and run.reason is not None:
                verdict = Stop(run.reason, False)
            if (verdict is not None and verdict.converged and inner is not None
                    and inner.loose(best_tol, rep) and id(rep.best) not in rechecked
                    and callable(getattr(method, "refine_best", None))):
                # Converged on a value an inner solve looser than the target
                # allows gave: evaluate the best point again before believing it.
                recheck = (np.array(rep.weights, dtype=np.float64), rep.best)
                verdict = None
    except _interrupt.Stopped as exc:
        # Inside an oracle call: the call is dropped, the best point stands.
        verdict = Stop(exc.reason, False)
        if exc.reason == "interrupted":
            log.warning("run interrupted; returning the best point found so far")
    except KeyboardInterrupt:
        verdict = Stop("interrupted", False)
        log.warning("run interrupted; returning the best point found so far")
    finally:
        if inner is not None:
            inner.restore()
    elapsed = time.perf_counter() - t0
    verdict = _check_gap_target(stop, method.report(), verdict)
    return _result(method, method.report(), oracle, history, verdict, elapsed, calls0)


def _as_method(method):
    """The outer method ``solve`` runs: an instance, or one built from a registered name."""
    if isinstance(method, str):
        from .methods import get_method

        return get_method(method)()  # unknown names: a ValueError listing the known ones
    if isinstance(method, type):
        raise TypeError(
            f"method must be an outer method instance or a registered name, got the class "
            f"{method.__name__}; pass {method.__name__}() (or {method.__name__}(...) with "
            "its parameters)"
        )
    missing = [a for a in ("start", "ask", "tell", "report")
               if not callable(getattr(method, a, None))]
    if missing:
        raise TypeError(
            f"method must be an outer method (start, ask, tell, report) or a registered name; "
            f"{type(method).__name__} has no {', '.join(missing)}"
        )
    return method


#: How far off its feasible set a query may be (the rounding of a projection
#: or an LP solution) before the driver refuses it.
QUERY_TOL = 1e-6


def _invalid_query(method, query):
    """Why ``query`` must not reach the oracle (``"not finite"``, ...), or None.

    Only weight vectors are checked (``query_is_array``; boosting's queries
    are records): every entry finite, and inside the method's ``domain`` up
    to :data:`QUERY_TOL` when the domain has a membership test.
    """
    if not getattr(method, "query_is_array", True):
        return None
    try:
        w = np.asarray(query, dtype=np.float64)
    except (TypeError, ValueError):
        return "not an array of kernel weights"
    if not np.all(np.isfinite(w)):
        return "not finite (NaN or inf)"
    domain = getattr(method, "domain", None)
    if domain is None:
        return None
    try:
        inside = domain.contains(w, tol=QUERY_TOL)
    except NotImplementedError:  # a user's set without a membership test
        return None
    except (TypeError, ValueError):  # a wrong shape
        inside = False
    return None if inside else f"not in its feasible set {domain!r}"


def _refuse_query(method, query, why, rep, n_calls):
    """End the run on a bad query: the verdict with the best point, or raise without one."""
    w = np.asarray(query, dtype=np.float64) if getattr(method, "query_is_array", True) else query
    shown = np.array2string(w, precision=4, threshold=12) if isinstance(w, np.ndarray) else repr(w)
    name = type(method).__name__
    message = f"{name} asked for the query w={shown} after {n_calls} oracle calls: it is {why}"
    if rep.best is None:
        raise InvalidQueryError(
            f"{message}. No point was evaluated, so there is nothing to return; the method "
            "is at fault (check its first query)", method=name, query=w, n_oracle_calls=n_calls)
    warnings.warn(
        f"{message}. It was not passed to the oracle; the run ends with the best point found "
        f"so far (value {float(rep.upper):.6g}, gap {float(rep.gap):.3g}), reason "
        "'invalid_query'",
        ConvergenceWarning,
        stacklevel=4,
    )
    return Stop("invalid_query", False)


def certifies(stop, value, lower, weights):
    """``(verdict, row)`` when ``stop`` converges on a point with ``lower <= J* <= value``.

    For a point whose bounds are known without an oracle call (a resumed or
    handed-over point, a C path's point carried to the next C): the row the
    driver would record there (no call, iteration 0) is checked by a fresh
    copy of the criterion (``stop`` is reset). Returns the
    :class:`~mklopt.stopping.Stop` with that row, or None when the verdict
    is not a convergence.
    """
    gap = float(value) - float(lower)
    row = Progress(iteration=0, elapsed=0.0, n_oracle_calls=0, value=float(value),
                   lower=float(lower), upper=float(value), gap=gap,
                   rel_gap=relative_gap(gap, value),
                   weights=np.asarray(weights, dtype=np.float64))
    criterion = as_criterion(stop)
    criterion.reset()
    verdict = criterion(row)
    return (verdict, row) if verdict is not None and verdict.converged else None


def _certified_handover(handover, stop):
    """The one-point result of ``handover`` when its own gap meets ``stop``, else None.

    Only for a hand-over that names its feasible set (``domain``): the
    answer's duality gap on it, ``domain.gap(weights, answer)``, is a
    certificate that needs no method.
    """
    domain, answer = handover.domain, handover.answer
    if domain is None or not getattr(answer, "converged", True):
        return None
    upper = float(answer.value)
    gap = max(0.0, float(domain.gap(handover.weights, answer)))
    found = certifies(stop, upper, upper - gap, handover.weights)
    if found is None:
        return None
    verdict, row = found
    return Result(
        weights=np.array(handover.weights, dtype=np.float64), alpha=answer.alpha,
        bias=float(answer.bias), value=upper, gap=row.gap, rel_gap=row.rel_gap,
        lower=row.lower, n_iter=0, n_oracle_calls=0, converged=True, reason=verdict.reason,
        history=(row,), elapsed=0.0, extra={},
        q=None if answer.q is None else np.array(answer.q, dtype=np.float64),
    )


def _request_of(rep):
    """The :class:`~mklopt._types.OracleRequest` of a method's report.

    A :class:`~mklopt.MethodReport` carries one; a look-alike record of a
    method written from the protocol alone may carry only the older
    ``need`` / ``warm_start`` / ``kernels`` fields, or none of them.
    """
    request = getattr(rep, "request", None)
    if isinstance(request, OracleRequest):
        return request
    return OracleRequest(need=getattr(rep, "need", None) or "full",
                         warm_start=getattr(rep, "warm_start", None),
                         kernels=getattr(rep, "kernels", None))


def _row(rep, elapsed, n_calls, value, weights):
    """A history row from a method report (the resumed point's, before any call)."""
    return Progress(
        iteration=rep.n_iter,
        elapsed=elapsed,
        n_oracle_calls=n_calls,
        value=value,
        lower=rep.lower,
        upper=rep.upper,
        gap=rep.gap,
        rel_gap=rep.rel_gap,
        weights=np.array(weights, dtype=np.float64),
    )


def _handover(result, oracle, method):
    """The :class:`~mklopt._types.Handover` that resumes ``method`` from ``result``."""
    if not isinstance(result, Result):
        raise TypeError(f"initial must be a Result returned by solve, got {type(result).__name__}")
    if getattr(method, "oracle_kind", "dual") != "dual":
        raise ValueError(
            f"initial: {type(method).__name__} cannot resume from a Result (its state is "
            "not a point of kernel weights); run it again without initial"
        )
    if result.q is None or result.alpha is None:
        raise ValueError(
            "initial: this Result has no q or alpha for its best point, so the run cannot "
            "be resumed; pass a Result of solve on a dual oracle"
        )
    w = np.array(result.weights, dtype=np.float64)
    q = np.array(result.q, dtype=np.float64)
    m = getattr(oracle, "n_kernels", w.size)
    if w.shape != (m,) or q.shape != (m,):
        raise ValueError(
            f"initial: the Result has {w.size} kernel weights but the oracle has "
            f"n_kernels={m}; resume with the oracle the result came from"
        )
    if not _takes_handover(method):
        raise TypeError(
            f"initial: {type(method).__name__}.start takes no handover, so it cannot resume; "
            "subclass mklopt.methods.MethodBase (or accept start(oracle, handover=None))"
        )
    value = float(result.value)
    alpha = np.asarray(result.alpha)
    answer = OracleAnswer(
        w=w, value=value, grad=-0.5 * q, q=q, alpha=alpha, bias=float(result.bias),
        support=np.flatnonzero(alpha).astype(np.int64),
        linear_term=value + 0.5 * float(w @ q),
        # an unconverged inner solve left the gap infinite; it stays uncertified
        converged=not (math.isinf(result.gap) and result.gap > 0),
    )
    return Handover(weights=w, answer=answer, lower=float(result.lower))


def _initial_query(method, oracle, initial):
    """The checked first query for ``initial`` weights (None without them)."""
    if initial is None:
        return None
    domain = method.domain
    if (domain is None or not getattr(method, "query_is_array", True)
            or not _takes_handover(method)):
        raise ValueError(
            f"initial: {type(method).__name__} does not query weight vectors on a feasible "
            "set, so it cannot start from given weights; leave initial=None"
        )
    try:
        w = np.asarray(initial, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("initial must be a Result of solve or an array of kernel weights") from None
    m = oracle.n_kernels
    if w.shape != (m,):
        raise ValueError(f"initial must have shape ({m},) (one weight per kernel), got {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("initial weights must be finite (no NaN or inf)")
    w = retract_onto(domain, w)
    try:
        outside = not domain.contains(w, tol=1e-6)
    except NotImplementedError:  # a user's set without a membership test
        outside = False
    if outside:
        # The first answer certifies a gap at this point: it must be feasible.
        raise ValueError(
            f"initial: {type(domain).__name__} maps the given weights to a point outside "
            "itself, so no certified run can start there; leave initial=None"
        )
    w.flags.writeable = False
    return w


def _takes_handover(method):
    """Whether ``method.start`` accepts a hand-over (every MethodBase does)."""
    start = method.start
    func = getattr(start, "__func__", None)
    if func is not None and getattr(start, "__self__", None) is method:
        # A method defined on the class: its signature, read once per function
        # (inspect.signature costs about 20 us, and every run asks).
        return _function_takes_handover(func)
    return _signature_has_handover(start)


@functools.lru_cache(maxsize=256)
def _function_takes_handover(func):
    # ``func`` is unbound: ``handover`` anywhere in its parameters (after self).
    return _signature_has_handover(func)


def _signature_has_handover(func):
    try:
        return "handover" in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _time_limit(stop):
    """Seconds of the tightest :class:`~mklopt.stopping.TimeLimit` that alone stops the run.

    A ``TimeLimit`` at the top of ``stop`` or anywhere in a chain of ``|``
    counts; one inside an ``&`` does not (it stops only with the others).
    """
    if isinstance(stop, TimeLimit):
        return stop.seconds
    if isinstance(stop, AnyOf):
        found = [t for t in (_time_limit(p) for p in stop.parts) if t is not None]
        return min(found) if found else None
    return None


def _duality_gaps(stop):
    """Every :class:`~mklopt.stopping.DualityGap` inside a (combined) criterion."""
    if isinstance(stop, DualityGap):
        return [stop]
    return [d for p in getattr(stop, "parts", ()) for d in _duality_gaps(p)]


def _check_gap_target(stop, rep, verdict):
    """Refuse a claim of convergence that the gap target contradicts.

    A method (or a user's criterion) may say it converged while the best
    point's certified gap is still above every ``DualityGap`` tolerance in
    ``stop``; the run is then reported not converged, with a
    :class:`~mklopt.oracles.ConvergenceWarning`. Without a ``DualityGap`` in
    ``stop``, or without a gap at all (a method with no dual, such as
    boosting), the claim stands.
    """
    targets = _duality_gaps(stop)
    # A method without a dual (boosting: gap nan) has nothing to check against.
    no_gap = math.isnan(rep.gap) and math.isnan(rep.rel_gap)
    if not verdict.converged or not targets or no_gap:
        return verdict
    final = _GapRow(gap=rep.gap, rel_gap=rep.rel_gap)
    if any(t(final) is not None for t in targets):
        return verdict
    wanted = " or ".join(repr(t) for t in targets)
    warnings.warn(
        f"the run stopped with {verdict.reason!r}, claiming convergence, but the gap "
        f"(relative {rep.rel_gap:.3g}, absolute {rep.gap:.3g}) does not meet {wanted}; "
        "reported as not converged",
        ConvergenceWarning,
        stacklevel=3,
    )
    return Stop(f"{verdict.reason}; gap target unmet", False)


class _GapRow:
    """The two fields of a Progress row a DualityGap reads."""

    def __init__(self, gap, rel_gap):
        self.gap = gap
        self.rel_gap = rel_gap


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
    # The least-squares slope in closed form: a flat gap gives exactly 0
    # (g - mean(g) is 0), where a solver's fit can leave a -1e-17 that would
    # read as "closing" with an ETA of 1e17 seconds.
    tc = t - t.mean()
    slope = float(tc @ (g - g.mean())) / float(tc @ tc)
    if not slope < 0:
        return None
    return max(0.0, (math.log(target) - g[-1]) / slope)


def _progress_line(method, oracle, row, history, target):
    """One INFO line: calls, seconds per call, rows per second, J, gap and an ETA.

    ``J`` is named by the method's ``value_label`` when it has one, and the
    gap is left out when there is none (``nan``).
    """
    parts = [
        f"{type(method).__name__}: {row.n_oracle_calls} oracle calls "
        f"({row.elapsed / max(row.n_oracle_calls, 1):.3g} s each)",
        f"iteration {row.iteration}",
        # what the method's value is (J for MKL; boosting's exponential loss)
        f"{getattr(method, 'value_label', 'J')}={row.upper:.6g}",
    ]
    if not math.isnan(row.rel_gap):  # a method without a dual (boosting) has no gap
        parts.append(f"relative gap {row.rel_gap:.3g}")
    stats = getattr(oracle, "last_stats", None)
    rate = getattr(stats, "rows_per_second", math.nan)
    if rate is not None and math.isfinite(rate) and stats.n_blocks:
        parts.insert(1, f"{rate:,.0f} kernel rows/s")
    eta = _eta(history, target)
    if eta is not None:
        parts.append(f"about {eta:.0f} s to {target:g} at the recent rate")
    return ", ".join(parts)


class _InnerTolerance:
    """Sets ``oracle.tol`` before each call from the gap to resolve (see :func:`solve`)."""

    def __init__(self, oracle, stop):
        tol0 = getattr(oracle, "tol", None)
        self.oracle = oracle if isinstance(tol0, (int, float)) and tol0 > 0 else None
        self.tol0 = tol0
        self.stop = stop

    def required(self, upper):
        """The tolerance a gap that meets the target is computed at (None: no target)."""
        if self.oracle is None:
            return None
        target = self.stop.target_gap(upper)
        if not math.isfinite(target):
            return None
        return inner_tol_for(target, self.tol0)

    def loose(self, used, rep):
        """Whether a best answer computed at tolerance ``used`` is too loose for the target."""
        need = self.required(rep.upper)
        return need is not None and used is not None and used > need * (1.0 + 1e-9)

    def set(self, rep, exact=False):
        if self.oracle is None:
            return
        target = self.stop.target_gap(rep.upper)
        if exact:
            g = target if math.isfinite(target) else 0.0
        else:
            g = rep.rel_gap if math.isfinite(rep.rel_gap) else math.inf
            g = max(target, g)
        self.oracle.tol = inner_tol_for(g, self.tol0)

    def restore(self):
        if self.oracle is not None:
            self.oracle.tol = self.tol0


def _result(method, rep, oracle, history, verdict, elapsed, calls0):
    if rep.best is None:
        if verdict.reason == "interrupted":
            raise KeyboardInterrupt(
                "interrupted during the first oracle call: no point was evaluated, so there "
                "is nothing to return"
            )
        hint = (" Raise the time limit: a single oracle call needs more than it allows "
                "(shrink the problem, or use a larger cache_size)"
                if verdict.reason == "time_limit" else "")
        raise NoPointError(
            f"the run stopped ({verdict.reason}) before any oracle call finished, so no point "
            f"was certified; nothing to return.{hint}"
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
        q=None if getattr(rep.best, "q", None) is None else np.array(rep.best.q, dtype=np.float64),
    )
