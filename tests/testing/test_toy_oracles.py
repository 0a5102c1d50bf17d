"""The toy oracles: one return convention for the optimum, a readable repr."""

import numpy as np

from mklopt.testing import PiecewiseLinearOracle, SmoothQuadraticOracle


def test_both_toys_return_the_optimum_as_a_float():
    pl = PiecewiseLinearOracle.random(4, 6, seed=1)
    sq = SmoothQuadraticOracle.random(3, seed=1)
    assert isinstance(pl.exact_l1_optimum(), float)
    assert isinstance(sq.exact_l1_optimum(), float)


def test_piecewise_solution_attains_its_value():
    """The LP's minimiser is feasible and J at it equals the reported optimum."""
    oracle = PiecewiseLinearOracle.random(5, 7, seed=2)
    value, w = oracle.exact_l1_solution()
    assert np.all(w >= -1e-12) and abs(w.sum() - 1.0) <= 1e-9
    assert abs(oracle(w).value - value) <= 1e-8 * max(1.0, abs(value))
    assert value == oracle.exact_l1_optimum()


def test_repr_names_the_class_and_its_size():
    assert repr(PiecewiseLinearOracle.random(4, 6)) == (
        "PiecewiseLinearOracle(n_kernels=4, n_pieces=6)"
    )
    assert "SmoothQuadraticOracle(n_kernels=3" in repr(SmoothQuadraticOracle.random(3))
