"""Jitted kernel and combination primitives against their NumPy twins."""

import ast
import pathlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from numpy.testing import assert_allclose, assert_array_equal

from mklopt._jit import combine as jc
from mklopt._jit import kernels as jk
from tests import _reference as ref

finite = st.floats(-10, 10, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def two_matrices(draw, max_rows=8, max_cols=4):
    d = draw(st.integers(1, max_cols))
    na = draw(st.integers(1, max_rows))
    nb = draw(st.integers(1, max_rows))
    A = draw(arrays(np.float64, (na, d), elements=finite))
    B = draw(arrays(np.float64, (nb, d), elements=finite))
    return A, B


@st.composite
def psd_bank(draw, max_m=5, max_n=8):
    """A small bank of PSD matrices F F' (rank-deficient ones included)."""
    m = draw(st.integers(1, max_m))
    n = draw(st.integers(1, max_n))
    r = draw(st.integers(1, 3))
    F = draw(arrays(np.float64, (m, n, r), elements=st.floats(-3, 3, width=64)))
    return np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F))


# ----------------------------------------------------------------- distances
@given(two_matrices())
def test_sq_dists_matches_reference(AB):
    A, B = AB
    out = jk.sq_dists(A, B, np.empty((A.shape[0], B.shape[0])))
    assert_allclose(out, ref.sq_dists(A, B), rtol=1e-12, atol=1e-12)
    assert np.all(out >= 0.0)


@given(two_matrices())
def test_sq_dists_sym_exact_zero_diagonal_and_symmetric(AB):
    A, _ = AB
    out = jk.sq_dists_sym(A, np.empty((A.shape[0],) * 2))
    assert_allclose(out, ref.sq_dists(A, A), rtol=1e-12, atol=1e-12)
    assert np.all(np.diag(out) == 0.0)
    assert_array_equal(out, out.T)
    assert np.all(out >= 0.0)
    # the general routine gives the same bits on the same points
    assert_array_equal(out, jk.sq_dists(A, A, np.empty_like(out)))


@given(two_matrices())
def test_gram_matches_reference(AB):
    A, B = AB
    out = jk.gram(A, B, np.empty((A.shape[0], B.shape[0])))
    assert_allclose(out, ref.gram(A, B), rtol=1e-12, atol=1e-10)
    sym = jk.gram_sym(A, np.empty((A.shape[0],) * 2))
    assert_array_equal(sym, sym.T)
    assert_array_equal(sym, jk.gram(A, A, np.empty_like(sym)))


# -------------------------------------------------------------- kernel values
@given(two_matrices(), st.lists(st.floats(0.05, 50.0), min_size=1, max_size=4))
def test_rbf_values_in_unit_interval_with_unit_diagonal(AB, sigmas):
    A, B = AB
    sig = np.array(sigmas)
    D2 = jk.sq_dists_sym(A, np.empty((A.shape[0],) * 2))
    out = jk.rbf_from_sq_dists(D2, sig, np.ones(sig.size), np.empty((sig.size,) + D2.shape))
    assert np.all(out <= 1.0) and np.all(out >= 0.0)
    for k in range(sig.size):
        assert np.all(np.diag(out[k]) == 1.0)
    D2ab = ref.sq_dists(A, B)
    scales = np.linspace(0.5, 2.0, sig.size)
    got = jk.rbf_from_sq_dists(D2ab, sig, scales, np.empty((sig.size,) + D2ab.shape))
    assert_allclose(got, ref.rbf_from_sq_dists(D2ab, sig, scales), rtol=1e-12, atol=1e-300)


def test_rbf_strictly_positive_for_moderate_distances(rng):
    A = rng.standard_normal((6, 3))
    D2 = jk.sq_dists_sym(A, np.empty((6, 6)))
    out = jk.rbf_from_sq_dists(D2, np.array([1.0, 4.0]), np.ones(2), np.empty((2, 6, 6)))
    assert np.all(out > 0.0) and np.all(out <= 1.0)


@given(two_matrices(max_cols=3), st.lists(st.integers(1, 4), min_size=1, max_size=3))
def test_poly_from_gram_matches_reference(AB, degrees):
    A, B = AB
    deg = np.array(degrees, dtype=np.int64)
    offsets = np.where(np.arange(deg.size) % 2 == 0, 1.0, 0.0)
    scales = np.linspace(0.5, 2.0, deg.size)
    G = ref.gram(A, B)
    got = jk.poly_from_gram(G, deg, offsets, scales, np.empty((deg.size,) + G.shape))
    want = ref.poly_from_gram(G, deg, offsets, scales)
    assert_allclose(got, want, rtol=1e-10, atol=1e-8)


def test_float32_output_block(rng):
    A = rng.standard_normal((5, 2))
    D2 = jk.sq_dists_sym(A, np.empty((5, 5)))
    out32 = jk.rbf_from_sq_dists(D2, np.array([1.0]), np.ones(1), np.empty((1, 5, 5), np.float32))
    out64 = jk.rbf_from_sq_dists(D2, np.array([1.0]), np.ones(1), np.empty((1, 5, 5)))
    assert out32.dtype == np.float32
    assert_allclose(out32, out64, rtol=1e-6)


def test_accumulate_matches_sum_of_kernels(rng):
    A, B = rng.standard_normal((4, 3)), rng.standard_normal((6, 3))
    D2, G = ref.sq_dists(A, B), ref.gram(A, B)
    sig = np.array([0.5, 1.0, 2.0])
    wr = np.array([0.3, 0.0, 1.2])
    deg, off, wg = np.array([1, 2], np.int64), np.array([0.0, 1.0]), np.array([0.5, 0.25])
    out = np.zeros((4, 6))
    jk.rbf_accumulate(D2, sig, wr, out)
    jk.poly_accumulate(G, deg, off, wg, out)
    want = ref.combine(ref.rbf_from_sq_dists(D2, sig, np.ones(3)), wr) + ref.combine(
        ref.poly_from_gram(G, deg, off, np.ones(2)), wg
    )
    assert_allclose(out, want, rtol=1e-12)


def test_against_sklearn_pairwise(rng):
    pairwise = pytest.importorskip("sklearn.metrics.pairwise")
    A, B = rng.standard_normal((7, 4)), rng.standard_normal((5, 4))
    sig = np.array([0.5, 2.0])
    D2 = jk.sq_dists(A, B, np.empty((7, 5)))
    got = jk.rbf_from_sq_dists(D2, sig, np.ones(2), np.empty((2, 7, 5)))
    for k, s in enumerate(sig):
        assert_allclose(got[k], pairwise.rbf_kernel(A, B, gamma=1 / (2 * s**2)), rtol=1e-10)
    G = jk.gram(A, B, np.empty((7, 5)))
    deg = np.array([1, 3], np.int64)
    got = jk.poly_from_gram(G, deg, np.ones(2), np.ones(2), np.empty((2, 7, 5)))
    for k, p in enumerate(deg):
        want = pairwise.polynomial_kernel(A, B, degree=int(p), gamma=1.0, coef0=1.0)
        assert_allclose(got[k], want, rtol=1e-10)


# ---------------------------------------------------------------- combination
@given(psd_bank(), st.data())
def test_combine_matches_reference_and_is_linear(K, data):
    m, n = K.shape[:2]
    w1 = data.draw(arrays(np.float64, m, elements=st.floats(0, 2, width=64)))
    w2 = data.draw(arrays(np.float64, m, elements=st.floats(0, 2, width=64)))
    c = data.draw(st.floats(0, 3))
    f = lambda w: jc.combine_kernels(K, np.ascontiguousarray(w), np.empty((n, n)))  # noqa: E731
    assert_allclose(f(w1), ref.combine(K, w1), rtol=1e-12, atol=1e-10)
    assert_allclose(f(w1 + c * w2), f(w1) + c * f(w2), rtol=1e-10, atol=1e-9)
    assert_array_equal(f(w1), f(w1).T)


def test_combine_skips_zero_weights(rng):
    K = np.ascontiguousarray(np.stack([np.eye(4), np.full((4, 4), np.nan), 2 * np.eye(4)]))
    out = jc.combine_kernels(K, np.array([1.0, 0.0, 0.5]), np.empty((4, 4)))
    assert_array_equal(out, 2 * np.eye(4))


@pytest.mark.parametrize("m", [1, 3, 4, 5, 9])
def test_combine_unroll_remainders_and_float32(rng, m):
    F = rng.standard_normal((m, 6, 3))
    K = np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F))
    w = rng.random(m)
    w[rng.random(m) < 0.3] = 0.0
    out = jc.combine_kernels(K, w, np.empty((6, 6)))
    assert_allclose(out, ref.combine(K, w), rtol=1e-12, atol=1e-12)
    out32 = jc.combine_kernels(K.astype(np.float32), w, np.empty((6, 6)))
    assert out32.dtype == np.float64
    assert_allclose(out32, ref.combine(K.astype(np.float32), w), rtol=1e-12, atol=1e-12)


@given(psd_bank(), st.data())
def test_quad_forms_match_reference_and_nonnegative(K, data):
    m, n = K.shape[:2]
    v = data.draw(arrays(np.float64, n, elements=st.floats(-5, 5, width=64)))
    S = np.array(
        sorted(data.draw(st.sets(st.integers(0, n - 1), min_size=0, max_size=n))), dtype=np.int64
    )
    q = jc.quad_forms(K, v, S, np.empty(m))
    assert_allclose(q, ref.quad_forms(K, v, S), rtol=1e-10, atol=1e-9)
    scale = np.sum(v**2) * np.max(np.abs(K)) * max(n, 1)
    assert np.all(q >= -1e-12 * max(scale, 1.0))


def test_quad_forms_unsorted_support_and_float32(rng):
    F = rng.standard_normal((3, 9, 9))
    K = np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F))
    v = rng.standard_normal(9)
    S = np.array([7, 2, 5, 0, 8, 3], dtype=np.int64)
    q = jc.quad_forms(K, v, S, np.empty(3))
    assert_allclose(q, ref.quad_forms(K, v, S), rtol=1e-12)
    q32 = jc.quad_forms(K.astype(np.float32), v, S, np.empty(3))
    assert_allclose(q32, ref.quad_forms(K.astype(np.float32), v, S), rtol=1e-10)


def test_combine_block_with_repeats(rng):
    K = rng.standard_normal((4, 7, 7))
    w = np.array([0.5, 0.0, 2.0, 1.0])
    rows = np.array([3, 3, 0, 6], dtype=np.int64)
    cols = np.array([1, 5, 5], dtype=np.int64)
    out = jc.combine_block(K, w, rows, cols, np.empty((4, 3)))
    assert_allclose(out, ref.combine_block(K, w, rows, cols), rtol=1e-12)


# --------------------------------------------------------- pure-Python paths
def _py(fn):
    """The pure-Python body of a jitted function (itself when JIT is disabled)."""
    return getattr(fn, "py_func", fn)


def test_py_func_paths_agree_on_tiny_inputs(rng):
    """Run the uncompiled bodies too (coverage and a second opinion)."""
    A, B = rng.standard_normal((3, 2)), rng.standard_normal((2, 2))
    assert_allclose(_py(jk.sq_dists)(A, B, np.empty((3, 2))), ref.sq_dists(A, B))
    assert_allclose(_py(jk.sq_dists_sym)(A, np.empty((3, 3))), ref.sq_dists(A, A), atol=1e-15)
    assert_allclose(_py(jk.gram)(A, B, np.empty((3, 2))), ref.gram(A, B))
    assert_allclose(_py(jk.gram_sym)(A, np.empty((3, 3))), ref.gram(A, A))
    D2, G = ref.sq_dists(A, B), ref.gram(A, B)
    sig, one = np.array([0.7]), np.ones(1)
    assert_allclose(
        _py(jk.rbf_from_sq_dists)(D2, sig, one, np.empty((1, 3, 2))),
        ref.rbf_from_sq_dists(D2, sig, one),
    )
    deg, off = np.array([3], np.int64), np.array([1.0])
    assert _py(jk._ipow)(1.5, 3) == 1.5**3
    assert_allclose(
        _py(jk.poly_from_gram)(G, deg, off, one, np.empty((1, 3, 2))),
        ref.poly_from_gram(G, deg, off, one),
    )
    out = np.zeros((3, 2))
    _py(jk.rbf_accumulate)(D2, sig, np.array([2.0]), out)
    _py(jk.poly_accumulate)(G, deg, off, np.array([0.5]), out)
    want = (
        2 * ref.rbf_from_sq_dists(D2, sig, one)[0] + 0.5 * ref.poly_from_gram(G, deg, off, one)[0]
    )
    assert_allclose(out, want)

    F = rng.standard_normal((5, 3, 2))
    K = np.ascontiguousarray(np.einsum("kir,kjr->kij", F, F))
    w = np.array([1.0, 0.0, 0.5, 2.0, 0.25])
    assert_array_equal(_py(jc._active)(w), [0, 2, 3, 4])
    assert_allclose(_py(jc.combine_kernels)(K, w, np.empty((3, 3))), ref.combine(K, w))
    v, S = rng.standard_normal(3), np.array([0, 2], dtype=np.int64)
    assert_allclose(_py(jc.quad_forms)(K, v, S, np.empty(5)), ref.quad_forms(K, v, S))
    r, c = np.array([1, 1], np.int64), np.array([0, 2], np.int64)
    assert_allclose(
        _py(jc.combine_block)(K, w, r, c, np.empty((2, 2))), ref.combine_block(K, w, r, c)
    )


# ------------------------------------------------------------ STYLE 2.6 lint
_JIT_DIR = pathlib.Path(__file__).resolve().parents[2] / "mklopt" / "_jit"
_ALLOWED_OPTIONS = {"JIT"}
_JIT_NAMES = {"njit", "jit", "generated_jit", "vectorize", "guvectorize", "stencil", "cfunc"}


def _decorator_name(dec):
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Name):
        return target.id
    return None


def _jit_decorator_problems(path):
    problems = []
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if _decorator_name(dec) not in _JIT_NAMES:
                continue
            where = f"{path.name}:{node.lineno} {node.name}"
            if _decorator_name(dec) != "njit":
                problems.append(f"{where}: use @njit(**JIT), not @{_decorator_name(dec)}")
                continue
            ok = (
                isinstance(dec, ast.Call)
                and not dec.args
                and len(dec.keywords) == 1
                and dec.keywords[0].arg is None
                and isinstance(dec.keywords[0].value, ast.Name)
                and dec.keywords[0].value.id in _ALLOWED_OPTIONS
            )
            if not ok:
                problems.append(f"{where}: decorator must be exactly @njit(**JIT)")
    return problems


def test_every_njit_uses_shared_options():
    files = sorted(_JIT_DIR.glob("*.py"))
    assert any(p.name == "kernels.py" for p in files)
    problems = [msg for p in files for msg in _jit_decorator_problems(p)]
    assert not problems, "\n".join(problems)


def test_lint_catches_bad_decorators(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from numba import njit\n"
        "@njit\ndef a(x): return x\n"
        "@njit(cache=True)\ndef b(x): return x\n"
        "@njit(**JIT, parallel=True)\ndef c(x): return x\n"
        "@njit(**JIT)\ndef d(x): return x\n"
    )
    names = [msg.split()[1].rstrip(":") for msg in _jit_decorator_problems(bad)]
    assert names == ["a", "b", "c"]


def test_options_keep_fastmath_off():
    from mklopt._jit._options import JIT

    assert JIT["fastmath"] is False
