import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mklopt import solve
from mklopt.domains import Simplex
from mklopt.methods import CuttingPlane, get_method
from mklopt.methods._cut_model import CutModel
from mklopt.stopping import BoundGap, DualityGap, MaxIter
from tests._strategies import piecewise_linear_oracles, simplex_points
from tests._toy_oracles import PiecewiseLinearOracle
from tests.methods import _svm_problems as P


def test_registered_under_both_names():
    assert get_method("cutting_plane") is CuttingPlane
    assert get_method("silp") is CuttingPlane


@pytest.mark.parametrize("seed", range(5))
def test_reaches_exact_lp_optimum_within_gap(seed):
    oracle = PiecewiseLinearOracle.random(n_kernels=6, n_pieces=9, seed=seed)
    exact = oracle.exact_l1_optimum()
    res = solve(oracle, CuttingPlane(), stop=BoundGap(1e-10) | MaxIter(200))
    assert res.converged, res.reason
    assert res.lower <= exact + 1e-9 <= res.value + 2e-9
    assert abs(res.value - exact) <= max(res.gap, res.value - res.lower) + 1e-9
    assert res.value - exact <= 1e-8


@settings(max_examples=20)
@given(piecewise_linear_oracles())
def test_queries_feasible_bounds_bracket_optimum(oracle):
    m = oracle.n_kernels
    exact = oracle.exact_l1_optimum()
    res = solve(oracle, CuttingPlane(), stop=BoundGap(1e-9) | MaxIter(60))
    dom = Simplex(m)
    lows = [p.lower for p in res.history]
    for p in res.history:
        assert dom.contains(p.weights, tol=1e-9)
        assert p.gap >= 0
        assert p.lower <= exact + 1e-8 and p.upper >= exact - 1e-8
    assert all(b >= a for a, b in zip(lows, lows[1:]))


def test_exact_optimum_on_small_svm():
    exact = P.exact(Simplex(5), "l1")
    res = solve(P.oracle(), CuttingPlane(), stop=DualityGap(1e-6) | MaxIter(200))
    # Converged on the certified gap, so the gap below is the tolerance actually
    # reached (a method that claimed convergence early would fail here).
    assert res.converged and 0 <= res.rel_gap <= 1e-6, (res.reason, res.rel_gap)
    assert res.gap >= 0
    assert abs(res.value - exact) <= res.gap + P.slack(exact)
    assert res.lower <= exact + P.slack(exact)


def test_start_twice_same_run():
    oracle = PiecewiseLinearOracle.random(5, 7, seed=3)
    m = CuttingPlane()
    r1 = solve(oracle, m, stop=MaxIter(15))
    r2 = solve(oracle, m, stop=MaxIter(15))
    np.testing.assert_array_equal([p.weights for p in r1.history], [p.weights for p in r2.history])


# ---- the shared cut model ------------------------------------------------------
def test_cut_model_grows_and_lp_matches_reference():
    oracle = PiecewiseLinearOracle.random(n_kernels=7, n_pieces=40, seed=2)
    model = CutModel(7, capacity=2)
    for s, q in zip(oracle.s, oracle.Q):
        model.add(s, q)
    assert model.n_cuts == 40 and model.Q.shape == (40, 7)
    lower, w = model.minimize()
    exact = oracle.exact_l1_optimum()
    assert lower == pytest.approx(exact, abs=1e-9)
    assert Simplex(7).contains(w, tol=1e-12)
    assert model.value(w) == pytest.approx(exact, abs=1e-8)


@st.composite
def cuts_and_start(draw):
    oracle = draw(piecewise_linear_oracles(min_m=2, max_m=9, min_pieces=1, max_pieces=12))
    return oracle.s, oracle.Q, draw(simplex_points(oracle.n_kernels))


@settings(max_examples=25)
@given(cuts_and_start(), st.floats(0.05, 0.95))
def test_level_projection_matches_cvxpy(cuts, lam):
    import cvxpy as cp

    s, Q, w0 = cuts
    m = Q.shape[1]
    model = CutModel(m)
    for sj, qj in zip(s, Q):
        model.add(sj, qj)
    lower, w_hat = model.minimize()
    upper = max(model.value(w0), lower)
    level = lam * upper + (1 - lam) * lower
    w = model.project_level(w0, level, w_hat)
    assert Simplex(m).contains(w, tol=1e-12)
    assert model.value(w) <= level + 1e-7 * max(1, abs(level))
    x = cp.Variable(m)
    cons = [x >= 0, cp.sum(x) == 1, model.s - 0.5 * model.Q @ x <= level]
    cp.Problem(cp.Minimize(cp.sum_squares(x - w0)), cons).solve(solver=cp.CLARABEL)
    assert np.sum((w - w0) ** 2) <= np.sum((x.value - w0) ** 2) + 1e-6


def test_level_projection_falls_back_when_level_is_unreachable():
    model = CutModel(3)
    model.add(5.0, np.array([1.0, 2.0, 3.0]))
    lower, w_hat = model.minimize()
    # a level below the model minimum: no point qualifies; the LP point is returned
    w = model.project_level(np.full(3, 1 / 3), lower - 1.0, w_hat)
    np.testing.assert_allclose(w, w_hat, atol=1e-9)
    assert Simplex(3).contains(w)


def test_cut_model_rejects_bad_cuts():
    model = CutModel(2)
    with pytest.raises(ValueError, match="shape"):
        model.add(1.0, np.ones(3))
    with pytest.raises(ValueError, match="finite"):
        model.add(np.nan, np.ones(2))
    with pytest.raises(RuntimeError, match="no cuts"):
        model.minimize()


@settings(max_examples=25)
@given(piecewise_linear_oracles(min_m=2, max_m=12, min_pieces=1, max_pieces=20),
       st.sampled_from([1e-9, 1e-6, 1e-3, 1.0]))
def test_minimize_within_precision_brackets_the_lp_minimum(oracle, precision):
    # With precision > 0 the LP may be answered by ECOS: the bound stays a
    # bound and the point is within `precision` of the minimum.
    m = oracle.n_kernels
    model = CutModel(m)
    for s, q in zip(oracle.s, oracle.Q):
        model.add(s, q)
    exact = CutModel(m)
    for s, q in zip(oracle.s, oracle.Q):
        exact.add(s, q)
    lp_min, _ = exact.minimize()
    lower, w = model.minimize(precision=precision)
    slack = 1e-9 * max(1.0, abs(lp_min))
    assert Simplex(m).contains(w, tol=1e-12)
    assert lower <= lp_min + slack
    assert lp_min - slack <= model.value(w) <= lower + precision + slack
    # ECOS's own answer (the path precision > 0 tries first) is accurate too.
    sol = model._column_generation(model._restricted_lp_ecos)
    assert sol is not None
    lower_e, w_e = sol
    assert Simplex(m).contains(w_e, tol=1e-12)
    assert lower_e <= lp_min + slack
    assert model.value(w_e) - lp_min <= 1e-6 * max(1.0, abs(lp_min))


@settings(max_examples=30)
@given(piecewise_linear_oracles(min_m=1, max_m=15, min_pieces=1, max_pieces=30))
def test_direct_highs_path_gives_linprogs_optimum(oracle):
    # The cut LP straight to HiGHS's bindings and through linprog: the same
    # optimal value, a feasible minimiser, and multipliers certifying it.
    from mklopt.methods import _highs

    m = oracle.n_kernels
    model = CutModel(m)
    for s, q in zip(oracle.s, oracle.Q):
        model.add(s, q)
    W = np.arange(m)
    mp = pytest.MonkeyPatch()
    with mp.context() as ctx:
        ctx.setattr(_highs, "_h", None)  # force linprog
        assert _highs.solve_dense_lp(np.ones(1), np.ones((1, 1)), np.ones(1), np.ones((1, 1)),
                                     np.ones(1), np.zeros(1), np.ones(1)) is None
        v_ref, x_ref, lam_ref = model._restricted_lp_highs(W)
    v, x, lam = model._restricted_lp_highs(W)
    scale = 1.0 + abs(v_ref)
    assert v == pytest.approx(v_ref, abs=1e-9 * scale)
    assert Simplex(m).contains(x, tol=1e-9)
    assert model.value(x) == pytest.approx(v_ref, abs=1e-8 * scale)
    # Either set of multipliers is a dual certificate of the same value.
    for mult in (lam, lam_ref):
        assert np.all(mult >= 0.0)
        assert model.dual_value(mult) == pytest.approx(v_ref, abs=1e-8 * scale)


def test_direct_highs_answers_are_checked():
    from mklopt.methods import _highs

    c = np.array([0.0, 0.0, 1.0])
    A_ub = np.array([[-1.0, 0.0, -1.0], [0.0, -2.0, -1.0]])
    b_ub = np.array([-1.0, -1.0])
    A_eq, b_eq = np.array([[1.0, 1.0, 0.0]]), np.ones(1)
    lb, ub = np.array([0.0, 0.0, -np.inf]), np.array([np.inf, np.inf, np.inf])
    # min over the simplex of max(1 - w1, 1 - 2 w2): w = (2/3, 1/3), value 1/3
    x, marg, value = np.array([2 / 3, 1 / 3, 1 / 3]), np.array([-2 / 3, -1 / 3]), 1 / 3
    out = _highs.solve_dense_lp(c, A_ub, b_ub, A_eq, b_eq, lb, ub)
    if _highs.available():  # SciPy ships HiGHS's bindings (private; SciPy >= 1.15)
        assert out[0] == pytest.approx(value, abs=1e-12)
        np.testing.assert_allclose(out[1], x, atol=1e-12)
        np.testing.assert_allclose(out[2], marg, atol=1e-12)
    else:  # the caller falls back to linprog
        assert out is None
    ok = (c, A_ub, b_ub, A_eq, b_eq, lb, ub)
    assert _highs._answer_ok(*ok, x, marg, value)
    assert not _highs._answer_ok(*ok, x + np.array([0.1, 0.0, 0.0]), marg, value)  # infeasible
    assert not _highs._answer_ok(*ok, x, -marg, value)  # wrong-signed multipliers
    assert not _highs._answer_ok(*ok, x, marg, value + 1e-3)  # value is not c'x
    assert not _highs._answer_ok(*ok, np.r_[x[:2], np.nan], marg, value)
