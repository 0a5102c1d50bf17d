"""Chaining outer methods: run one until a criterion holds, then hand over to the next."""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._types import Handover, Progress
from ..stopping import DualityGap, StopCriterion, as_criterion
from ._base import METHODS, MethodBase, get_method, register

__all__ = ["Chain"]


@dataclass
class _State:
    oracle: object
    stages: list  # fresh copies of first and then
    switch: StopCriterion
    stage: int = 0  # index of the running stage
    calls: int = 0  # oracle calls of the running stage
    t0: float = 0.0  # when the running stage started
    cuts: list | None = None  # (l(alpha_j), q_j) of every full answer, if ``then`` reads cuts
    switched_after: int | None = None  # chain calls before the hand-over
    n_iter_seen: int = 0  # the running stage's n_iter at the last tell
    total: int = 0  # oracle calls of the chain
    last: tuple | None = None  # (query, answer, report) of the last tell
    stage_names: list = field(default_factory=list)


@register("chain")
class Chain(MethodBase):
    r"""Run ``first`` until ``switch`` holds, then hand its state to ``then``.

    Parameters
    ----------
    first, then : str or outer method, default="level" and "active_set"
        Registered names or method instances (copied at every ``start``, so
        the instances you pass are never run). Chains nest:
        ``Chain("level", Chain("subgradient", "active_set"))``.
    switch : float or StopCriterion or callable, default=1e-2
        When to hand over. A float is a relative duality gap
        (``DualityGap(switch)``); a criterion (any combination from
        :mod:`mklopt.stopping`) is evaluated on progress rows of ``first``
        alone (its iterations, calls, elapsed time and gap). ``first``
        also hands over when it stops by itself.

    Notes
    -----
    At the hand-over ``then`` starts from a :class:`~mklopt._types.Handover`:
    the best point so far (weights and the oracle's answer there, ``alpha``
    included), the best certified lower bound and, when ``then`` builds a
    cutting-plane model (``uses_cuts``: the level method, SILP), the cut
    ``f(w, alpha_j) = l(alpha_j) - w'q_j / 2`` of every full answer of
    ``first``, whatever method ``first`` is. Each method resumes as its
    mathematics allows: the level method and SILP rebuild their model at
    once and start from its bounds; SimpleMKL descends from the point with
    its gradient; mirror descent and the analytic Lp update step from it
    (mixed with 1 % of the uniform point, since their multiplicative steps
    cannot revive a zero weight); the active-set step restricts the problem
    to its kernels and support vectors. A method written from the protocol
    alone starts afresh, and the chain still keeps the best point.

    Every oracle call is the running stage's: the chain reports the stage's
    :class:`~mklopt.OracleRequest` whole (what to compute, the warm start,
    the kernel subset of a working set), so a stage behaves inside a chain
    as it does alone.

    The chain's best point, gap and lower bound are those of the whole run
    (they never get worse at the hand-over); ``extra()`` has the stages'
    names, ``switched_after`` (oracle calls before the hand-over, None if it
    did not happen) and the last stage's own ``extra()``. Both stages must
    solve the same formulation.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt import solve
    >>> from mklopt.oracles import SVMDual
    >>> from mklopt.stopping import DualityGap, MaxIter
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 3)); y = np.where(X[:, 0] + X[:, 1] > 0, 1, -1)
    >>> d2 = ((X[:, None] - X[None]) ** 2).sum(-1)
    >>> K = np.stack([np.exp(-d2 / s) for s in (0.5, 2.0, 8.0)] + [X @ X.T])
    >>> K /= np.trace(K, axis1=1, axis2=2)[:, None, None]
    >>> chain = Chain("level", "active_set", switch=1e-2)
    >>> res = solve(SVMDual(K, y, C=10.0), chain, stop=DualityGap(1e-8) | MaxIter(200))
    >>> res.extra["stages"], bool(res.converged and res.rel_gap <= 1e-8)
    (['LevelBundle', 'ActiveSet'], True)
    """

    def __init__(self, first="level", then="active_set", switch=1e-2):
        self.first = first
        self.then = then
        self.switch = switch

    # ---- parameters ------------------------------------------------------------
    def check_params(self, n_kernels=None):
        for name in ("first", "then"):
            stage = _make_stage(getattr(self, name), name)
            if getattr(stage, "oracle_kind", "dual") != "dual":
                raise ValueError(
                    f"{name}: a chain runs methods of the SVM-dual oracle, not "
                    f"{type(stage).__name__}"
                )
            check = getattr(stage, "check_params", None)
            if check is not None:
                check(n_kernels=n_kernels)
        _switch_criterion(self.switch)

    @property
    def conformance(self):
        """What the conformance kit holds the chain to: what its weakest stage promises.

        Per kind of toy, no rate if a stage promises none, else the largest
        factor and budget of the stages (:func:`mklopt.testing.check_method`).
        """
        out, reasons = {}, []
        for m, n in ((self.first, "first"), (self.then, "then")):
            declared = getattr(_make_stage(m, n), "conformance", None) or {}
            if declared.get("reason"):
                reasons.append(f"{n} stage: {declared['reason']}")
            for kind in ("smooth", "piecewise"):
                if kind not in declared:
                    continue
                mine, theirs = out.get(kind, ()), declared[kind]
                if theirs is None or mine is None:
                    out[kind] = None
                elif mine == ():
                    out[kind] = theirs
                else:
                    out[kind] = (max(mine[0], theirs[0]), max(mine[1], theirs[1]))
        if reasons:
            out["reason"] = "; ".join(reasons)
        return out

    @property
    def uses_cuts(self):
        """Whether the first stage reads cuts from a handover (chains nest)."""
        return bool(getattr(_make_stage(self.first, "first"), "uses_cuts", False))

    @property
    def needs_problem(self):
        """Whether a stage reads the oracle's problem (an exact step)."""
        return any(
            getattr(_make_stage(m, n), "needs_problem", False)
            for m, n in ((self.first, "first"), (self.then, "then"))
        )

    # ---- hooks -----------------------------------------------------------------
    def _start(self, oracle, handover=None):
        stages = [_make_stage(self.first, "first"), _make_stage(self.then, "then")]
        switch = _switch_criterion(self.switch)
        switch.reset()
        s = _State(oracle=oracle, stages=stages, switch=switch, t0=time.perf_counter(),
                   stage_names=[type(m).__name__ for m in stages])
        if getattr(stages[1], "uses_cuts", False):
            s.cuts = []
        _start_stage(stages[0], oracle, handover)
        return getattr(stages[0], "domain", None), s

    def _resume(self, oracle, handover):
        return self._start(oracle, handover)

    def _ask(self, s):
        return s.stages[s.stage].ask()

    def _tell(self, s, query, answer):
        stage = s.stages[s.stage]
        stage.tell(query, answer)
        s.calls += 1
        s.total += 1
        if s.cuts is not None and s.stage == 0 and getattr(answer, "q", None) is not None:
            s.cuts.append((float(answer.linear_term), np.array(answer.q, dtype=np.float64)))
        rep = stage.report()
        done = rep.n_iter > s.n_iter_seen
        s.n_iter_seen = rep.n_iter
        s.last = (query, answer, rep)
        return done

    def _candidate(self, s, query, answer):
        # The running stage decides which answers are candidates (grouped
        # mirror descent offers only settled points); offer its best.
        rep = s.stages[s.stage].report()
        return None if rep.best is None else (rep.weights, rep.best)

    def _lower(self, s):
        return s.stages[s.stage].report().lower

    def _request(self, s):
        # The running stage's request, whole: its need, warm start, kernel
        # subset and whatever a request may carry later.
        return s.stages[s.stage].report().request

    def _extra(self, s):
        out = {"stages": list(s.stage_names), "switched_after": s.switched_after}
        out.update(s.stages[s.stage].extra())
        return out

    # The hand-over happens once the chain's own report has taken in the
    # last answer (so the handed-over best point includes it): after tell.
    def tell(self, query, answer):
        super().tell(query, answer)
        s = self._mb_run.state
        if s.stage == 0:
            _, answer, rep = s.last
            row = Progress(
                iteration=rep.n_iter, elapsed=time.perf_counter() - s.t0,
                n_oracle_calls=s.calls, value=float(answer.value), lower=rep.lower,
                upper=rep.upper, gap=rep.gap, rel_gap=rep.rel_gap,
                weights=np.array(query if rep.evaluated is None else rep.evaluated),
            )
            if rep.stop is not None or s.switch(row) is not None:
                self._hand_over(s)
        else:
            rep = s.stages[1].report()
            if rep.stop is not None:
                self._finish(rep.stop.reason, rep.stop.converged)
        self._mb_run.report = self._mb_make_report()

    def _hand_over(self, s):
        mine = self.report()
        if mine.best is None:  # nothing to hand over yet (no full answer)
            return
        h = Handover(weights=np.array(mine.weights), answer=mine.best, lower=mine.lower,
                     cuts=tuple(s.cuts or ()))
        then = s.stages[1]
        _start_stage(then, s.oracle, h)
        dom, other = self.domain, getattr(then, "domain", None)
        if dom is not None and other is not None and not _same_domain(dom, other):
            raise ValueError(
                f"chain stages solve different formulations: {type(dom).__name__} then "
                f"{type(other).__name__}"
            )
        s.stage, s.calls, s.t0, s.cuts = 1, 0, time.perf_counter(), None
        s.n_iter_seen = then.report().n_iter
        s.switched_after = s.total
        rep = then.report()
        if rep.stop is not None:
            self._finish(rep.stop.reason, rep.stop.converged)


def _make_stage(m, name):
    """A fresh, unstarted method from a registered name or an instance."""
    if isinstance(m, str):
        try:
            cls = get_method(m)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
        return cls()
    if isinstance(m, type):
        raise TypeError(f"{name} must be a method name or instance; got the class {m.__name__}")
    if not all(callable(getattr(m, a, None)) for a in ("start", "ask", "tell", "report")):
        raise TypeError(
            f"{name} must be a registered method name ({', '.join(sorted(METHODS))}) or an "
            f"outer method with start/ask/tell/report, got {type(m).__name__}"
        )
    if isinstance(m, MethodBase):
        return type(m)(**m.get_params())
    return copy.deepcopy(m)


def _start_stage(stage, oracle, handover):
    if handover is not None and isinstance(stage, MethodBase):
        stage.start(oracle, handover=handover)
    else:
        stage.start(oracle)


def _switch_criterion(switch):
    if isinstance(switch, (int, float)) and not isinstance(switch, bool):
        if not (math.isfinite(switch) and switch > 0):
            raise ValueError(f"switch must be a relative gap > 0 or a criterion, got {switch!r}")
        return DualityGap(float(switch))
    try:
        return copy.deepcopy(as_criterion(switch))
    except TypeError:
        raise TypeError(
            "switch must be a relative gap (float) or a stopping criterion, got "
            f"{type(switch).__name__}"
        ) from None


def _same_domain(a, b):
    if type(a) is not type(b) or a.n_kernels != b.n_kernels:
        return False
    if hasattr(a, "p") and a.p != b.p:
        return False
    if hasattr(a, "group_of") and not np.array_equal(a.group_of, b.group_of):
        return False
    return True
