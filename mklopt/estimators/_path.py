"""A warm-started path over C for one binary MKL problem.

Cross-validating ``C`` solves the same binary problem (same kernels, same
labels) at every value of a grid. Solved one after the other in increasing
order, each solve can start from the previous one's answer:

* **the dual vector.** A point ``alpha`` of the box ``0 <= alpha <= C0`` with
  ``y'alpha = 0`` stays feasible under any ``C1 >= C0``, and so does
  ``t alpha`` for every ``0 <= t <= C1 / C0``. Along that ray the dual
  objective at fixed weights ``w`` is ``t L - t^2 Q / 2`` (``L = 1'alpha``,
  ``Q = sum_k w_k q_k(alpha)``), largest at ``t = L / Q``; SMO starts from
  ``t alpha`` with that ``t`` clipped to ``[0, C1 / C0]``, a feasible point
  needing no repair, exact when every support vector is bounded (small
  ``C``) and left unscaled when the margin no longer grows (large ``C``).
  A smooth loss (logistic, squared) has a concave ``l`` positively
  homogeneous in ``(alpha, C)`` together; its previous vector is scaled by
  ``C1 / C0``, which keeps it feasible and scales ``l`` by the same factor;
* **the kernel weights.** The outer method starts from the previous
  optimal weights: the path hands it a
  :class:`~mklopt._types.Handover` (the previous weights and the oracle's
  answer there under the new ``C``), the mechanism that chains two
  methods, so every registered method resumes from that point;
* **the cutting-plane model.** Each earlier answer ``alpha_j`` gives the
  cut ``f(w, t alpha_j) = t 1'alpha_j - t^2 w'q_j / 2``, a minorant of the
  new ``J`` (``t alpha_j`` is feasible under the new ``C``), so methods that
  keep cuts (the level and cutting-plane methods) start with a lower bound
  and a model instead of nothing.

None of this changes what is certified: every point of the path stops at
the relative duality gap of its own problem, computed from its own
oracle's answers.

**Points that need no call.** Once ``C`` is large enough that no dual
variable of the previous solution sits at its upper bound (every support
vector is free: a separable pair at large ``C``), the previous point *is*
the next one's solution, certificate included, and the path carries it
over without an oracle call (:func:`_carried_over`). Write ``J_C(w)`` for
the inner maximum at weights ``w`` of the min-max problem (Xu et al. 2008,
eq. (1): ``max`` over ``Q = {alpha : y'alpha = 0, 0 <= alpha <= C}``):

* *lower bound.* The box only grows with ``C`` and nothing else changes,
  so ``J_C1(w) >= J_C0(w)`` for every ``w``: a lower bound on ``min_w
  J_C0`` is one on ``min_w J_C1``;
* *upper bound.* The previous answer ``alpha`` at the previous weights is
  feasible under ``C1``; with no variable at its bound under ``C0`` the
  index sets of SMO's optimality test (which variables may move up or
  down) are the same under ``C1``, so its maximal KKT violation, and with
  it the accuracy of the value ``f(w, alpha)`` as an estimate of ``J(w)``,
  is exactly what a call under ``C1`` warm-started at ``alpha`` would
  report before taking a step.

So the previous upper and lower bounds, and hence the previous gap, hold
for the new ``C``; the stopping criterion is asked again on them. The same
holds for every feasible set of weights (Lp, elastic-net, grouped): their
objective is this inner maximum at the effective weights, plus terms of
the weights alone where the formulation has them, none of which depends
on ``C``. The check is on the problems themselves, not on the oracle
class: the new oracle's dual must have the same signs, rows, linear term
and total as the previous one's, and upper bounds no smaller. Smooth
losses (logistic, squared), whose dual objective depends on ``C`` beyond
its box, are never carried.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from dataclasses import dataclass

import numpy as np

from .._types import Handover
from ..domains import retract_onto
from ..driver import _takes_handover, certifies, solve
from ..oracles import SVMDual
from ._progress import call_lines

__all__ = ["PathPoint", "c_path", "ray_scale", "recording_oracle"]

#: At most this many of the previous problem's cuts are handed to the next
#: one (the most recent, which are the ones near its optimum).
_MAX_CUTS = 64


@dataclass
class PathPoint:
    """The solution of one binary problem at one ``C`` of the path.

    Attributes
    ----------
    C : float
    weights : ndarray of shape (n_kernels,)
    alpha : ndarray of shape (n_samples,)
    bias : float
    value : float
        ``J(w)`` at the solution.
    linear : float
        The linear term ``l(alpha)`` of the dual there (``1'alpha`` for SVMs).
    rel_gap : float
        Certified relative duality gap.
    converged : bool
    n_iter, n_oracle_calls : int
        Outer iterations, and SVM solves including the one that evaluates the
        previous weights under the new ``C``.
    fit_time : float
        Seconds spent on this point.
    extra : object
        What ``c_path``'s ``finish`` returned for this point (None without it).
    lower : float
        The certified lower bound on the optimum, ``value`` less the
        certified gap (``nan`` where the formulation has no dual value).
    carried : bool
        True when the point is the previous one carried over without an
        oracle call (see the module notes): the same weights, dual vector,
        offset, value and bounds.
    """

    C: float
    weights: np.ndarray
    alpha: np.ndarray
    bias: float
    value: float
    linear: float
    rel_gap: float
    converged: bool
    n_iter: int
    n_oracle_calls: int
    fit_time: float
    extra: object = None
    lower: float = -math.inf
    carried: bool = False


@functools.cache
def _recording(oracle_class):
    """A subclass of a dual oracle class that keeps the cuts ``(l(alpha), q)`` of full answers.

    Cuts are kept once ``cuts`` is set to a list on the instance.
    """

    class Recording(oracle_class):
        cuts = None

        def __call__(self, w, warm_start=None, **options):
            # The driver passes need_q and kernels only to an oracle that
            # says it supports them; they go through as given.
            answer = super().__call__(w, warm_start=warm_start, **options)
            if (self.cuts is not None and answer.q is not None
                    and options.get("kernels") is None):
                self.cuts.append((float(answer.linear_term), answer.q))
            return answer

    Recording.__name__ = Recording.__qualname__ = f"Recording{oracle_class.__name__}"
    return Recording


def recording_oracle(entry, bank, y=None, **values):
    """The oracle of registry ``entry`` on ``bank``, recording its cuts when it can.

    A factory that is a class is subclassed by :func:`_recording`; any
    other factory gives the plain oracle, whose path points then start
    from the previous weights without the previous cuts.
    """
    factory = entry.factory
    if isinstance(factory, type):
        entry = dataclasses.replace(entry, factory=_recording(factory))
    return entry.make(bank, y, **values)


def _svm_oracle(y):
    """``make_oracle`` of a classification path: :class:`SVMDual` on labels ``y``."""
    return functools.partial(_make_svm, y)


def _make_svm(y, bank, C, tol):
    return _recording(SVMDual)(bank, y, C=C, tol=tol)


def _line_before_run(callback, answer):
    """At ``verbose=2``, the line of the hand-over call a path point makes before its run."""
    before = getattr(callback, "before_run", None)
    if before is not None:
        before(float(answer.value))


def _from_handover(method, oracle, handover, domain, stop, callback):
    """A path point's result from the handed-over weights and their answer.

    The driver takes the hand-over as the run's start (``initial``):
    cheapest first, the answer's own gap on the problem's feasible set
    ``domain`` (no master problem is built), then the method started from
    the hand-over, then a run that goes on from that start.
    """
    return solve(oracle, method, stop=stop(), callback=callback,
                 initial=dataclasses.replace(handover, domain=domain))


def _same_but_larger_box(old, new, alpha):
    """Whether ``new``'s dual is ``old``'s with upper bounds no smaller, and ``alpha`` is free.

    ``alpha`` (an answer of ``old``) must have no variable at ``old``'s
    upper bound. Oracles without a box-constrained problem (smooth losses)
    give False; composites are checked part by part.
    """
    if type(old) is not type(new):
        return False
    parts = getattr(old, "parts", None)
    if parts is not None:
        return len(parts) == len(new.parts) and all(
            _same_but_larger_box(o, n, a)
            for o, n, a in zip(parts, new.parts, old.split(alpha), strict=True))
    p0, p1 = getattr(old, "problem", None), getattr(new, "problem", None)
    if p0 is None or p1 is None or p0.n_variables != p1.n_variables:
        return False
    # the test that fails along most of a path (small C) first
    if not np.all(old.to_variables(alpha) < p0.upper):
        return False
    return bool(p0.total == p1.total and p0.n_samples == p1.n_samples
                and np.array_equal(p0.signs, p1.signs) and np.array_equal(p0.rows, p1.rows)
                and np.array_equal(p0.linear, p1.linear) and np.all(p1.upper >= p0.upper))


def _carried_over(prev, old, new, C, stop):
    """``prev`` as the solution under ``new``'s ``C``, when it is one (module notes), else None.

    ``old`` is the oracle ``prev`` was solved with. The previous bounds are
    checked by a fresh stopping criterion, as the driver checks a run's
    first row.
    """
    if not prev.converged or old is None or not _same_but_larger_box(old, new, prev.alpha):
        return None
    gap = prev.value - prev.lower
    if not gap >= 0.0:  # nan: no dual value to certify with
        return None
    if certifies(stop(), prev.value, prev.lower, prev.weights) is None:
        return None
    return dataclasses.replace(prev, C=float(C), n_iter=0, n_oracle_calls=0, fit_time=0.0,
                               carried=True)


def _on_domain(method, oracle, w):
    """``w`` mapped onto the method's feasible set (:meth:`~mklopt.domains.Domain.retract`).

    A start taken from another problem (a mean of other pairs' weights) may
    lie outside a set that is not convex, such as the mixed-norm
    formulation's effective weights; its answer would then certify nothing.
    The method is started once to learn its set (``start`` resets it).
    """
    method.start(oracle)
    domain = getattr(method, "domain", None)
    return np.asarray(w, dtype=np.float64) if domain is None else retract_onto(domain, w)


def ray_scale(L, Q, ratio):
    """The ``t`` in ``[0, ratio]`` maximising ``t L - t^2 Q / 2`` (see the module notes).

    Examples
    --------
    >>> ray_scale(3.0, 2.0, 10.0)
    1.5
    >>> ray_scale(3.0, 2.0, 1.2)
    1.2
    >>> ray_scale(3.0, 0.0, 4.0)
    4.0
    """
    if not Q > 0.0:
        return float(ratio)
    return float(min(max(L / Q, 0.0), ratio))


def c_path(bank, y, Cs, new_method, stop, inner_tol, callback=None, make_oracle=None,
           verbose=0, name="", where="", on_point=None, finish=None, guide=None, start=None):
    """Solve one binary MKL problem at every ``C`` of ``Cs``, each warm-started.

    Parameters
    ----------
    bank : KernelBank
        The problem's kernels (typically a view of a shared bank).
    y : ndarray of shape (n_samples,)
        Labels in {-1, +1}.
    Cs : sequence of float
        Increasing box constraints.
    new_method : callable
        Returns a fresh outer method.
    stop : callable
        Returns a fresh stopping criterion.
    inner_tol : float
        SMO tolerance (the oracle's ``tol``).
    callback : callable, optional
        Passed to :func:`~mklopt.solve`.
    make_oracle : callable, optional
        ``make_oracle(bank, C, tol)`` returns the oracle at ``C`` (an
        instance of a class made by :func:`_recording`); default
        :class:`SVMDual` on the labels ``y``. Its dual variables must stay
        feasible when scaled by ``0 <= t <= C1 / C0`` (box constraints
        proportional to ``C``, an equality with a zero right-hand side), as
        those of SVMDual and SVRDual do; a smooth-loss oracle
        (:class:`~mklopt.oracles.LogisticDual`, :class:`~mklopt.oracles.RidgeDual`)
        is scaled by ``t = C1 / C0`` (see :func:`_scaled_start`), and a
        :class:`~mklopt.oracles.CompositeOracle` of SVM duals (one weight
        vector for several problems) as one dual vector.
    finish : callable, optional
        ``finish(oracle, result)`` after each point; what it returns is the
        point's ``extra`` (e.g. per-problem offsets of a composite oracle).
    guide : sequence of ndarray of shape (n_kernels,), optional
        The optimal weights of a similar problem at every ``C`` (another
        fold's path, whose training set overlaps this one's). The first
        point starts from ``guide[0]`` (SMO cold) instead of the method's
        own start; a later point from its predecessor's weights moved as
        the guide moved, ``project(w_prev + guide[c] - guide[c - 1])``,
        instead of ``w_prev``: where the optimal weights change with ``C``
        the guide's step predicts this problem's. Only the starting point
        changes: every point is certified by its own answers.
    start : ndarray of shape (n_kernels,), optional
        Without a ``guide``: the weights the first point starts from (SMO
        cold), such as the optimal weights of a similar problem at the
        first ``C`` (another pair of classes of the same fold); later
        points start from their predecessor's weights. Ignored with a
        ``guide``, whose first weights it would replace.
    verbose : int, default=0
        At 2, a line per oracle call (:func:`~._progress.call_lines`).
    name, where : str
        The estimator's name and this path's place in the fit (``"fold 2
        of 5"``), for the progress lines.
    on_point : callable, optional
        ``on_point(label, summary)`` as each point of the path is solved.

    Returns
    -------
    list of PathPoint
        One per ``C``, in the order of ``Cs``.
    """
    points = []
    prev = None
    prev_oracle = None  # the oracle the latest solved (not carried) point was solved with
    prev_cuts = ()
    domain = None
    for c_index, C in enumerate(Cs):
        t0 = time.perf_counter()
        here = f"{where} C={C:g}".strip()
        oracle = (make_oracle or _svm_oracle(y))(bank, C, inner_tol)
        carried = None if prev is None else _carried_over(prev, prev_oracle, oracle, C, stop)
        if carried is not None:
            carried.fit_time = time.perf_counter() - t0
            points.append(carried)
            prev = carried
            if on_point is not None:
                on_point(here, f"rel. gap {prev.rel_gap:.2e}, no oracle call (the previous "
                         "solution: no dual variable at its bound)")
            continue
        if prev_oracle is not None and hasattr(oracle, "adopt_rows"):
            # The rows of K(w) its last call combined: this point's first
            # call is at those weights (without a guide's step).
            oracle.adopt_rows(prev_oracle)
        method = new_method()
        resumable = prev is not None and _takes_handover(method)
        record = bool(getattr(method, "uses_cuts", False))
        if record:
            oracle.cuts = []
        extra_calls = 0
        callback_c = call_lines(verbose, name, oracle, callback, where=here)
        if prev is None and (guide is not None or start is not None) and (
                _takes_handover(method)):
            w0 = _on_domain(method, oracle, guide[0] if guide is not None else start)
            answer = oracle(w0)
            extra_calls = 1
            _line_before_run(callback_c, answer)
            handover = Handover(weights=w0, answer=answer, lower=-math.inf, cuts=())
            res = _from_handover(method, oracle, handover, getattr(method, "domain", None),
                                 stop, callback_c)
        elif prev is None:
            res = solve(oracle, method, stop=stop(), callback=callback_c)
        else:
            a0, t = _scaled_start(oracle, prev, C)
            if resumable:
                # The previous weights under the new C: the handover's best point.
                hw = prev.weights
                if guide is not None and domain is not None:
                    step = np.asarray(guide[c_index]) - np.asarray(guide[c_index - 1])
                    hw = retract_onto(domain, hw + step)
                answer = oracle(hw, warm_start=a0)
                extra_calls = 1
                _line_before_run(callback_c, answer)
                recent = prev_cuts[len(prev_cuts) - _MAX_CUTS:] if _MAX_CUTS > 0 else ()
                cuts = tuple((t * lin, (t * t) * q) for lin, q in recent)
                handover = Handover(weights=hw, answer=answer, lower=-math.inf,
                                    cuts=cuts if record and a0 is not None else ())
                res = _from_handover(method, oracle, handover, domain, stop, callback_c)
            else:
                # A method without handovers: only SMO is warm-started.
                res = solve(oracle, method, stop=stop(), callback=callback_c, warm_start=a0)
        prev_cuts = tuple(oracle.cuts) if record else ()
        prev_oracle = oracle
        if domain is None:
            # The feasible set is the problem's, the same at every C.
            domain = getattr(method, "domain", None)
        prev = PathPoint(
            C=float(C),
            weights=np.asarray(res.weights, dtype=np.float64),
            alpha=np.asarray(res.alpha, dtype=np.float64),
            bias=float(res.bias),
            value=float(res.value),
            linear=_linear_term(oracle, res.alpha),
            rel_gap=float(res.rel_gap),
            converged=bool(res.converged),
            n_iter=int(res.n_iter),
            n_oracle_calls=int(res.n_oracle_calls) + extra_calls,
            fit_time=0.0,
            extra=None if finish is None else finish(oracle, res),
            # The certified lower bound: the best value less the certified gap
            # (a method's own bound, or the best answer's dual value).
            lower=float(res.value) - float(res.gap),
        )
        prev.fit_time = time.perf_counter() - t0
        points.append(prev)
        if on_point is not None:
            calls = prev.n_oracle_calls
            on_point(here, f"rel. gap {prev.rel_gap:.2e}, {calls} oracle call"
                     + ("" if calls == 1 else "s") + ("" if prev.converged else ", not converged"))
    return points


def _linear_term(oracle, alpha):
    """``l(alpha)`` of an answer's ``alpha`` (``1'alpha`` for the SVM dual).

    Box-constrained duals (:class:`SVMDual`, :class:`SVRDual`) read it off
    their problem's linear term, a composite oracle adds its parts', and a
    smooth-loss oracle (logistic, ridge) evaluates its own ``l``.
    """
    parts = getattr(oracle, "parts", None)
    if parts is not None:
        return float(sum(_linear_term(o, a) for o, a in zip(parts, oracle.split(alpha),
                                                            strict=True)))
    if hasattr(oracle, "problem"):
        a = oracle.to_variables(alpha)
        return -float(oracle.problem.linear @ a)
    if _is_smooth(oracle):
        return float(oracle._linear(np.asarray(alpha, dtype=np.float64)))
    return math.nan  # an oracle of unknown structure: its dual is not scaled


def _is_linear(oracle):
    """Whether ``l`` is linear in the dual variables (SMO duals, or composites of them)."""
    parts = getattr(oracle, "parts", None)
    if parts is not None:
        return all(_is_linear(o) for o in parts)
    return hasattr(oracle, "problem")


def _is_smooth(oracle):
    """Whether ``oracle`` is a smooth-loss dual whose ``l`` the path may scale with ``C``."""
    return bool(getattr(oracle, "c_homogeneous", False))


def _scalable(oracle):
    """Whether the path knows how a dual vector of ``oracle`` stays feasible under a larger C.

    Box-constrained duals and smooth-loss duals do (module notes), and
    composites of them; for any other oracle (a user's, registered for a
    task) the path warm-starts the weights only.
    """
    parts = getattr(oracle, "parts", None)
    if parts is not None:
        return all(_scalable(o) for o in parts)
    return hasattr(oracle, "problem") or _is_smooth(oracle)


def _scale_into(oracle, alpha, t):
    """``t alpha`` in the oracle's variables, clipped to its box (rounding only)."""
    parts = getattr(oracle, "parts", None)
    if parts is not None:
        return np.concatenate([_scale_into(o, a, t) for o, a in
                               zip(parts, oracle.split(alpha), strict=True)])
    if hasattr(oracle, "problem"):
        a = oracle.to_variables(alpha)
        # The minimum only removes rounding: t * a <= t * upper(C0) <= upper(C).
        return oracle.to_alpha(np.minimum(t * a, oracle.problem.upper))
    return t * np.asarray(alpha, dtype=np.float64)


def _scaled_start(oracle, prev, C):
    """``(t alpha, t)``: the previous point scaled into the new box.

    With a linear ``l`` (the SVM and SVR duals, and composites of them)
    ``t`` is :func:`ray_scale`'s, the best point on the ray. A smooth loss
    has ``l_C(alpha) = -C sum_i V*(-alpha_i / C)``, positively homogeneous
    of degree one in ``(alpha, C)`` together: ``t = C / C_prev`` maps the
    previous feasible point to a feasible one with ``l_C(t alpha) = t
    l_{C_prev}(alpha)``, so the cuts scaled by ``t`` and ``t^2`` remain
    minorants of the new ``J``.
    """
    ratio = C / prev.C
    if not _scalable(oracle):
        return None, math.nan
    if _is_linear(oracle):
        L = prev.linear
        # J = l(a) - w'q(a) / 2 at the previous optimum gives Q = w'q(a).
        Q = 2.0 * (L - prev.value)
        t = ray_scale(L, Q, ratio)
    else:
        t = ratio
    return _scale_into(oracle, prev.alpha, t), t
