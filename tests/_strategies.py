"""The project's strategies are the kit's (:mod:`mklopt.testing.strategies`); re-exported here."""

from mklopt.testing.strategies import (  # noqa: F401
    labels,
    log_uniform,
    partitions,
    piecewise_linear_oracles,
    points,
    reals,
    simplex_points,
    smooth_quadratic_oracles,
    zero_or,
)
