"""The toy oracles' reference L1 optima are certified to 1e-8 (in fact ~1e-15).

Each optimum comes with a bound: the value is J at a point of the simplex,
and value - bound is a dual value, which no point of the simplex beats. The
tests check both sides independently of how the optimum was found: the
returned value is J at the returned weights, no drawn point of the simplex
lies below value - bound, and the bound is at most 1e-8 relative.
"""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mklopt.testing import PiecewiseLinearOracle, SmoothQuadraticOracle
from mklopt.testing import strategies as mst


def _no_point_below(oracle, floor, seed):
    rng = np.random.default_rng(seed)
    m = oracle.n_kernels
    pts = np.r_[np.eye(m), rng.dirichlet(np.ones(m), size=200)]
    for w in pts:
        assert oracle(w).value >= floor - 1e-12 * max(1.0, abs(floor))


@settings(max_examples=40, deadline=None)
@given(mst.piecewise_linear_oracles(), st.integers(0, 100))
def test_piecewise_linear_optimum_is_certified(oracle, seed):
    value, bound = oracle.certified_l1_optimum()
    assert 0.0 <= bound <= 1e-8 * max(1.0, abs(value))
    v, w = oracle.exact_l1_solution()
    assert v == value and np.all(w >= 0) and abs(w.sum() - 1.0) < 1e-12
    assert oracle(w).value == value  # the value is attained at w
    _no_point_below(oracle, value - bound, seed)


@settings(max_examples=25, deadline=None)
@given(mst.smooth_quadratic_oracles(max_m=6), st.integers(0, 100))
def test_smooth_quadratic_optimum_is_certified(oracle, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cvxpy's "may be inaccurate" before polishing
        value, bound = oracle.certified_l1_optimum()
    assert 0.0 <= bound <= 1e-8 * max(1.0, abs(value))
    _no_point_below(oracle, value - bound, seed)


def test_polishing_improves_on_the_conic_answer():
    # the measured case: the conic solver alone errs by ~1e-9..1e-6;
    # the certified bound is far tighter than that on every seed
    for seed in range(5):
        oracle = SmoothQuadraticOracle.random(6, 5, seed=seed)
        value, bound = oracle.certified_l1_optimum()
        assert bound <= 1e-12 * abs(value)
        p = PiecewiseLinearOracle.random(5, 8, seed=seed)
        assert p.certified_l1_optimum()[1] <= 1e-12 * abs(p.exact_l1_optimum())


def test_proportional_kernels_do_not_stall_the_polish():
    # Found by hypothesis: kernels 1 and 2 are multiples of the identity (one
    # twice the other), so the face system of Newton's method is singular
    # from the uniform start, and Newton alone cycled between two faces; the
    # conic fallback then certified only 9e-6. Every step now makes progress.
    diag = np.array([[1.6327515, 0.09375, 0.09375, 0.09375],
                     [0.1875, 0.1875, 0.1875, 0.1875],
                     [0.09375, 0.09375, 0.09375, 0.09375],
                     [0.5295471, 0.165625, 0.165625, 0.165625]])
    oracle = SmoothQuadraticOracle(-np.ones(4), np.stack([np.diag(r) for r in diag]))
    value, bound = oracle.certified_l1_optimum()
    assert bound <= 1e-12 * abs(value)
    _no_point_below(oracle, value - bound, 0)


def test_a_weight_at_rounding_level_leaves_the_newton_face():
    # Found by hypothesis under load in a fresh clone: kernels 3 and 4 are
    # the same matrix; a cut left kernel 3 at 2e-16, Newton's face kept it
    # and asked its q_k to rise to the others', the cut at its zero left no
    # step, and the polish stalled at 5e-7 (4.5e-8 after the conic restart).
    diag = np.array([[0.1, 1.1, 0.1, 0.1],
                     [0.1, 0.1, 1.1, 0.1],
                     [0.1, 0.1, 0.1, 4.1],
                     [0.1, 0.1, 0.1, 0.1],
                     [0.1, 0.1, 0.1, 0.1]])
    oracle = SmoothQuadraticOracle(np.array([-0.25, -1.0, -2.0, -0.25]),
                                   np.stack([np.diag(r) for r in diag]))
    value, bound, w = oracle._polish_l1(np.full(5, 0.2))
    assert bound <= 1e-12 * abs(value)  # Newton alone, without the conic restart
    value, bound = oracle.certified_l1_optimum()
    assert bound <= 1e-12 * abs(value)
    _no_point_below(oracle, value - bound, 0)
