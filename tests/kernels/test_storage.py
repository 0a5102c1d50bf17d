"""Every storage against the dense one: rows, q, blocks, oracle answers, models.

DESIGN section 8: the kernels may be stored densely, computed on the fly from
the features, or memory-mapped from disk; the oracles, the weak learners and
prediction read them through the same verbs, so every storage must give the
dense answers (1e-10 relative for exact storages), and the row-cached SMO
must give the whole-matrix SMO's answer to solver tolerance, even with a
cache that cannot hold two rows.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import KernelBank, MKBoostClassifier, MKLClassifier, solve
from mklopt._jit import gram
from mklopt.kernels import grid, linear, poly, rbf
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.persist import load_model, save_model
from mklopt.stopping import DualityGap, MaxIter, NoPointError, TimeLimit
from tests import _reference as twin


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@st.composite
def problems(draw, max_n=40):
    """Features with repeated values (so some groups become tables), specs, weights."""
    n = draw(st.integers(70, 90)) if draw(st.booleans()) else draw(st.integers(3, max_n))
    d = draw(st.integers(1, 4))
    X = draw(arrays(np.float64, (n, d), elements=st.floats(-2, 2, width=32)))
    for f in range(min(d, 3)):
        if draw(st.booleans()):  # ordinal features with few values: table groups, merged
            X[:, f] = draw(arrays(np.float64, n, elements=st.sampled_from([0.0, 1.0, 2.0, 5.0])))
    feats = st.one_of(st.none(), st.lists(st.integers(0, d - 1), min_size=1, max_size=2,
                                          unique=True))
    one = st.one_of(st.builds(rbf, st.floats(0.3, 3.0), feats),
                    st.builds(poly, st.integers(1, 3), feats),
                    st.builds(linear, feats))
    specs = draw(st.lists(one, min_size=1, max_size=8))
    w = draw(arrays(np.float64, len(specs), elements=st.sampled_from([0.0, 0.2, 1.0, 3.0])))
    if not w.any():
        w[0] = 1.0
    return X, specs, w


def banks(X, specs, tmp_path=None):
    """The same kernels under every exact storage."""
    dense = KernelBank.from_specs(X, specs, storage="dense")
    out = {
        "dense": dense,
        "on_the_fly": KernelBank.from_specs(X, specs, storage="on_the_fly"),
        "matrices": KernelBank.from_matrices(dense.K.copy(), check=False),
    }
    if tmp_path is not None:
        path = tmp_path / "K.npy"
        raw = np.stack([dense.K[k] * dense.scales[k] for k in range(dense.n_kernels)])
        np.save(path, raw)
        mm = np.load(path, mmap_mode="r")
        out["memmap_trace"] = KernelBank.from_matrices(mm, normalize="trace", check=False)
    return out


# ----------------------------------------------------------------- the verbs
@settings(max_examples=60, deadline=None)
@given(problems(), st.data())
def test_every_storage_gives_the_dense_verbs(problem, data):
    _check_verbs(problem, data)


@settings(max_examples=30, deadline=None)
@given(problems(), st.data())
def test_every_storage_gives_the_dense_verbs_through_products(problem, data):
    """The same with every direct group through the BLAS products (tables stay tables)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(gram, "WIDE_MIN", 1)
        mp.setattr(gram, "WIDE_PER_KERNEL", 0)
        _check_verbs(problem, data)


def _check_verbs(problem, data):
    X, specs, w = problem
    n = X.shape[0]
    bs = banks(X, specs)
    ref = bs["dense"]
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6)))
    v = data.draw(arrays(np.float64, n, elements=st.floats(-2, 2, width=32)))
    S = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))))
    ks = np.array(data.draw(st.lists(st.integers(0, len(specs) - 1), min_size=1, max_size=4)))
    for name, b in bs.items():
        assert rel(b.rows(w, idx), ref.combine(w)[idx]) <= 1e-10, name
        assert rel(b.combine(w), ref.combine(w)) <= 1e-10, name
        assert rel(b.diag(w), np.diag(ref.combine(w))) <= 1e-10, name
        q_ref = ref.quad_forms(v, S)
        scale = max(np.abs(q_ref).max(), float(v[S] @ v[S]) * 1e-3)
        assert np.abs(b.quad_forms(v, S) - q_ref).max() <= 1e-10 * scale, name
        assert np.abs(b.quad_forms(v, S, kernels=ks) - q_ref[ks]).max() <= 1e-10 * scale, name
        blk = b.blocks(ks, idx, S)
        assert rel(blk, ref.K[ks][:, idx][:, :, S]) <= 1e-10, name


def test_memory_mapped_matrices_are_read_without_a_copy(tmp_path, rng):
    X = rng.normal(size=(60, 3))
    specs = [rbf(1.0), rbf(3.0), poly(2)]
    dense = KernelBank.from_specs(X, specs)
    for dtype in (np.float64, np.float32):
        raw = np.stack([dense.K[k] * dense.scales[k] for k in range(3)]).astype(dtype)
        np.save(tmp_path / "K.npy", raw)
        mm = np.load(tmp_path / "K.npy", mmap_mode="r")
        for normalize in (None, "trace"):
            b = KernelBank.from_matrices(mm, normalize=normalize)
            assert b.storage.K is mm  # the map itself: nothing copied into RAM
            assert b.storage.K.dtype == dtype and not b.storage.K.flags.writeable
            want = dense.K if normalize else raw.astype(float)
            w = np.array([0.2, 0.5, 0.3])
            tol = 1e-10 if dtype == np.float64 else 1e-6
            assert rel(b.combine(w), np.tensordot(w, want, 1)) <= tol
        assert np.array_equal(np.load(tmp_path / "K.npy"), raw)  # the file is never written
    with pytest.raises(AttributeError, match="scales"):
        _ = KernelBank.from_matrices(mm, normalize="trace").K


# -------------------------------------------------------------- the oracle
def pd_problem(rng, n, d=3):
    X = rng.normal(size=(n, d))
    X[:, -1] = rng.integers(0, 3, size=n)  # an ordinal feature
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n) > 0.4, 1.0, -1.0)
    # Gaussian kernels only: their sum is positive definite, alpha is unique.
    specs = [rbf(0.5), rbf(2.0), rbf(1.0, [0]), rbf(1.0, [d - 1]), rbf(4.0, [1, d - 1])]
    return X, y, specs


@pytest.mark.parametrize("seed", range(3))
def test_oracle_answers_agree_across_storages(seed, tmp_path):
    rng = np.random.default_rng(seed)
    X, y, specs = pd_problem(rng, 90)
    w = np.array([0.3, 0.0, 0.4, 0.2, 0.1])
    bs = banks(X, specs, tmp_path)
    ref = SVMDual(bs["dense"], y, C=10.0, tol=1e-10)(w)
    for name, b in bs.items():
        a = SVMDual(b, y, C=10.0, tol=1e-10)(w)
        assert abs(a.value - ref.value) <= 1e-10 * abs(ref.value), name
        assert rel(a.q, ref.q) <= 1e-8, name
        np.testing.assert_allclose(a.alpha, ref.alpha, atol=1e-7 * 10.0, err_msg=name)
        assert a.bias == pytest.approx(ref.bias, abs=1e-6), name


@pytest.mark.parametrize("cache_size", [0.0, 0.002, 0.05, 10.0])
def test_row_cached_smo_equals_the_whole_matrix_smo(cache_size, rng):
    # n = 300: a row is 2.4 kB, so 0.002 MB holds no row and 0.05 MB about 20.
    X, y, specs = pd_problem(rng, 300)
    w = np.array([0.3, 0.0, 0.4, 0.2, 0.1])
    whole = SVMDual(KernelBank.from_specs(X, specs), y, C=5.0, tol=1e-9)
    bank = KernelBank.from_specs(X, specs, storage="on_the_fly", cache_size=cache_size)
    rows = SVMDual(bank, y, C=5.0, tol=1e-9)
    rows._solver.block_size = 32  # many blocks on a small problem
    if cache_size < 10.0:
        rows._solver = type(rows._solver)(bank, rows.problem, block_size=32)
        assert not rows._solver.whole_matrix
    a0, b0 = whole(w), rows(w)
    assert abs(b0.value - a0.value) <= 1e-8 * abs(a0.value)
    np.testing.assert_allclose(b0.alpha, a0.alpha, atol=1e-6 * 5.0)
    assert b0.bias == pytest.approx(a0.bias, abs=1e-6)
    # Warm starts keep working across calls at new weights.
    w2 = np.array([0.1, 0.5, 0.1, 0.2, 0.1])
    a1 = whole(w2, warm_start=a0.alpha)
    b1 = rows(w2, warm_start=b0.alpha)
    assert abs(b1.value - a1.value) <= 1e-8 * abs(a1.value)
    np.testing.assert_allclose(b1.alpha, a1.alpha, atol=1e-6 * 5.0)
    stats = rows.last_stats
    assert stats.n_iter > 0 and stats.rows_computed > 0
    if cache_size == 0.05:
        assert stats.rows_cached > 0  # the warm start's rows were reused by SMO


def test_on_the_fly_tables_are_reused_at_the_same_weights(rng):
    """The row path reads many blocks at one weight vector: the merged tables are built once."""
    X = rng.integers(0, 4, size=(80, 3)).astype(float)
    specs = [rbf(1.0, [0]), rbf(2.0, [1]), poly(2, [2]), rbf(1.0)]
    otf = KernelBank.from_specs(X, specs, storage="on_the_fly")
    dense = KernelBank.from_specs(X, specs, storage="dense")
    st_ = otf.storage
    w = np.array([0.5, 1.0, 0.2, 0.3])
    first = st_._active_tables(w)
    assert first[0] is not None and st_._active_tables(w.copy())[1] is first[1]
    w2 = w.copy()
    w2[0] = 0.0
    assert st_._active_tables(w2)[1] is not first[1]
    for ww in (w, w2, w):
        assert rel(otf.rows(ww, np.arange(0, 80, 7)), dense.combine(ww)[::7]) <= 1e-10
        assert rel(otf.combine(ww), dense.combine(ww)) <= 1e-10


def test_row_path_value_only_answers(rng):
    X, y, specs = pd_problem(rng, 200)
    bank = KernelBank.from_specs(X, specs, storage="on_the_fly", cache_size=0.1)
    o = SVMDual(bank, y, C=3.0, tol=1e-9)
    assert not o._solver.whole_matrix
    w = np.full(5, 0.2)
    full = o(w)
    vo = o(w, need_q=False)
    assert vo.q is None and abs(vo.value - full.value) <= 1e-9 * abs(full.value)


# --------------------------------------------------------- runs and models
def test_interrupted_on_the_fly_run_returns_its_best_point(rng):
    X, y, specs = pd_problem(rng, 150)
    bank = KernelBank.from_specs(X, specs, storage="on_the_fly", cache_size=0.05)
    oracle = SVMDual(bank, y, C=10.0, tol=1e-6)
    calls = []

    def interrupt(progress):
        calls.append(progress.upper)
        if len(calls) == 3:
            raise KeyboardInterrupt

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = solve(oracle, LevelBundle(), stop=DualityGap(1e-12) | MaxIter(100),
                    callback=interrupt)
    assert res.reason == "interrupted" and not res.converged
    assert res.n_oracle_calls == 3 and res.value == pytest.approx(min(calls))
    # A time limit stops the first call itself: no point certified, said so.
    with pytest.raises(NoPointError, match="time_limit"):
        solve(oracle, LevelBundle(), stop=DualityGap(1e-12) | TimeLimit(1e-9))


@pytest.mark.parametrize("storage", ["dense", "on_the_fly"])
def test_models_predict_and_round_trip_for_every_storage(storage, tmp_path, rng):
    X, y, specs = pd_problem(rng, 120)
    # Solved to a relative gap of 1e-8 (the exact step certifies it), so that
    # both storages reach the one optimum: at the default 1e-2 the storages'
    # roundings may send Level along other steps to other certified points
    # (7e-5 apart in the decisions under OpenBLAS's Prescott kernel).
    ref = MKLClassifier(kernels=specs, C=10.0, normalize="trace", storage="dense",
                        tol=1e-8).fit(X, y)
    clf = MKLClassifier(
        kernels=specs, C=10.0, normalize="trace", storage=storage, cache_size=0.2, tol=1e-8
    ).fit(X, y)
    Xt = rng.normal(size=(40, X.shape[1]))
    np.testing.assert_allclose(clf.decision_function(Xt), ref.decision_function(Xt), atol=1e-5)
    path = tmp_path / "m.npz"
    save_model(clf, path)
    back, _ = load_model(path)
    assert back.get_params()["storage"] == storage
    np.testing.assert_array_equal(back.decision_function(Xt), clf.decision_function(Xt))
    boost = MKBoostClassifier(kernels=specs, n_rounds=5, random_state=0, storage=storage)
    boost_ref = MKBoostClassifier(kernels=specs, n_rounds=5, random_state=0, storage="dense")
    np.testing.assert_allclose(boost.fit(X, y).decision_function(Xt),
                               boost_ref.fit(X, y).decision_function(Xt), atol=1e-8)


def test_a_bank_nothing_can_hold_is_refused_before_allocating(rng):
    X = rng.normal(size=(2000, 5))
    with pytest.raises(MemoryError, match=r"(?s)Kernels on the fly .*needs .*GiB.*subsample"):
        KernelBank.from_specs(X, grid(5), max_memory=10_000)
    with pytest.raises(MemoryError, match=r"(?s)dense bank of 78 kernels.*on_the_fly"):
        KernelBank.from_specs(X, grid(5), storage="dense", max_memory=10**8)
    auto = KernelBank.from_specs(X, grid(5), max_memory=10**8)
    assert auto.storage.name == "on_the_fly"
    with pytest.raises(ValueError, match="storage"):
        KernelBank.from_specs(X, grid(5), storage="sparse")
    with pytest.raises(ValueError, match="cache_size"):
        KernelBank.from_specs(X, grid(5), cache_size=-1)
    with pytest.raises(ValueError, match="storage"):
        MKLClassifier(storage="disk").fit(X, np.where(X[:, 0] > 0, 1, -1))


def test_auto_computes_on_the_fly_when_tables_hold_most_kernels(rng):
    # Binary and ordinal features: their per-feature kernels are tables, read
    # in O(1) per entry, so "auto" does not store the bank even though it fits.
    X_codes = rng.integers(0, 3, size=(120, 6)).astype(float)
    X_cont = rng.normal(size=(120, 6))
    y = np.where(X_codes[:, 0] + X_cont[:, 0] > 1, 1, -1)
    coded = KernelBank.from_specs(X_codes, grid(6))
    assert coded.storage.name == "on_the_fly" and coded.storage.table_share >= 0.5
    assert KernelBank.from_specs(X_cont, grid(6)).storage.name == "dense"
    # Half coded features: 6 of 13 groups are tables, under half the kernels.
    mixed = np.hstack([X_codes[:, :3], X_cont[:, :4]])
    assert KernelBank.from_specs(mixed, grid(7)).storage.name == "dense"
    # The choice changes where the kernels live, not the answer.
    dense = KernelBank.from_specs(X_codes, grid(6), storage="dense")
    stop = DualityGap(1e-6) | MaxIter(300)
    a = solve(SVMDual(coded, y, C=10.0), LevelBundle(), stop=stop)
    b = solve(SVMDual(dense, y, C=10.0), LevelBundle(), stop=stop)
    assert a.converged and b.converged
    assert rel(a.value, b.value) <= 2e-6


# ------------------------------------------- every path against the scalar formulas
def _close(got, want, rel_tol):
    """``|got - want| <= rel_tol * max|want|`` per kernel (the leading axis), or overall."""
    got, want = np.asarray(got, float), np.asarray(want, float)
    if want.ndim == 3:
        scale = np.abs(want).max(axis=(1, 2), keepdims=True)
    else:
        scale = np.abs(want).max()
    return bool(np.all(np.abs(got - want) <= rel_tol * np.maximum(scale, 1e-300)))


def _features(case, rng):
    """Points for the product path's edge cases, far from the origin (cancellation)."""
    X = rng.normal(size=(70, 12)) * 2.0 + 50.0
    if case == "constant":
        X[:, 3] = 7.0  # constant features: zero centred columns
        X[:, 5] = 0.0
    elif case == "duplicates":
        X[20:40] = X[:20]  # duplicated points: distances exactly 0
        X[41] = X[0] + 1e-9  # and a nearly duplicated one (summed directly)
    return X


_WIDE_SPECS = list(grid(12, protocol="mkboost2013")) + [
    rbf(3.0, list(range(8))), poly(2, list(range(9))), linear(list(range(1, 11))),
    rbf(2.0, [3]), poly(2, [5]), rbf(1.0, [0, 4]),
]


@pytest.mark.parametrize("case", ["random", "constant", "duplicates"])
@pytest.mark.parametrize("path", ["default", "product"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_path_matches_the_scalar_formulas(case, path, dtype, monkeypatch):
    """Dense build, on-the-fly rows / combine / blocks, cross and combined cross kernels.

    Groups with many features take the BLAS product path (``"product"``:
    all of them, single features included; ``"default"``: the wide ones by
    ``gram.is_wide``, lowered so that the 8-12-feature groups qualify); the old scalar
    formulas (tests/_reference.py) must agree to 1e-12 of each kernel's
    largest magnitude (float32 storage: to its precision, 2^-24 relative).
    """
    monkeypatch.setattr(gram, "WIDE_MIN", 1 if path == "product" else 8)
    monkeypatch.setattr(gram, "WIDE_PER_KERNEL", 0 if path == "product" else 0.5)
    rng = np.random.default_rng(7)
    X = _features(case, rng)
    specs = _WIDE_SPECS
    m = len(specs)
    scales = twin.raw_traces(specs, X)
    want = twin.kernel_matrices(specs, X, X, scales)
    tol = 1e-12 if dtype == np.float64 else 2.0**-24 + 1e-12
    dense = KernelBank.from_specs(X, specs, storage="dense", dtype=dtype)
    fly = KernelBank.from_specs(X, specs, storage="on_the_fly")
    assert np.allclose(dense.scales, scales, rtol=1e-12, atol=0)
    K = dense.K
    assert K.dtype == dtype and _close(K, want, tol)
    assert np.array_equal(K, np.transpose(K, (0, 2, 1)))  # exactly symmetric
    for k, s in enumerate(specs):
        if isinstance(s, type(rbf(1.0))):  # unit diagonal, values in (0, 1] before scaling
            assert np.all(np.diag(K[k]) == dtype(1.0 / dense.scales[k]))
            assert np.all(K[k] <= dtype(1.0 / dense.scales[k])) and np.all(K[k] >= 0.0)
    w = np.where(rng.random(m) < 0.5, 0.0, rng.random(m))
    w[0] = 1.0
    comb = np.tensordot(w, want, axes=1)
    idx = np.array([0, 21, 20, 69, 41])
    assert _close(fly.rows(w, idx), comb[idx], 1e-12)
    assert _close(fly.combine(w), comb, 1e-12)
    ks = np.array([0, 13, 16, 19, 20, 3])
    rows, cols = np.array([5, 25, 5]), np.array([44, 0, 20, 41])
    assert _close(fly.blocks(ks, rows, cols), want[ks][:, rows][:, :, cols], 1e-12)
    # Prediction: cross kernels on the training points and on new ones.
    assert _close(dense.cross(X), want, 1e-12)
    X_new = np.concatenate([X[:3], rng.normal(size=(4, 12)) * 2.0 + 50.0])
    cross_want = twin.kernel_matrices(specs, X_new, X, scales)
    assert _close(fly.cross(X_new), cross_want, 1e-12)
    cols = np.array([3, 0, 69])
    assert _close(dense.combine_cross(X_new, w, columns=cols),
                  np.tensordot(w, cross_want, axes=1)[:, cols], 1e-12)
    assert _close(fly.combine_cross(X_new, w), np.tensordot(w, cross_want, axes=1), 1e-12)
    # Quadratic forms v_S' K_k v_S: terms of both signs, so the error is
    # measured against |v_S|' |K_k| |v_S|.
    v = rng.normal(size=X.shape[0])
    S = np.array([0, 2, 20, 21, 33, 41, 55, 69])
    q_want = twin.quad_forms_from_specs(specs, X, scales, v, S)
    q_scale = twin.quad_forms(np.abs(want), np.abs(v), S)
    for b in (dense, fly):
        q = b.quad_forms(v, S)
        assert np.all(np.abs(q - q_want) <= max(tol, 1e-12) * q_scale * 4)
        q = b.quad_forms(v, S, kernels=ks)
        assert np.all(np.abs(q - q_want[ks]) <= max(tol, 1e-12) * q_scale[ks] * 4)
