"""Feature-map storage against the dense bank: exact maps, Nyström, random Fourier features.

Exact maps (linear and polynomial kernels) must give the dense answers to
1e-10 relative; Nyström with every training point as a landmark is exact up
to its eigenvalue cut-off; the approximations must meet the bounds
documented in :mod:`mklopt.kernels.feature_maps` (Nyström's one-sided error,
the Hoeffding bound of random Fourier features, the bracket of the oracle
value); models predict with the kernels they were trained on and survive a
save and load.
"""

import math
import pathlib

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import KernelBank, MKBoostClassifier, MKLClassifier
from mklopt.kernels import (
    FeatureMap,
    FeatureMapFunctions,
    KernelExpansion,
    grid,
    linear,
    nystroem,
    poly,
    random_fourier,
    rbf,
)
from mklopt.kernels._monomials import _monomials
from mklopt.kernels.feature_maps import FeatureMapStorage
from mklopt.oracles import SVMDual
from mklopt.persist import ModelFormatError, load_model, save_model

DATA = pathlib.Path(__file__).parents[1] / "data"


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def exact_specs(d):
    feats = st.one_of(st.none(), st.lists(st.integers(0, d - 1), min_size=1, max_size=3,
                                          unique=True))
    return st.one_of(st.builds(linear, feats), st.builds(poly, st.integers(1, 3), feats))


@st.composite
def exact_problems(draw):
    n = draw(st.integers(3, 40))
    d = draw(st.integers(1, 4))
    X = draw(arrays(np.float64, (n, d), elements=st.floats(-2, 2, width=32)))
    specs = draw(st.lists(exact_specs(d), min_size=1, max_size=8))
    w = draw(arrays(np.float64, len(specs), elements=st.sampled_from([0.0, 0.2, 1.0, 3.0])))
    if not w.any():
        w[0] = 1.0
    return X, specs, w


# ----------------------------------------------------------------- exact maps
@settings(max_examples=60, deadline=None)
@given(exact_problems(), st.data())
def test_exact_maps_give_the_dense_verbs(problem, data):
    X, specs, w = problem
    n = X.shape[0]
    ref = KernelBank.from_specs(X, specs, storage="dense")
    fm = KernelBank.from_specs(X, specs, storage="feature_map")
    assert fm.storage.name == "feature_map" and set(fm.functions.kinds) == {"exact"}
    np.testing.assert_allclose(fm.scales, ref.scales, rtol=1e-12)
    idx = np.array(data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=6)))
    v = data.draw(arrays(np.float64, n, elements=st.floats(-2, 2, width=32)))
    S = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=1))))
    ks = np.array(data.draw(st.lists(st.integers(0, len(specs) - 1), min_size=1, max_size=4)))
    K = ref.combine(w)
    assert rel(fm.rows(w, idx), K[idx]) <= 1e-10
    assert rel(fm.combine(w), K) <= 1e-10
    assert np.array_equal(fm.combine(w), fm.combine(w).T)  # a symmetric rank-R update
    assert rel(fm.diag(w), np.diag(K)) <= 1e-10
    q_ref = ref.quad_forms(v, S)
    scale = max(np.abs(q_ref).max(), float(v[S] @ v[S]) * 1e-3)
    assert np.abs(fm.quad_forms(v, S) - q_ref).max() <= 1e-10 * scale
    assert np.abs(fm.quad_forms(v, S, kernels=ks) - q_ref[ks]).max() <= 1e-10 * scale
    assert np.abs(fm.quad_forms(v) - ref.quad_forms(v)).max() <= 1e-10 * max(
        np.abs(ref.quad_forms(v)).max(), float(v @ v) * 1e-3)
    assert rel(fm.blocks(ks, idx, S), ref.K[ks][:, idx][:, :, S]) <= 1e-10
    X_new = data.draw(arrays(np.float64, (3, X.shape[1]), elements=st.floats(-2, 2, width=32)))
    # New points can make a kernel value cancel to exactly 0 (x'z = -c for
    # poly(1)), where the feature map's sum of products leaves rounding of
    # the terms' size: errors are measured against the kernels' magnitude
    # on the training points as well.
    c_ref = ref.cross(X_new, ks)
    floor = 1e-3 * np.abs(ref.K[ks]).max()
    assert np.abs(fm.cross(X_new, ks) - c_ref).max() <= 1e-10 * max(np.abs(c_ref).max(), floor)
    cc_ref = ref.combine_cross(X_new, w, S)
    floor = 1e-3 * np.abs(K[S]).max()
    assert np.abs(fm.combine_cross(X_new, w, S) - cc_ref).max() <= 1e-10 * max(
        np.abs(cc_ref).max(), floor)


def test_exact_map_at_a_cancelling_new_point():
    # poly(1) = x'z + 1 is exactly 0 at x = 2, z = -1/2: the dense bank gives
    # 0, the feature map the rounding of its terms (size 1), far below them.
    X = np.array([[2.0], [2.0], [2.0]])
    X_new = np.full((3, 1), -0.5)
    for storage in ("dense", "feature_map"):
        bank = KernelBank.from_specs(X, [poly(1)], storage=storage, normalize=None)
        c = bank.cross(X_new, np.array([0]))
        assert np.abs(c).max() <= 1e-15
        cc = bank.combine_cross(X_new, np.array([1.0]), np.array([0, 1]))
        assert np.abs(cc).max() <= 1e-15


@st.composite
def pd_exact_problems(draw):
    """Exact-map banks whose combined kernel is positive definite (alpha is unique)."""
    n = draw(st.integers(8, 18))
    d = 3
    X = draw(arrays(np.float64, (n, d), elements=st.floats(-2, 2, width=32), unique=True))
    specs = [poly(3)] + draw(st.lists(exact_specs(d), min_size=0, max_size=4))
    w = draw(arrays(np.float64, len(specs), elements=st.sampled_from([0.0, 0.2, 1.0])))
    w[0] = 1.0
    y = np.where(draw(arrays(np.bool_, n)), 1.0, -1.0)
    y[:2] = (-1.0, 1.0)
    C = draw(st.sampled_from([0.5, 10.0]))
    return X, specs, w, y, C


@settings(max_examples=30, deadline=None)
@given(pd_exact_problems())
def test_exact_maps_give_the_dense_oracle(problem):
    X, specs, w, y, C = problem
    ref = KernelBank.from_specs(X, specs, storage="dense")
    K = ref.combine(w)
    lam = np.linalg.eigvalsh(K)
    assume(lam[0] > 1e-5 * lam[-1])  # alpha unique, and not ill-conditioned
    fm = KernelBank.from_specs(X, specs, storage="feature_map")
    a = SVMDual(ref, y, C=C, tol=1e-12)(w)
    b = SVMDual(fm, y, C=C, tol=1e-12)(w)
    assert abs(b.value - a.value) <= 1e-10 * abs(a.value)
    assert rel(b.q, a.q) <= 1e-10
    # Kernels equal to rounding: both SMO runs stop at a KKT violation of at
    # most tol = 1e-12, possibly one step apart, so alpha agrees to that
    # tolerance amplified by the condition number (<= 1e5 here). A bound of
    # 1e-13 * cond was seen to miss by 10 % once in a randomised run.
    cond = lam[-1] / lam[0]
    np.testing.assert_allclose(b.alpha, a.alpha, rtol=0, atol=1e-12 * cond * C)
    # The offset is unique when a multiplier is free; with every multiplier
    # at a bound (up to rounding) any offset of an interval is optimal, and
    # which one the rule picks can flip on a multiplier 1e-15 off its bound.
    # Then both must lie in the KKT interval of the dense solution.
    tight = 1e-8 * C
    free_a = (a.alpha > tight) & (a.alpha < C - tight)
    free_b = (b.alpha > tight) & (b.alpha < C - tight)
    if free_a.any() and free_b.any():
        assert b.bias == pytest.approx(a.bias, abs=max(1e-9, 1e-12 * cond))
    else:
        g = K @ (a.alpha * y)
        need_above = np.where(a.alpha <= tight, y > 0, y < 0)  # b >= y_i - g_i
        lo = np.max((y - g)[need_above], initial=-np.inf)
        hi = np.min((y - g)[~need_above], initial=np.inf)
        slack = 1e-8 * (1.0 + np.abs(g).max())
        for bias in (a.bias, b.bias):
            assert lo - slack <= bias <= hi + slack


def test_monomials_are_the_polynomial_kernel_expansion():
    for p, degree in [(1, 1), (1, 3), (3, 2), (4, 3)]:
        idx, coef = _monomials(p, degree)
        assert idx.shape == (math.comb(p + degree, degree), degree)
        # At x = z = ones: (x.z + 1)^d = (p + 1)^d = sum of the squared coefficients.
        assert float(coef @ coef) == pytest.approx((p + 1.0) ** degree, rel=1e-14)


# ------------------------------------------------------------------ Nyström
@settings(max_examples=25, deadline=None)
@given(st.integers(5, 50), st.integers(1, 3), st.data())
def test_nystroem_with_every_point_a_landmark_is_exact(n, d, data):
    X = data.draw(arrays(np.float64, (n, d), elements=st.floats(-2, 2, width=32)))
    feats = st.one_of(st.none(), st.lists(st.integers(0, d - 1), min_size=1, max_size=2,
                                          unique=True))
    one = st.one_of(st.builds(rbf, st.floats(0.3, 3.0), feats),
                    st.builds(poly, st.integers(2, 3), feats))
    specs = data.draw(st.lists(one, min_size=1, max_size=5))
    w = np.full(len(specs), 1.0 / len(specs))
    ref = KernelBank.from_specs(X, specs)
    # n_components = 1 maps no polynomial exactly: all go through Nyström.
    for options in (nystroem(n, random_state=3), nystroem(5 * n)):
        ny = KernelBank.from_specs(X, specs, storage=options)
        assert rel(ny.combine(w), ref.combine(w)) <= 1e-8
        assert rel(ny.scales, ref.scales) <= 1e-8


def test_nystroem_of_a_polynomial_with_every_point_a_landmark_is_exact(rng):
    # poly(3) on 3 features has a 20-column exact map, more than 15 landmarks:
    # it goes through Nyström, whose rank-15 map is exact on 15 points.
    X = rng.normal(size=(15, 3))
    ref = KernelBank.from_specs(X, [poly(3), rbf(1.0)])
    ny = KernelBank.from_specs(X, [poly(3), rbf(1.0)], storage=nystroem(15))
    assert ny.functions.kinds == ("nystroem", "nystroem")
    assert rel(ny.combine([0.5, 0.5]), ref.combine([0.5, 0.5])) <= 1e-8


def test_nystroem_maps_every_kernel_with_shared_landmarks(rng):
    X = rng.normal(size=(50, 3))
    specs = [rbf(1.0), rbf(2.0, [0]), poly(3), linear([1, 2])]
    fn = KernelBank.from_specs(X, specs, storage=nystroem(12, random_state=4)).functions
    assert fn.kinds == ("nystroem", "nystroem", "nystroem", "exact")
    assert fn.landmarks.shape == (12, 3)
    # Landmarks are training points drawn by the seed, shared by all kernels.
    hits = (fn.landmarks[:, None, :] == X[None]).all(axis=2).any(axis=1)
    assert hits.all()
    assert fn.ranks[0] == 12 and fn.ranks[3] == 2
    # rbf on one feature is rank-deficient on 12 points only through the cut-off.
    assert 1 <= fn.ranks[1] <= 12
    again = KernelBank.from_specs(X, specs, storage=nystroem(12, random_state=4)).functions
    assert np.array_equal(again.landmarks, fn.landmarks)
    other = KernelBank.from_specs(X, specs, storage=nystroem(12, random_state=5)).functions
    assert not np.array_equal(other.landmarks, fn.landmarks)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("n_components", [5, 20, 60])
def test_nystroem_error_is_one_sided_and_certified_by_the_diagonal(seed, n_components):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(80, 4))
    X[:, 3] = rng.integers(0, 3, size=80)  # an ordinal feature: duplicate landmarks
    specs = [rbf(0.7), rbf(2.0), rbf(1.0, [3]), poly(3)]
    ref = KernelBank.from_specs(X, specs, normalize=None)
    ny = KernelBank.from_specs(X, specs, normalize=None,
                               storage=FeatureMap("nystroem", n_components, seed))
    for k in range(len(specs)):
        K = ref.K[k]
        Kt = ny.blocks([k], np.arange(80))[0]
        E = K - Kt
        tr = float(np.trace(K))
        # K - Ktilde is positive semi-definite (up to rounding) ...
        assert np.linalg.eigvalsh(E)[0] >= -1e-10 * tr
        # ... so every entry errs by at most the largest diagonal residual.
        res = np.diag(E)
        assert res.min() >= -1e-10 * tr
        assert np.abs(E).max() <= res.max() * (1 + 1e-9) + 1e-10 * tr


# ------------------------------------------------------- random Fourier features
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("n_components", [40, 400])
def test_random_fourier_entries_meet_the_hoeffding_bound(seed, n_components):
    rng = np.random.default_rng(100 + seed)
    n = 60
    X = rng.normal(size=(n, 3))
    specs = [rbf(0.5), rbf(2.0), rbf(1.0, [0, 2])]
    ref = KernelBank.from_specs(X, specs, normalize=None)
    rff = KernelBank.from_specs(X, specs, normalize=None,
                                storage=random_fourier(n_components, random_state=seed))
    D = n_components // 2
    delta = 1e-3  # each (seed, D) fails with probability below 1e-3
    bound = math.sqrt(2.0 * math.log(n * (n - 1) / delta) / D)
    for k in range(len(specs)):
        Kt = rff.blocks([k], np.arange(n))[0]
        np.testing.assert_allclose(np.diag(Kt), 1.0, rtol=0, atol=1e-14)
        assert np.abs(Kt - ref.K[k]).max() <= bound
    # Unit trace of the approximate kernel is n, as for the exact one.
    normed = KernelBank.from_specs(X, specs, storage=random_fourier(n_components, seed))
    np.testing.assert_allclose(normed.scales, n, rtol=1e-13)


def test_random_fourier_features_are_unbiased():
    # The mean over 100 seeds is an estimate with 100 D terms: the same
    # Hoeffding bound with 100 D in place of D.
    rng = np.random.default_rng(1)
    n, D, seeds = 25, 10, 100
    X = rng.normal(size=(n, 2))
    spec = [rbf(1.0)]
    K = KernelBank.from_specs(X, spec, normalize=None).K[0]
    mean = np.zeros((n, n))
    for s in range(seeds):
        b = KernelBank.from_specs(X, spec, normalize=None, storage=random_fourier(2 * D, s))
        mean += b.blocks([0], np.arange(n))[0] / seeds
    bound = math.sqrt(2.0 * math.log(n * (n - 1) / 1e-3) / (seeds * D))
    assert np.abs(mean - K).max() <= bound


# --------------------------------------------------------- the oracle value
def pd_problem(rng, n, d=3):
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n) > 0.4, 1.0, -1.0)
    specs = [rbf(0.5), rbf(2.0), rbf(1.0, [0]), poly(2), linear([1, 2])]
    return X, y, specs


@pytest.mark.parametrize(
    "options", [nystroem(10), nystroem(40, random_state=1), random_fourier(30),
                random_fourier(300, random_state=2)],
    ids=repr,
)
@pytest.mark.parametrize("normalize", ["trace", None])
def test_oracle_value_lies_in_the_documented_bracket(options, normalize, rng):
    X, y, specs = pd_problem(rng, 90)
    w = np.array([0.3, 0.2, 0.2, 0.2, 0.1])
    C, tol = 10.0, 1e-9
    ref = KernelBank.from_specs(X, specs, normalize=normalize)
    fm = KernelBank.from_specs(X, specs, storage=options, normalize=normalize)
    a = SVMDual(ref, y, C=C, tol=tol)(w)
    b = SVMDual(fm, y, C=C, tol=tol)(w)
    E = fm.combine(w) - ref.combine(w)
    v_a, v_b = a.alpha * y, b.alpha * y
    # SMO's values are within about 2 tol (relative) of the maxima.
    slack = 4 * tol * (abs(a.value) + abs(b.value))
    diff = b.value - a.value
    assert -0.5 * v_a @ E @ v_a - slack <= diff <= -0.5 * v_b @ E @ v_b + slack
    if options.approximation == "nystroem" and normalize is None:
        assert diff >= -slack  # K - Ktilde is PSD: the approximation can only raise J


# ------------------------------------------------------- models and storage
def test_bank_functions_and_expansions_use_the_training_maps(rng):
    X, y, specs = pd_problem(rng, 70)
    bank = KernelBank.from_specs(X, specs, storage=nystroem(25, random_state=7))
    fn = bank.functions
    assert isinstance(fn, FeatureMapFunctions) and isinstance(bank.storage, FeatureMapStorage)
    assert bank.storage.maps is fn._own_map()  # one copy of Phi, shared
    rows = np.array([4, 9, 33])
    # cross on the training points reproduces the stored kernels.
    np.testing.assert_allclose(bank.cross(X[rows], [2, 0]), bank.blocks([2, 0], rows,
                               np.arange(70)), rtol=0, atol=1e-12)
    sub = fn.subset([4, 1]).take(rows)
    np.testing.assert_allclose(sub.matrices(), bank.blocks([4, 1], rows), rtol=0, atol=1e-12)
    w = np.array([0.0, 0.5, 0.0, 0.0, 0.5])
    ans = SVMDual(bank, y, C=5.0, tol=1e-9)(w)
    f = KernelExpansion.from_solution(fn, w, ans.alpha * y, ans.bias)
    want = bank.combine(w)[:, ans.support] @ (ans.alpha * y)[ans.support] + ans.bias
    np.testing.assert_allclose(f(X), want, rtol=0, atol=1e-10)
    # The expansion collapses to a linear function of the maps: same values.
    sv = f.functions
    X_new = rng.normal(size=(6, 3))
    np.testing.assert_allclose(sv.expand(X_new, f.weights, f.coef),
                               sv.combine_cross(X_new, f.weights) @ f.coef, rtol=1e-12,
                               atol=1e-12)
    assert bank.rows(w, np.zeros(0, dtype=int)).shape == (0, 70)
    np.testing.assert_allclose(fn.transform()[:, fn.offsets[1]:fn.offsets[2]],
                               fn.transform(X, [1]), atol=1e-12)


@pytest.mark.parametrize(
    "storage", ["feature_map", nystroem(30), random_fourier(40, random_state=3)], ids=repr
)
def test_models_predict_with_their_kernels_and_round_trip(storage, tmp_path, rng):
    X, y, specs = pd_problem(rng, 120)
    if storage == "feature_map":
        specs = [poly(2), linear([0]), poly(3, [1, 2])]
    # unit trace, as the bank below is built, so that C=10 keeps its scale here
    clf = MKLClassifier(kernels=specs, C=10.0, normalize="trace", storage=storage).fit(X, y)
    model = clf.models_[0]
    # Predictions use exactly the approximate kernels the model was trained on.
    bank = KernelBank.from_specs(X, specs, storage=storage)
    v = np.zeros(len(y))
    v[model.support] = model.dual_coef
    want = bank.combine(model.weights) @ v + model.bias
    np.testing.assert_allclose(clf.decision_function(X), want, rtol=0, atol=1e-8)
    if storage == "feature_map":
        ref = MKLClassifier(kernels=specs, C=10.0, normalize="trace", storage="dense")
        ref.fit(X, y)
        # Two fits, each stopped at its own tolerances on kernels equal to
        # rounding: their decisions agree far below the margin (1e-5).
        np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X),
                                   atol=1e-5)
    Xt = rng.normal(size=(30, X.shape[1]))
    path = tmp_path / "m.npz"
    save_model(clf, path)
    back, meta = load_model(path)
    assert meta["format_version"] == 2
    assert back.get_params()["storage"] == storage
    np.testing.assert_array_equal(back.decision_function(Xt), clf.decision_function(Xt))
    fn = back.models_[0].predictor.functions
    assert isinstance(fn, FeatureMapFunctions)
    assert fn.kinds == model.predictor.functions.kinds
    # MKBoost reads single-kernel blocks and predicts through take/subset.
    boost = MKBoostClassifier(kernels=specs, n_rounds=4, random_state=0, storage=storage)
    assert boost.fit(X, y).score(X, y) > 0.6


def test_multiclass_feature_map_models_round_trip(tmp_path, rng):
    X = rng.normal(size=(90, 3))
    y = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5).astype(int)]
    clf = MKLClassifier(kernels=[rbf(1.0), linear([0])], C=10.0,
                        storage=nystroem(20, random_state=1)).fit(X, y)
    save_model(clf, tmp_path / "m.npz")
    back, _ = load_model(tmp_path / "m.npz")
    Xt = rng.normal(size=(25, 3))
    np.testing.assert_array_equal(back.predict(Xt), clf.predict(Xt))
    np.testing.assert_array_equal(back.decision_function(Xt), clf.decision_function(Xt))


def test_version_1_model_files_still_load():
    clf, meta = load_model(DATA / "model_v1.npz")
    assert meta["format_version"] == 1 and meta["label"] == "kind"
    want = np.load(DATA / "model_v1_expected.npz")
    # Recorded when the file was written; kernel evaluation may have changed
    # by rounding since (a faster exp), the model itself may not.
    np.testing.assert_allclose(clf.decision_function(want["X_test"]), want["decision"],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(clf.predict(want["X_test"]), want["predict"])


def test_corrupt_feature_map_files_are_refused(tmp_path, rng):
    X, y, specs = pd_problem(rng, 60)
    clf = MKLClassifier(kernels=specs, C=10.0, storage=nystroem(15)).fit(X, y)
    save_model(clf, tmp_path / "m.npz")
    good = dict(np.load(tmp_path / "m.npz"))

    def write(**change):
        arrays = dict(good)
        for key, value in change.items():
            if value is None:
                del arrays[key]
            else:
                arrays[key] = value
        path = tmp_path / "bad.npz"
        np.savez(path, **arrays)
        return path

    cases = [
        ({"map_data": None}, "missing: map_data"),
        ({"map_data": good["map_data"][:-1]}, "offset table"),
        ({"map_kind": np.array(["svd"] * good["map_kind"].size)}, "unknown feature-map kinds"),
        ({"map_cols": good["map_cols"] + 1}, "corrupt"),
        ({"landmark_X": good["landmark_X"][:, :1]}, "landmark_X"),
        ({"map_data": np.full(good["map_data"].size, np.nan)}, "NaN"),
    ]
    for change, match in cases:
        with pytest.raises(ModelFormatError, match=match):
            load_model(write(**change))


# ------------------------------------------------------------- bad options
def test_bad_options_name_the_argument(rng):
    X = rng.normal(size=(20, 2))
    with pytest.raises(ValueError, match="approximation"):
        FeatureMap("svd")
    with pytest.raises(ValueError, match="n_components"):
        nystroem(0)
    with pytest.raises(TypeError, match="n_components"):
        random_fourier(10.5)
    with pytest.raises(ValueError, match="random_state"):
        nystroem(10, random_state=-1)
    with pytest.raises(ValueError, match="rcond"):
        nystroem(10, rcond=0.0)
    with pytest.raises(ValueError, match=r"storage='feature_map'.*specs\[1\].*nystroem"):
        KernelBank.from_specs(X, [linear(), rbf(1.0)], storage="feature_map")
    with pytest.raises(TypeError, match="storage must be one of .* or a FeatureMap"):
        KernelBank.from_specs(X, [linear()], storage=nystroem)
    with pytest.raises(ValueError, match="storage must be one of"):
        MKLClassifier(storage="nystroem").fit(X, np.where(X[:, 0] > 0, 1, -1))
    with pytest.raises(ValueError, match="kinds"):
        FeatureMapFunctions([rbf(1.0)], [1.0], X, ["exact"], [None])
    with pytest.raises(ValueError, match="landmarks"):
        FeatureMapFunctions([rbf(1.0)], [1.0], X, ["nystroem"], [np.eye(3)])
    with pytest.raises(ValueError, match=r"maps\[0\] has 3 rows"):
        FeatureMapFunctions([rbf(1.0)], [1.0], X, ["fourier"], [np.ones((3, 4))])


def test_a_map_that_cannot_fit_is_refused_naming_n_components(rng):
    X = rng.normal(size=(2000, 5))
    with pytest.raises(MemoryError, match=r"(?s)Feature maps of 78 kernels.*n_components=\d+ "
                                          r"would fit.*on_the_fly"):
        KernelBank.from_specs(X, grid(5), storage=nystroem(500), max_memory=10**8)
    # What the message proposes does fit.
    with pytest.raises(MemoryError) as err:
        KernelBank.from_specs(X, grid(5), storage=random_fourier(500), max_memory=10**8)
    fit = int(str(err.value).split("n_components=")[1].split()[0])
    bank = KernelBank.from_specs(X, grid(5), storage=random_fourier(fit), max_memory=10**8)
    assert bank.nbytes <= 10**8
    with pytest.raises(MemoryError, match="on_the_fly"):
        KernelBank.from_specs(X, [linear()] * 3, storage="feature_map", max_memory=10**4)


def test_feature_map_options_are_values_for_scikit_learn():
    from sklearn.base import clone

    clf = MKLClassifier(kernels=[rbf(1.0)], storage=nystroem(50, random_state=2))
    twin = clone(clf)
    assert twin.storage == clf.storage and twin.storage is not clf.storage
    assert "nystroem(n_components=50, random_state=2)" in repr(clf)
    assert hash(nystroem(50)) == hash(nystroem(50))
