"""Hypothesis strategies for testing MKL code: simplex points, partitions, toy oracles, data.

They draw the test data itself (not an integer seed fed to NumPy), so that
hypothesis can search for the edges (exact zeros, ties, duplicate rows, a
class of one point, a constant feature) and shrink a failure to a small
readable example::

    from hypothesis import given
    from mklopt.testing import strategies as mst

    @given(mst.smooth_quadratic_oracles(), mst.simplex_points(3))
    def test_my_method(oracle, w0): ...

hypothesis is a test dependency, not one of mklopt's: this module imports it
when it is itself imported (``import mklopt.testing`` does not), and says
how to install it if it is missing.
"""

import numpy as np

from .._optional import require
from ._toys import PiecewiseLinearOracle, SmoothQuadraticOracle

require("hypothesis", "mklopt.testing.strategies")
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402

__all__ = ["reals", "log_uniform", "zero_or", "simplex_points", "partitions", "points", "labels",
           "piecewise_linear_oracles", "smooth_quadratic_oracles"]


def reals(lo, hi):
    """Finite floats in ``[lo, hi]`` without subnormals."""
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)


def log_uniform(lo, hi):
    """Floats spread over decades: ``10**u`` for ``u`` in ``[log10 lo, log10 hi]``."""
    return reals(np.log10(lo), np.log10(hi)).map(lambda u: float(10.0**u))


def zero_or(lo, hi):
    """An exact zero or a float in ``[lo, hi]`` (``lo > 0`` keeps clear of underflow)."""
    return st.one_of(st.just(0.0), reals(lo, hi))


@st.composite
def simplex_points(draw, m):
    """A point of the unit simplex in R^m, with exact zeros reachable (not all zero)."""
    w = draw(arrays(np.float64, m, elements=zero_or(1e-3, 1.0)))
    if not np.any(w > 0):
        w[draw(st.integers(0, m - 1))] = 1.0
    return w / w.sum()


@st.composite
def partitions(draw, m):
    """Groups partitioning ``range(m)``, drawn as one group label per index.

    Any partition is reachable (non-contiguous groups, singletons, one group);
    the groups are listed in order of their first index.
    """
    labels = draw(st.lists(st.integers(0, m - 1), min_size=m, max_size=m))
    order = list(dict.fromkeys(labels))
    return [[k for k in range(m) if labels[k] == lab] for lab in order]


@st.composite
def points(draw, n, d, lo=-3.0, hi=3.0):
    """``(n, d)`` points with duplicate rows and a constant feature reachable.

    The coordinates are rounded to three decimals so that exact ties are common.
    """
    coord = reals(lo, hi).map(lambda v: round(v, 3))
    X = draw(arrays(np.float64, (n, d), elements=coord))
    n_dup = draw(st.integers(0, n // 2))
    if n_dup:  # the last rows repeat the first ones exactly
        X[n - n_dup:] = X[:n_dup]
    if d > 1 and draw(st.booleans()):
        X[:, draw(st.integers(0, d - 1))] = 0.7  # a constant feature
    return X


@st.composite
def labels(draw, n):
    """+-1 labels with both classes present; a class of one point is reachable."""
    n_pos = draw(st.integers(1, n - 1))
    y = np.where(np.arange(n) < n_pos, 1.0, -1.0)
    return y[draw(st.permutations(range(n)))]


@st.composite
def piecewise_linear_oracles(draw, min_m=2, max_m=8, min_pieces=2, max_pieces=10):
    """A :class:`PiecewiseLinearOracle` with drawn pieces.

    ``q_j`` may hold exact zeros (a kernel useless to a piece), pieces may be
    exact duplicates, and a piece may dominate the others.
    """
    m = draw(st.integers(min_m, max_m))
    J = draw(st.integers(min_pieces, max_pieces))
    s = draw(arrays(np.float64, J, elements=reals(5.0, 6.0).map(lambda v: round(v, 2))))
    Q = draw(arrays(np.float64, (J, m), elements=zero_or(0.25, 9.0)))
    n_dup = draw(st.integers(0, J // 2))
    if n_dup:
        s[J - n_dup:], Q[J - n_dup:] = s[:n_dup], Q[:n_dup]
    return PiecewiseLinearOracle(s, Q)


@st.composite
def smooth_quadratic_oracles(draw, min_m=1, max_m=8, dim=4):
    """A :class:`SmoothQuadraticOracle` with drawn factors, scales and linear term.

    ``M_k = B_k B_k' + 0.1 I`` scaled by ``c_k`` in [0.2, 2], so every ``M_k`` is
    positive definite with condition number at most ``1 + 10 ||B_k||^2``; ``B_k``
    may be zero (``M_k`` a multiple of the identity) or repeat another kernel's.
    ``s`` is kept away from zero so that ``J`` is not identically zero.
    """
    m = draw(st.integers(min_m, max_m))
    B = draw(arrays(np.float64, (m, dim, dim), elements=st.one_of(st.just(0.0), reals(-2.0, 2.0))))
    if m > 1 and draw(st.booleans()):
        B[-1] = B[0]  # two identical kernels (up to their scale)
    c = draw(arrays(np.float64, m, elements=reals(0.2, 2.0)))
    M = (np.einsum("kij,klj->kil", B, B) + 0.1 * np.eye(dim)) * c[:, None, None]
    mag = draw(arrays(np.float64, dim, elements=reals(0.1, 2.0)))
    sign = draw(arrays(np.float64, dim, elements=st.sampled_from([-1.0, 1.0])))
    return SmoothQuadraticOracle(sign * mag, M)
