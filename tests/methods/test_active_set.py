"""The exact active-set step: exactness against cvxpy, the certificate, growing A and S."""

import dataclasses
import functools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import Handover, solve
from mklopt.domains import GroupSimplex, Simplex
from mklopt.methods import ActiveSet, Chain, LevelBundle, MirrorDescent, active_set, get_method
from mklopt.methods._restricted import kernel_factor
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter, MaxOracleCalls
from tests._cvx_reference import exact_optimum, small_problem
from tests._strategies import log_uniform, reals
from tests._toy_oracles import SmoothQuadraticOracle
from tests.methods import _svm_problems as P

GROUPS = [[0, 1, 2], [3, 4]]


def test_registered():
    assert get_method("active_set") is ActiveSet
    assert get_method("exact") is ActiveSet


@pytest.mark.parametrize("groups", [None, GROUPS, [[0, 3], [1], [2, 4]]])
def test_alone_reaches_the_cvxpy_optimum_at_1e_6(groups):
    dom = Simplex(5) if groups is None else GroupSimplex(groups, 5)
    exact = P.exact(dom, "l1" if groups is None else repr(groups))
    res = solve(P.oracle(), ActiveSet(groups=groups), stop=DualityGap(1e-6) | MaxIter(30))
    assert res.converged, res.reason
    assert 0 <= res.rel_gap <= 1e-6
    # exactness: the value is within its gap of the independent optimum
    assert abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)
    assert res.lower <= exact + 1e-6 * abs(exact)
    assert dom.contains(res.weights, tol=1e-9)


SIZES = {"sonar": 208, "ionosphere": 351, "pima": 768}


@st.composite
def subsets(draw):
    """Rows of a bundled data set, drawn (so repeated rows are reachable)."""
    name = draw(st.sampled_from(sorted(SIZES)))
    rows = draw(st.lists(st.integers(0, SIZES[name] - 1), min_size=16, max_size=40))
    return name, rows


@settings(max_examples=6)
@given(subsets(), log_uniform(0.05, 100.0))
def test_exact_on_random_small_problems(subset, C):
    name, rows = subset
    K, y = small_problem(name, rows=rows)
    assume(len(np.unique(y)) == 2)
    exact = exact_optimum(K, y, C, Simplex(K.shape[0]))
    res = solve(SVMDual(K, y, C=C, tol=1e-3), ActiveSet(), stop=DualityGap(1e-7) | MaxIter(30))
    assert res.converged, res.reason
    assert abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)


def test_a_wrong_active_set_is_repaired_by_the_certificate():
    """Handed over a vertex that carries no weight at the optimum, the step adds back
    the kernels the certificate finds, and still ends at the optimum."""
    exact = P.exact(Simplex(5), "l1")
    oracle = P.oracle()
    lvl = solve(oracle, LevelBundle(), stop=DualityGap(1e-8) | MaxIter(300))
    support = np.flatnonzero(lvl.weights > 1e-3)
    wrong = int(np.argmin(lvl.weights))  # a kernel without weight at the optimum
    w0 = np.eye(5)[wrong]
    res = solve(oracle, _Resumed(ActiveSet(), Handover(weights=w0, answer=oracle(w0))),
                stop=DualityGap(1e-7) | MaxIter(30))
    assert res.converged and abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)
    assert set(support) <= set(res.extra["kernels"].tolist())
    assert res.extra["rounds"] >= 2  # the first restriction was wrong


class _Resumed:
    """Runs a MethodBase from a given handover under solve() (protocol-only wrapper)."""

    def __init__(self, method, handover):
        self.method, self.handover = method, handover

    def start(self, oracle):
        self.method.start(oracle, handover=self.handover)

    def ask(self):
        return self.method.ask()

    def tell(self, q, a):
        self.method.tell(q, a)

    def report(self):
        return self.method.report()

    def extra(self):
        return self.method.extra()


def test_certificate_call_is_warm_started_from_the_restricted_solution():
    oracle = P.oracle()
    lvl = solve(oracle, LevelBundle(), stop=DualityGap(1e-2) | MaxIter(100))
    ans = oracle(lvl.weights, warm_start=lvl.alpha)
    method = ActiveSet()
    method.start(oracle, handover=Handover(weights=lvl.weights, answer=ans, lower=lvl.lower))
    rep = method.report()
    assert rep.need == "exact" and rep.warm_start is not None
    a = rep.warm_start
    # feasible: box and equality, exactly on the bounds where it should be
    assert a.min() >= 0 and a.max() <= oracle.C
    assert abs(oracle.y @ a) <= 1e-9 * oracle.C * a.size
    # an exact restricted optimum needs few SMO iterations to certify
    cert = oracle(method.ask(), warm_start=a)
    cold = oracle(method.ask())
    assert cert.n_solver_iter < cold.n_solver_iter


@st.composite
def factors(draw):
    """``B`` of shape (n, r): zero columns, repeated rows and a zero matrix reachable."""
    n, r = draw(st.integers(1, 12)), draw(st.integers(1, 6))
    B = draw(arrays(np.float64, (n, r), elements=st.one_of(st.just(0.0), reals(-2.0, 2.0))))
    n_dup = draw(st.integers(0, n // 2))
    if n_dup:
        B[n - n_dup:] = B[:n_dup]
    return B


@settings(max_examples=25)
@given(factors(), log_uniform(1e-3, 1e3))
def test_kernel_factor_reproduces_psd_blocks(B, scale):
    n = B.shape[0]
    B = B * scale
    K = B @ B.T
    F = kernel_factor(K)
    np.testing.assert_allclose(F @ F.T, K, atol=1e-9 * max(1.0, np.abs(K).max()))
    assert F.shape[1] <= n


def test_needs_an_oracle_that_describes_its_problem():
    with pytest.raises(TypeError, match="oracle.problem"):
        ActiveSet().start(SmoothQuadraticOracle.random(3, 3))


def test_bad_groups_fail_at_start():
    with pytest.raises(ValueError, match="groups"):
        ActiveSet(groups=[[0, 1]]).start(P.oracle())


def test_stops_itself_when_nothing_violates_the_certificate():
    res = solve(P.oracle(), ActiveSet(), stop=MaxOracleCalls(50))
    assert res.reason == "certified" and res.converged
    assert res.rel_gap <= 1e-7


L1_FIRST = ["level", "silp", "subgradient", "mirror", "working_set"]


@pytest.mark.parametrize("first", L1_FIRST)
def test_every_l1_method_chained_with_the_step_reaches_1e_6(first):
    """Each L1 method to a 1e-2 gap, then the exact step: certified 1e-6, at the cvxpy optimum."""
    exact = P.exact(Simplex(5), "l1")
    res = solve(P.oracle(), Chain(first, "active_set", switch=1e-2),
                stop=DualityGap(1e-6) | MaxOracleCalls(400))
    assert res.extra["stages"][1] == "ActiveSet"
    assert res.converged and 0 <= res.rel_gap <= 1e-6, (res.reason, res.rel_gap)
    assert abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)
    assert res.lower <= exact + 1e-6 * abs(exact)


def test_grouped_chain_from_mirror_descent_reaches_1e_6():
    dom = GroupSimplex(GROUPS, 5)
    exact = P.exact(dom, repr(GROUPS))
    res = solve(P.oracle(),
                Chain(MirrorDescent(groups=GROUPS), ActiveSet(groups=GROUPS), switch=1e-2),
                stop=DualityGap(1e-6) | MaxOracleCalls(400))
    assert res.converged and 0 <= res.rel_gap <= 1e-6, (res.reason, res.rel_gap)
    assert abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)


# ---- variables held at their upper bound -------------------------------------------------


@functools.cache
def _overlapping():
    """pima at small C: classes overlap, most support vectors sit at C."""
    return small_problem("pima", n=80, seed=1)


OVERLAP_C = 0.5


@pytest.mark.parametrize("groups", [None, GROUPS])
def test_many_points_at_C_are_held_and_the_chain_is_exact(groups):
    K, y = _overlapping()
    dom = Simplex(5) if groups is None else GroupSimplex(groups, 5)
    exact = exact_optimum(K, y, OVERLAP_C, dom)
    first = LevelBundle() if groups is None else MirrorDescent(groups=groups)
    res = solve(SVMDual(K, y, C=OVERLAP_C, tol=1e-3),
                Chain(first, ActiveSet(groups=groups), switch=1e-2),
                stop=DualityGap(1e-6) | MaxOracleCalls(400))
    assert res.extra["stages"][1] == "ActiveSet"
    assert res.converged and 0 <= res.rel_gap <= 1e-6, (res.reason, res.rel_gap)
    assert abs(res.value - exact) <= res.gap + 1e-6 * abs(exact)
    assert res.lower <= exact + 1e-6 * abs(exact)
    # most of the support was held at C, outside the cone program
    assert res.extra["n_fixed"] >= res.extra["n_variables"] // 2 > 0
    at_C = np.flatnonzero(res.alpha >= OVERLAP_C * (1 - 1e-9))
    assert at_C.size >= res.extra["n_fixed"]


def _wrongly_held():
    """An optimal handover whose alpha puts one free variable at C (and that variable)."""
    K, y = _overlapping()
    oracle = SVMDual(K, y, C=OVERLAP_C, tol=1e-8)
    opt = solve(oracle, ActiveSet(), stop=DualityGap(1e-8) | MaxIter(30))
    ans = oracle(opt.weights, warm_start=opt.alpha)
    a = np.array(ans.alpha)
    inside = np.flatnonzero((a > 0.2 * OVERLAP_C) & (a < 0.8 * OVERLAP_C))
    t = int(inside[0])
    a[t] = OVERLAP_C
    wrong = dataclasses.replace(ans, alpha=a)  # the other fields as they were
    return oracle, opt, Handover(weights=opt.weights, answer=wrong), t


def test_a_wrongly_held_point_is_freed_by_the_kkt_check():
    oracle, opt, handover, t = _wrongly_held()
    method = ActiveSet()
    method.start(oracle, handover=handover)
    warm = method.report().warm_start
    assert warm[t] < OVERLAP_C * (1 - 1e-6)  # freed before any oracle call
    res = solve(oracle, _Resumed(ActiveSet(), handover), stop=DualityGap(1e-7) | MaxIter(30))
    assert res.converged and abs(res.value - opt.value) <= res.gap + opt.gap


def test_a_wrongly_held_point_is_freed_by_the_certificate(monkeypatch):
    """With the KKT check switched off, SMO's certifying call moves the point off C,
    the next round frees it, and the step still ends at the optimum."""
    oracle, opt, handover, t = _wrongly_held()
    monkeypatch.setattr(active_set, "_KKT_RTOL", np.inf)
    method = ActiveSet()
    method.start(oracle, handover=handover)
    warm = method.report().warm_start
    assert warm[t] == OVERLAP_C  # still held
    w = method.ask()
    cert = oracle(w, warm_start=warm)
    assert cert.alpha[t] < OVERLAP_C  # SMO moves it off the bound
    method.tell(w, cert)
    assert method.report().warm_start[t] < OVERLAP_C * (1 - 1e-6)  # freed, solved again
    res = solve(oracle, _Resumed(ActiveSet(), handover), stop=DualityGap(1e-7) | MaxIter(30))
    assert res.extra["rounds"] >= 2
    assert res.converged and abs(res.value - opt.value) <= res.gap + opt.gap
