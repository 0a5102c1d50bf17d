"""Kernel specs, grids and the KernelBank."""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import mklopt
from mklopt._jit import gram
from mklopt.kernels import KernelBank, grid, linear, poly, rbf
from mklopt.kernels.specs import RBF, Poly
from tests import _reference as ref


@pytest.fixture
def X(rng):
    return rng.standard_normal((30, 4))


@pytest.fixture(params=["direct", "product"])
def path(request, monkeypatch):
    """Which evaluation the bank's groups take: direct sums, or BLAS products for all."""
    if request.param == "product":
        monkeypatch.setattr(gram, "WIDE_MIN", 1)
        monkeypatch.setattr(gram, "WIDE_PER_KERNEL", 0)
    return request.param


@pytest.fixture
def bank(X, path):
    return KernelBank.from_specs(X, grid(X.shape[1]))


def _psd_stack(rng, m=3, n=10, r=4):
    F = rng.standard_normal((m, n, r))
    return np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F))


# ----------------------------------------------------------------------- specs
def test_spec_validation():
    assert rbf(2).sigma == 2.0 and rbf(1.0, features=[2, 0]).features == (2, 0)
    assert poly(3, np.array([1])).features == (1,)
    assert linear().features is None
    for bad in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="sigma"):
            rbf(bad)
    with pytest.raises(TypeError, match="sigma"):
        rbf("1")
    with pytest.raises(ValueError, match="degree"):
        poly(0)
    with pytest.raises(TypeError, match="degree"):
        poly(2.5)
    with pytest.raises(ValueError, match="features"):
        rbf(1.0, features=[])
    with pytest.raises(ValueError, match="features"):
        rbf(1.0, features=[1, 1])
    with pytest.raises(ValueError, match="features"):
        linear(features=[-1])
    with pytest.raises(TypeError, match="features"):
        linear(features="01")
    with pytest.raises(TypeError, match="features"):
        linear(features=[0.5])
    assert rbf(1.0, [0]) == rbf(1, (0,)) and hash(rbf(1.0, [0])) == hash(rbf(1, (0,)))
    assert repr(poly(2, [3])) == "poly(degree=2, features=[3])"


def test_grid_sizes():
    g = grid(34)
    assert len(g) == 455 == 13 * 35
    assert sum(isinstance(s, RBF) for s in g) == 350
    assert g[:13] == tuple(rbf(2.0**e) for e in range(-3, 7)) + (poly(1), poly(2), poly(3))
    assert g[13:26] == tuple(rbf(2.0**e, [0]) for e in range(-3, 7)) + tuple(
        poly(p, [0]) for p in (1, 2, 3)
    )
    assert len(grid(34, exclude=[1])) == 442
    assert all(s.features != (1,) for s in grid(34, exclude=[1]))
    mk = grid(34, "mkboost2013")
    assert len(mk) == 17 and all(s.features is None for s in mk)
    assert [s.sigma for s in mk if isinstance(s, RBF)] == [2.0**e for e in range(-6, 8)]
    assert [s.degree for s in mk if isinstance(s, Poly)] == [1, 2, 3]
    assert len(grid(1)) == 26


def test_grid_validation():
    with pytest.raises(ValueError, match="protocol"):
        grid(3, "level2009")
    with pytest.raises(ValueError, match="n_features"):
        grid(0)
    with pytest.raises(ValueError, match="exclude"):
        grid(3, exclude=[3])
    with pytest.raises(ValueError, match="exclude"):
        grid(3, "mkboost2013", exclude=[0])


# ------------------------------------------------------------------ from_specs
def test_unit_trace_and_psd(bank, X):
    assert bank.K.shape == (65, 30, 30) and bank.K.flags.c_contiguous
    assert bank.n_kernels == 65 and bank.n_samples == 30
    assert bank.K.dtype == np.float64 and bank.scales.shape == (65,)
    assert_allclose(np.trace(bank.K, axis1=1, axis2=2), 1.0, rtol=1e-12)
    assert_array_equal(bank.X_train, X)
    assert bank.specs == grid(4)
    for k in range(0, 65, 7):
        assert_array_equal(bank.K[k], bank.K[k].T)
        assert np.linalg.eigvalsh(bank.K[k])[0] >= -1e-10


def test_values_match_sklearn(X):
    from sklearn.metrics import pairwise

    specs = [rbf(0.5), poly(2), linear(), rbf(2.0, [1, 3]), poly(3, [2])]
    b = KernelBank.from_specs(X, specs, normalize=None)
    assert_array_equal(b.scales, 1.0)
    assert_allclose(b.K[0], pairwise.rbf_kernel(X, gamma=2.0), rtol=1e-12)
    # Entries near zero come from cancelling sums: an absolute tolerance at
    # the scale of the largest entry, as BLAS kernels round differently.
    poly_ref = pairwise.polynomial_kernel(X, degree=2, gamma=1, coef0=1)
    assert_allclose(b.K[1], poly_ref, rtol=1e-12, atol=1e-12 * np.abs(poly_ref).max())
    assert_allclose(b.K[2], X @ X.T, rtol=1e-12, atol=1e-12)
    assert_allclose(b.K[3], pairwise.rbf_kernel(X[:, [1, 3]], gamma=1 / 8), rtol=1e-12)
    poly3 = pairwise.polynomial_kernel(X[:, [2]], degree=3, gamma=1, coef0=1)
    assert_allclose(
        b.K[4], poly3, rtol=1e-12, atol=1e-12 * np.abs(poly3).max()
    )
    bt = KernelBank.from_specs(X, specs)
    assert_allclose(bt.K * bt.scales[:, None, None], b.K, rtol=1e-12, atol=1e-13)


def test_constant_features_give_no_nan(rng):
    X = rng.standard_normal((12, 3))
    X[:, 1] = 0.0  # a constant feature after standardisation
    specs = grid(3) + (linear([1]),)
    b = KernelBank.from_specs(X, specs)
    assert np.all(np.isfinite(b.K))
    single = [k for k, s in enumerate(specs) if s.features == (1,)]
    for k in single[:-1]:  # RBF and poly on the zero column: all ones, unit trace
        assert_allclose(b.K[k], 1.0 / 12)
    assert_array_equal(b.K[single[-1]], 0.0)  # linear on zeros: zero matrix, scale 1
    assert b.scales[single[-1]] == 1.0


def test_float32_storage(X):
    b64 = KernelBank.from_specs(X, grid(4))
    b32 = KernelBank.from_specs(X, grid(4), dtype=np.float32)
    assert b32.K.dtype == np.float32 and b32.K.nbytes * 2 == b64.K.nbytes
    assert_allclose(b32.K, b64.K, rtol=1e-6, atol=1e-8)
    w = np.linspace(0, 1, 65)
    out = b32.combine(w)
    assert out.dtype == np.float64
    assert_allclose(out, b64.combine(w), rtol=1e-5)
    v = np.sin(np.arange(30.0))
    assert_allclose(b32.quad_forms(v), b64.quad_forms(v), rtol=1e-4)
    assert_allclose(b32.cross(X[:3], [5]), b64.cross(X[:3], [5]))


def test_from_specs_validation(X):
    with pytest.raises(ValueError, match="specs is empty"):
        KernelBank.from_specs(X, [])
    with pytest.raises(TypeError, match=r"specs\[1\]"):
        KernelBank.from_specs(X, [rbf(1.0), "rbf"])
    with pytest.raises(ValueError, match=r"specs\[0\].*feature 4"):
        KernelBank.from_specs(X, [rbf(1.0, [4])])
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="X contains NaN"):
        KernelBank.from_specs(bad, [rbf(1.0)])
    with pytest.raises(ValueError, match="X must be 2-D"):
        KernelBank.from_specs(X[:, 0], [rbf(1.0)])
    with pytest.raises(ValueError, match="normalize"):
        KernelBank.from_specs(X, [rbf(1.0)], normalize="max")
    with pytest.raises(ValueError, match="dtype"):
        KernelBank.from_specs(X, [rbf(1.0)], dtype=np.int64)
    assert KernelBank.from_specs(X, rbf(1.0)).n_kernels == 1


def test_memory_error_before_allocation(rng):
    X = rng.standard_normal((100_000, 2))  # 13 * 3 kernels of 1e10 entries: far too big
    with pytest.raises(MemoryError, match=r"(?s)needs .*GiB.*on_the_fly.*float32.*max_memory"):
        KernelBank.from_specs(X, grid(2), storage="dense")
    # "auto" computes them on the fly instead: only X is stored.
    fly = KernelBank.from_specs(X, grid(2))
    assert fly.storage.name == "on_the_fly" and fly.nbytes < 50 * X.nbytes
    with pytest.raises(MemoryError, match="(?s)max_memory.*subsample"):
        KernelBank.from_specs(X[:50], grid(2), max_memory=1000)
    with pytest.raises(ValueError, match="max_memory"):
        KernelBank.from_specs(X[:50], grid(2), max_memory=-1)
    K = _psd_stack(rng)
    with pytest.raises(MemoryError):
        KernelBank.from_matrices(list(K), max_memory=100)
    # no copy, nothing to refuse: a read-only view of the caller's array
    assert KernelBank.from_matrices(K, max_memory=100).K.base is K


# ------------------------------------------------------- combine / quad forms
def test_combine_and_quad_forms(bank, rng):
    w = rng.random(65)
    w[::2] = 0.0
    want = ref.combine(bank.K, w)
    assert_allclose(bank.combine(w), want, rtol=1e-12, atol=1e-13 * np.abs(want).max())
    out = np.empty((30, 30))
    assert bank.combine(w, out=out) is out
    v = rng.standard_normal(30)
    S = np.array([9, 1, 4, 22])
    # v'K v sums terms of both signs: absolute error at the scale of |v|'|K||v|.
    expect = ref.quad_forms(bank.K, v, S)
    scale = ref.quad_forms(np.abs(bank.K), np.abs(v), S).max()
    assert_allclose(bank.quad_forms(v, S), expect, rtol=1e-12, atol=1e-12 * scale)
    v0 = np.zeros(30)
    v0[S] = v[S]
    assert_allclose(bank.quad_forms(v0), expect, rtol=1e-12, atol=1e-12 * scale)
    assert np.all(bank.quad_forms(v) >= 0.0)


def test_combine_quad_validation(bank):
    with pytest.raises(ValueError, match="w must have length 65"):
        bank.combine(np.ones(3))
    with pytest.raises(ValueError, match="w must be non-negative"):
        bank.combine(-np.ones(65))
    with pytest.raises(ValueError, match="out"):
        bank.combine(np.ones(65), out=np.empty((30, 30), np.float32))
    with pytest.raises(ValueError, match="support"):
        bank.quad_forms(np.ones(30), [1, 1])
    with pytest.raises(ValueError, match="support"):
        bank.quad_forms(np.ones(30), [30])
    with pytest.raises(TypeError, match="support"):
        bank.quad_forms(np.ones(30), [0.5])
    with pytest.raises(ValueError, match="v"):
        bank.quad_forms(np.full(30, np.nan))


# ------------------------------------------------------------------ prediction
def test_cross_on_training_points_is_exact(bank, X, path):
    if path == "direct":
        assert_array_equal(bank.cross(X), bank.K)
    else:
        # Products of other blocks of rows are other BLAS calls: the same to
        # rounding (equal here on one block; measured 2e-16-2e-15 of each
        # kernel's largest value at n = 1500, 300 features, in blocks).
        scale = np.abs(bank.K).max(axis=(1, 2), keepdims=True)
        assert np.all(np.abs(bank.cross(X) - bank.K) <= 1e-12 * scale)
    # A subset of kernels may compute a Gaussian by exp where the whole bank
    # derived it from a wider one by squaring: equal to ~2.5 * 1024 ulp.
    ks = [7, 0, 7, 64]
    assert_allclose(bank.cross(X, kernels=ks), bank.K[ks], rtol=1e-12, atol=0)


def test_cross_new_points(bank, X, rng):
    Xn = rng.standard_normal((5, 4))
    C = bank.cross(Xn, kernels=[0, 12])
    s0, s12 = bank.specs[0], bank.specs[12]
    # Kernel values below e^-708 are flushed to zero (see _jit.groups.exp_into).
    assert_allclose(
        C[0], np.exp(-ref.sq_dists(Xn, X) / (2 * s0.sigma**2)) / bank.scales[0], rtol=1e-12,
        atol=1e-300,
    )
    assert_allclose(C[1], (Xn @ X.T + 1) ** s12.degree / bank.scales[12], rtol=1e-12)


def test_combine_cross_agrees_with_combine(bank, X, rng):
    w = rng.random(65)
    w[rng.random(65) < 0.5] = 0.0
    assert_allclose(bank.combine_cross(X, w), bank.combine(w), rtol=1e-12, atol=1e-15)
    cols = np.array([3, 17, 3])
    got = bank.combine_cross(X[:6], w, columns=cols)
    assert got.shape == (6, 3)
    assert_allclose(got, bank.combine(w)[:6][:, cols], rtol=1e-12, atol=1e-15)
    Xn = rng.standard_normal((4, 4))
    assert_allclose(bank.combine_cross(Xn, w), np.tensordot(w, bank.cross(Xn), 1), rtol=1e-12)
    assert bank.combine_cross(Xn, w, columns=[]).shape == (4, 0)


def test_prediction_validation_and_user_matrices(bank, rng):
    with pytest.raises(ValueError, match="X_new has 3 features"):
        bank.cross(np.ones((2, 3)))
    with pytest.raises(ValueError, match="kernels"):
        bank.cross(np.ones((2, 4)), kernels=[65])
    with pytest.raises(ValueError, match="columns"):
        bank.combine_cross(np.ones((2, 4)), np.ones(65), columns=[-1])
    ub = KernelBank.from_matrices(_psd_stack(rng), normalize="trace")
    with pytest.raises(ValueError, match="needs kernel specs.*combine_cross_matrices"):
        ub.cross(np.ones((2, 4)))
    with pytest.raises(ValueError, match="needs kernel specs"):
        ub.combine_cross(np.ones((2, 4)), np.ones(3))
    Kc = rng.standard_normal((3, 2, 10))
    w = np.array([1.0, 0.0, 2.0])
    want = (w / ub.scales) @ Kc.reshape(3, -1)
    assert_allclose(ub.combine_cross_matrices(Kc, w), want.reshape(2, 10))
    assert_allclose(ub.combine_cross_matrices(Kc, w, columns=[4]), want.reshape(2, 10)[:, [4]])
    with pytest.raises(ValueError, match="K_cross"):
        ub.combine_cross_matrices(Kc[:, :, :5], w)


# ------------------------------------------------------------ kernel functions
def test_functions_subset_and_take(bank, X, path):
    fn = bank.functions
    sub = fn.subset([3, 1])
    assert sub.specs == (bank.specs[3], bank.specs[1])
    assert_array_equal(sub.scales, bank.scales[[3, 1]])
    assert_array_equal(sub.matrices(), bank.K[[3, 1]])
    idx = np.array([4, 4, 0, 29])
    tk = fn.take(idx)
    assert_array_equal(tk.X, X[idx])
    if path == "direct":  # the same sums in the same order: the same bits
        same = assert_array_equal
    else:
        # The product path centres the features on the mean of the points the
        # kernels are read against: other points, other rounding, within
        # 1e-12 of each kernel's largest magnitude.
        def same(a, b):
            scale = np.abs(b).max(axis=(1, 2), keepdims=True)
            assert np.all(np.abs(a - b) <= 1e-12 * scale)
    same(tk.cross(X[:2]), bank.cross(X[:2])[:, :, idx])
    same(tk.matrices(), bank.K[:, idx][:, :, idx])
    with pytest.raises(ValueError, match="rows"):
        fn.take([30])
    with pytest.raises(ValueError, match="kernels"):
        fn.subset([65])
    with pytest.raises(ValueError, match="scales"):
        type(fn)(fn.specs, -fn.scales, X)


# --------------------------------------------------------------- from_matrices
def test_from_matrices_keeps_and_normalises(rng):
    K = _psd_stack(rng)
    b = KernelBank.from_matrices(K)
    assert b.K.base is K and not b.K.flags.writeable  # read through a view, not copied
    assert b.specs is None and b.X_train is None
    assert_array_equal(b.scales, 1.0)
    bl = KernelBank.from_matrices(list(K), normalize="trace")
    assert_allclose(np.trace(bl.K, axis1=1, axis2=2), 1.0)
    assert_allclose(bl.scales, np.trace(K, axis1=1, axis2=2))
    assert_array_equal(K, _psd_stack(np.random.default_rng(12345)))  # input untouched
    b32 = KernelBank.from_matrices(K.astype(np.float32))
    assert b32.K.dtype == np.float32
    assert KernelBank.from_matrices(K, dtype=np.float32).K.dtype == np.float32
    assert KernelBank.from_matrices(np.eye(3, dtype=int)[None]).K.dtype == np.float64
    assert "from=matrices" in repr(b)


def test_from_matrices_checks(rng):
    K = _psd_stack(rng, m=4)
    bad = K.copy()
    bad[2, 0, 1] = np.nan
    with pytest.raises(ValueError, match=r"K\[2\] contains NaN"):
        KernelBank.from_matrices(bad)
    asym = K.copy()
    asym[1, 0, 3] += 1.0
    with pytest.raises(ValueError, match=r"K\[1\] is not symmetric"):
        KernelBank.from_matrices(asym)
    indef = K.copy()
    indef[3] -= 50.0 * np.eye(10)
    lam = np.linalg.eigvalsh(indef[3])[0]
    with pytest.raises(ValueError, match=rf"K\[3\] is not positive semi-definite.*{lam:.3g}"):
        KernelBank.from_matrices(indef)
    # a mildly indefinite matrix with positive trace is caught too
    mild = K.copy()
    e, V = np.linalg.eigh(mild[0])
    e[0] = -1e-3 * e.sum()
    mild[0] = (V * e) @ V.T
    mild[0] = (mild[0] + mild[0].T) / 2
    with pytest.raises(ValueError, match=r"K\[0\] is not positive semi-definite"):
        KernelBank.from_matrices(mild)
    # rounding-level asymmetry and negative eigenvalues pass
    ok = K.copy()
    ok[0] = ok[0] + 1e-14 * rng.standard_normal((10, 10))
    KernelBank.from_matrices(ok)
    KernelBank.from_matrices(np.zeros((1, 5, 5)))
    # check=False skips symmetry and PSD (finiteness is always checked)
    assert KernelBank.from_matrices(indef, check=False).n_kernels == 4
    assert KernelBank.from_matrices(asym, check=False).n_kernels == 4
    with pytest.raises(ValueError, match="NaN"):
        KernelBank.from_matrices(bad, check=False)


def test_from_matrices_shapes():
    with pytest.raises(ValueError, match=r"pass \[K\]"):
        KernelBank.from_matrices(np.eye(3))
    with pytest.raises(ValueError, match="square"):
        KernelBank.from_matrices(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match="empty list"):
        KernelBank.from_matrices([])
    with pytest.raises(ValueError, match=r"K\[1\] has shape"):
        KernelBank.from_matrices([np.eye(3), np.eye(4)])
    with pytest.raises(TypeError, match="K must"):
        KernelBank.from_matrices("K")
    with pytest.raises(TypeError, match="real numbers"):
        KernelBank.from_matrices(np.zeros((1, 2, 2), dtype=complex))
    with pytest.raises(TypeError, match="check"):
        KernelBank.from_matrices(np.zeros((1, 2, 2)), check="yes")


# ------------------------------------------------------------------ real data
def test_ionosphere_grid_constant_feature():
    from mklopt import datasets

    X, y = datasets.load("ionosphere")
    Xtr, _, _, _ = datasets.split(X, y, seed=0)
    b = KernelBank.from_specs(Xtr, grid(Xtr.shape[1]), dtype=np.float32)
    assert b.n_kernels == 455 and np.all(np.isfinite(b.K))
    assert_allclose(np.trace(b.K, axis1=1, axis2=2, dtype=np.float64), 1.0, rtol=1e-5)
    assert KernelBank.from_specs(Xtr, grid(34, exclude=[1]), dtype=np.float32).n_kernels == 442


def test_top_level_export():
    assert mklopt.KernelBank is KernelBank and "KernelBank" in mklopt.__all__


@pytest.mark.parametrize("n_active", [1, 3, 9, 12])
@pytest.mark.parametrize("support_size", [2, 5, 20])
def test_bank_paths_agree_with_numpy(n_active, support_size):
    """combine and quad_forms switch between a jitted loop (sparse weights,
    small supports) and one BLAS pass (dense weights, large supports); both
    paths must give the NumPy result."""
    rng = np.random.default_rng(n_active * 100 + support_size)
    n, m = 20, 12
    X = rng.normal(size=(n, 3))
    specs = [rbf(s) for s in (0.5, 1.0, 2.0, 4.0)] + [
        poly(d, features=[f]) for d in (1, 2) for f in range(3)
    ] + [linear(), rbf(1.0, features=[0])]
    bank = KernelBank.from_specs(X, specs)
    assert bank.n_kernels == m
    w = np.zeros(m)
    w[rng.choice(m, n_active, replace=False)] = rng.uniform(0.1, 1.0, n_active)
    np.testing.assert_allclose(bank.combine(w), np.tensordot(w, bank.K, axes=1), atol=1e-14)
    S = np.sort(rng.choice(n, support_size, replace=False))
    v = rng.normal(size=n)
    vs = np.zeros(n)
    vs[S] = v[S]
    expect = np.einsum("i,kij,j->k", vs, bank.K, vs)
    np.testing.assert_allclose(bank.quad_forms(v, S), expect, rtol=1e-12, atol=1e-14)


def test_blocks_are_single_kernel_submatrices():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((12, 3))
    bank = KernelBank.from_specs(X, [rbf(1.0), poly(2), linear()])
    rows, cols = [0, 5, 5, 11], [3, 0]
    out = bank.blocks([2, 0, 2], rows, cols)
    assert out.shape == (3, 4, 2) and out.dtype == np.float64
    for j, k in enumerate([2, 0, 2]):
        np.testing.assert_array_equal(out[j], bank.K[k][np.ix_(rows, cols)])
    np.testing.assert_array_equal(bank.blocks([1], rows)[0], bank.K[1][np.ix_(rows, rows)])
    with pytest.raises(ValueError, match="kernels"):
        bank.blocks([3], rows)


def test_small_and_large_banks_build_the_same_bits_on_one_thread_or_many(X, monkeypatch):
    """``matrices`` builds small banks with the serial loop and large ones with threads."""
    from mklopt._jit import groups
    from mklopt.kernels import functions

    called = []
    for name in ("kernel_sym", "kernel_sym_serial"):
        real = getattr(groups, name)
        monkeypatch.setattr(groups, name,
                            lambda *a, _real=real, _name=name: called.append(_name) or _real(*a))
    small = KernelBank.from_specs(X, grid(X.shape[1])).K
    monkeypatch.setattr(functions, "SERIAL_SYM_ENTRIES", 0)
    large = KernelBank.from_specs(X, grid(X.shape[1])).K
    assert called == ["kernel_sym_serial", "kernel_sym"]
    assert_array_equal(small, large)
