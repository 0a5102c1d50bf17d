"""The cutting-plane LP kept in one HiGHS model across steps, and ECOS's direct call.

:class:`~mklopt.methods._highs.CutLP` must give what the one-shot call gives
(the same optimum and multipliers that certify it) whatever the order in
which cuts arrive and kernels enter or leave the working set, and hand the
solve back to the one-shot path whenever HiGHS misbehaves.
"""

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mklopt import solve
from mklopt.methods import CuttingPlane, LevelBundle, _highs
from mklopt.methods import _cut_model as cm
from mklopt.methods._cut_model import CutModel
from mklopt.stopping import DualityGap, MaxIter
from tests._strategies import piecewise_linear_oracles
from tests._toy_oracles import SmoothQuadraticOracle

needs_highs = pytest.mark.skipif(not _highs.available(), reason="SciPy without HiGHS's bindings")


def _one_shot(s, Q, W):
    """The restricted LP through solve_dense_lp, as before the warm model: (value, w, lam)."""
    mw, J = W.size, s.size
    c = np.r_[np.zeros(mw), 1.0]
    A_ub = np.c_[-0.5 * Q[:, W], -np.ones(J)]
    A_eq = np.r_[np.ones(mw), 0.0][None, :]
    lb = np.r_[np.zeros(mw), -np.inf]
    out = _highs.solve_dense_lp(c, A_ub, -s, A_eq, np.ones(1), lb, np.full(mw + 1, np.inf))
    if out is None:  # the one-shot answer failed its check: linprog, as CutModel does
        from scipy.optimize import linprog

        res = linprog(c, A_ub=A_ub, b_ub=-s, A_eq=A_eq, b_eq=[1.0],
                      bounds=list(zip(lb, [None] * (mw + 1))), method="highs-ds")
        assert res.status == 0
        return float(res.fun), res.x[:mw], np.maximum(-res.ineqlin.marginals, 0.0)
    value, x, marg = out
    return value, x[:mw], np.maximum(-marg, 0.0)


@st.composite
def cut_sequences(draw):
    """Cuts arriving one by one, each with the working set to solve on then."""
    oracle = draw(piecewise_linear_oracles(min_m=1, max_m=12, min_pieces=1, max_pieces=25))
    m = oracle.n_kernels
    sets = []
    for _ in oracle.s:
        mask = np.array(draw(st.lists(st.booleans(), min_size=m, max_size=m)))
        if not mask.any():
            mask[draw(st.integers(0, m - 1))] = True
        sets.append(np.flatnonzero(mask))
    return oracle.s, oracle.Q, sets


@needs_highs
@settings(max_examples=40, deadline=None)
@given(cut_sequences())
def test_warm_lp_matches_one_shot_on_drawn_cut_models(seq):
    # Rows added one cut at a time, kernels opened and closed at random: at
    # every step the optimum equals the one-shot solve's, the point lies on
    # the simplex of W (0 elsewhere) and the multipliers certify the optimum.
    s_all, Q_all, sets = seq
    m = Q_all.shape[1]
    lp = _highs.CutLP(m)
    for J, W in enumerate(sets, start=1):
        s, Q = s_all[:J], Q_all[:J]
        out = lp.solve(s, Q, W, float(np.abs(Q[:, W]).max()), float(np.abs(s).max()))
        assert out is not None, "the warm model failed on a well-posed LP"
        value, w, lam = out
        v_ref, _, lam_ref = _one_shot(s, Q, W)
        scale = 1.0 + abs(v_ref)
        assert value == pytest.approx(v_ref, abs=1e-9 * scale)
        assert w.shape == (m,) and np.all(w[np.setdiff1d(np.arange(m), W)] == 0.0)
        assert np.all(w >= -1e-12) and abs(w.sum() - 1.0) <= 1e-9
        assert np.max(s - 0.5 * Q @ w) == pytest.approx(v_ref, abs=1e-8 * scale)
        for mult in (lam, lam_ref):  # dual value on W: lam's - max_{k in W} (Q'lam)_k / 2
            assert np.all(mult >= 0.0) and mult.sum() > 0
            mu = mult / mult.sum()
            d = mu @ s - 0.5 * np.max((Q[:, W]).T @ mu)
            assert d == pytest.approx(v_ref, abs=1e-8 * scale)
    assert lp.n_failures == 0


@needs_highs
@settings(max_examples=25, deadline=None)
@given(piecewise_linear_oracles(min_m=1, max_m=15, min_pieces=1, max_pieces=30))
def test_minimize_with_warm_model_gives_the_one_shot_optimum(oracle):
    # CutModel.minimize through the warm model, cuts added one at a time,
    # against a model whose every LP goes the one-shot way.
    m = oracle.n_kernels
    warm, cold = CutModel(m), CutModel(m)
    cold._lp.solve = lambda *a: None  # the one-shot path every time
    for s, q in zip(oracle.s, oracle.Q):
        warm.add(s, q)
        cold.add(s, q)
        lw, ww = warm.minimize()
        lc, wc = cold.minimize()
        scale = 1.0 + abs(lc)
        assert lw == pytest.approx(lc, abs=1e-8 * scale)
        assert warm.value(ww) == pytest.approx(cold.value(wc), abs=1e-8 * scale)
        assert ww.min() >= 0.0 and abs(ww.sum() - 1.0) <= 1e-12
    assert warm._lp.n_failures == 0


class _Misbehaving:
    """A HiGHS object that fails in a chosen way, else passes every call through."""

    def __init__(self, hs, how):
        self._hs, self.how = hs, how

    def __getattr__(self, name):
        return getattr(self._hs, name)

    def run(self):
        if self.how == "raise":
            raise RuntimeError("HiGHS broke")
        return self._hs.run()

    def getModelStatus(self):
        if self.how == "status":
            return _highs._h.HighsModelStatus.kNotset
        return self._hs.getModelStatus()

    def getSolution(self):
        sol = self._hs.getSolution()
        if self.how == "infeasible":  # weights off the simplex
            sol.col_value = [v + 0.25 for v in sol.col_value]
        elif self.how == "nan":
            sol.row_dual = [np.nan] * len(sol.row_dual)
        elif self.how == "sign":  # multipliers of the wrong sign
            sol.row_dual = [-v + 1.0 for v in sol.row_dual]
        return sol


@needs_highs
@pytest.mark.parametrize("how", ["raise", "status", "infeasible", "nan", "sign"])
def test_a_misbehaving_binding_falls_back_to_the_one_shot_path(monkeypatch, how):
    oracle = SmoothQuadraticOracle.random(6, dim=5, seed=1)
    ref = solve(oracle, LevelBundle(), stop=DualityGap(1e-6) | MaxIter(60))
    made = []
    real = _highs._new_highs

    def new_highs():
        hs = _Misbehaving(real(), how)
        made.append(hs)
        return hs

    monkeypatch.setattr(_highs, "_new_highs", new_highs)
    method = LevelBundle()
    oracle = SmoothQuadraticOracle.random(6, dim=5, seed=1)
    res = solve(oracle, method, stop=DualityGap(1e-6) | MaxIter(60))
    lp = method._mb_run.state.model._lp
    # Every warm answer (at least one per step) was discarded, and the model
    # dropped and rebuilt each time ...
    assert lp.n_failures >= res.n_oracle_calls and lp._hs is None
    assert len(made) == lp.n_failures
    # ... and the run is the one-shot path's: same bounds to solver tolerance.
    assert res.converged and ref.converged
    assert res.value == pytest.approx(ref.value, rel=1e-6)
    assert res.lower <= ref.value + 1e-9 and ref.lower <= res.value + 1e-9


@needs_highs
def test_the_warm_model_recovers_after_a_failure(monkeypatch):
    model = CutModel(4)
    rng = np.random.default_rng(0)
    for _ in range(3):
        model.add(rng.uniform(5, 6), rng.uniform(0.5, 3, 4))
    model.minimize()
    hs_before = model._lp._hs
    monkeypatch.setattr(model._lp, "_hs", _Misbehaving(hs_before, "raise"))
    lower_f, w_f = model.minimize()  # the warm answer fails: one-shot
    assert model._lp.n_failures == 1 and model._lp._hs is None
    model.add(5.5, np.array([1.0, 2.0, 0.5, 1.5]))
    lower, w = model.minimize()  # rebuilt cold, with every cut
    assert model._lp._hs is not None and model._lp._rows == model.n_cuts == 4
    assert model._lp.n_failures == 1
    cold = CutModel(4)
    for s, q in zip(model.s, model.Q):
        cold.add(s, q)
    cold._lp.solve = lambda *a: None
    assert lower == pytest.approx(cold.minimize()[0], abs=1e-9)


def test_without_the_bindings_the_warm_model_steps_aside(monkeypatch):
    monkeypatch.setattr(_highs, "_h", None)
    lp = _highs.CutLP(3)
    assert lp.solve(np.ones(1), np.ones((1, 3)), np.arange(3), 1.0, 1.0) is None
    model = CutModel(3)
    model.add(5.0, np.array([1.0, 2.0, 3.0]))
    model.add(5.0, np.array([3.0, 1.0, 1.0]))
    lower, w = model.minimize()  # linprog
    assert abs(w.sum() - 1.0) <= 1e-12 and lower == pytest.approx(model.value(w), abs=1e-9)


@needs_highs
def test_highs_objects_are_reused_and_runs_stay_identical():
    # A collected model's HiGHS object goes back to the pool; a run on a
    # reused object repeats a run on a fresh one bit for bit.
    def run(meth):
        oracle = SmoothQuadraticOracle.random(9, dim=6, seed=4)
        res = solve(oracle, meth(), stop=DualityGap(1e-8) | MaxIter(40))
        return np.array([p.weights for p in res.history]), res.lower

    for meth in (LevelBundle, CuttingPlane):
        _highs._POOL.clear()
        fresh = run(meth)
        gc.collect()
        assert len(_highs._POOL) >= 1
        reused = run(meth)
        np.testing.assert_array_equal(reused[0], fresh[0])
        assert reused[1] == fresh[1]


@needs_highs
def test_a_failed_highs_object_is_not_reused():
    _highs._POOL.clear()
    lp = _highs.CutLP(2)
    assert lp.solve(np.ones(1), np.ones((1, 2)), np.arange(2), 1.0, 1.0) is not None
    lp.reset()  # what a failure does
    del lp
    gc.collect()
    assert _highs._POOL == []


@settings(max_examples=20, deadline=None)
@given(piecewise_linear_oracles(min_m=1, max_m=10, min_pieces=1, max_pieces=15),
       st.floats(0.05, 0.95))
def test_direct_ecos_call_equals_ecos_solve(oracle, lam):
    # The projection's data go to ECOS's C extension as CSC arrays; through
    # ecos.solve with scipy.sparse matrices the answer is the same.
    m = oracle.n_kernels
    model = CutModel(m)
    for s, q in zip(oracle.s, oracle.Q):
        model.add(s, q)
    lower, w_hat = model.minimize()
    w0 = np.full(m, 1.0 / m)
    level = lam * max(model.value(w0), lower) + (1 - lam) * lower
    W = np.arange(m)
    G, h, A, b, c, dims, _ = model._level_socp(w0, level, W)
    G_sp, A_sp = G.to_scipy(), A.to_scipy()
    direct = cm.solve_ecos((c, G, h, dims, A, b), (cm._ECOS_OPTS,), "test")
    via = cm.solve_ecos((c, G_sp, h, dims, A_sp, b), (cm._ECOS_OPTS,), "test")
    assert (direct is None) == (via is None)
    if direct is not None:
        np.testing.assert_allclose(direct["x"], via["x"], rtol=0, atol=1e-12)
        np.testing.assert_allclose(direct["z"], via["z"], rtol=0, atol=1e-12)
        # and the matrix is the one the old scipy.sparse construction gave
        dense = G_sp.toarray()
        assert dense.shape == (2 * m + model.n_cuts + 1, m + 1)
        np.testing.assert_array_equal(dense[:m, :m], -np.eye(m))
        np.testing.assert_array_equal(dense[m + model.n_cuts + 1:, :m], -np.eye(m))
        assert dense[m + model.n_cuts, m] == -1.0


def test_projection_without_the_c_extension(monkeypatch):
    # Without ECOS's C extension at hand the CSC arrays go through ecos.solve.
    model = CutModel(3)
    model.add(5.0, np.array([1.0, 2.0, 3.0]))
    model.add(5.2, np.array([3.0, 1.0, 2.0]))
    lower, w_hat = model.minimize()
    w0 = np.array([0.6, 0.3, 0.1])
    level = 0.5 * (model.value(w0) + lower)
    ref = model.project_level(w0, level, w_hat)
    monkeypatch.setattr(cm, "_ecos", None)
    np.testing.assert_allclose(model.project_level(w0, level, w_hat), ref, atol=1e-12)


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_a_used_method_can_still_be_copied(copier):
    # The HiGHS object is not copied: the copy starts cold and goes on from
    # the same cuts to the same optimum.
    import copy
    import pickle

    oracle = SmoothQuadraticOracle.random(7, dim=5, seed=2)
    method = LevelBundle()
    solve(oracle, method, stop=MaxIter(6))
    model = method._mb_run.state.model
    twin = pickle.loads(pickle.dumps(model)) if copier == "pickle" else copy.deepcopy(model)
    assert twin._lp._hs is None and twin.n_cuts == model.n_cuts
    lower, w = model.minimize()
    lower_t, w_t = twin.minimize()
    assert lower_t == pytest.approx(lower, abs=1e-9 * (1 + abs(lower)))
    assert twin.value(w_t) == pytest.approx(model.value(w), abs=1e-8 * (1 + abs(lower)))
    assert twin._lp._rows == twin.n_cuts
    again = pickle.loads(pickle.dumps(method)) if copier == "pickle" else copy.deepcopy(method)
    res = solve(SmoothQuadraticOracle.random(7, dim=5, seed=2), again,
                stop=DualityGap(1e-6) | MaxIter(60))
    assert res.converged
