"""The toy oracles live in the package (:mod:`mklopt.testing`); re-exported here."""

from mklopt.testing import PiecewiseLinearOracle, SmoothQuadraticOracle

__all__ = ["PiecewiseLinearOracle", "SmoothQuadraticOracle"]
