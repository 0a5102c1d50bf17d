"""The kit's problems: toys drawn by hypothesis under a fixed seed, and their optima.

Drawn once per (profile, seed) and kept as constructor arguments, so that
every check builds fresh oracles (their call counters start at zero) and
every method is checked on the same problems. The reference optimum of a
problem on a feasible set is computed once as well.
"""

import contextlib
import functools

import numpy as np

from .._optional import require
from ..domains import ElasticNet, Simplex
from ._toys import PiecewiseLinearOracle, SmoothQuadraticOracle

#: Kernel counts are drawn in these bands, so that every profile has small,
#: medium and large problems (a flaw that shows only past 5 kernels is met).
BANDS = ((2, 5), (6, 16), (17, 50))


class Problem:
    """A toy problem: how to build its oracle, and a readable name for messages."""

    def __init__(self, kind, args, label):
        self.kind = kind  # "piecewise" or "smooth"
        self.args = args
        self.label = label

    def make(self):
        """A fresh oracle of this problem (its ``n_calls`` at zero)."""
        cls = PiecewiseLinearOracle if self.kind == "piecewise" else SmoothQuadraticOracle
        return cls(*self.args)

    def __repr__(self):
        return self.label


def _piecewise_strategy(lo, hi):
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays

    from .strategies import reals, zero_or

    @st.composite
    def draw(d):
        m = d(st.integers(lo, hi))
        J = d(st.integers(2, 12))
        # every entry drawn (no fill value), so ties are the ones made below
        s = d(arrays(np.float64, J, elements=reals(5.0, 6.0).map(lambda v: round(v, 2)),
                     fill=st.nothing()))
        Q = d(arrays(np.float64, (J, m), elements=zero_or(0.25, 9.0), fill=st.nothing()))
        n_dup = d(st.integers(0, J // 2))
        if n_dup:  # pieces that tie exactly
            s[J - n_dup:], Q[J - n_dup:] = s[:n_dup], Q[:n_dup]
        n_tie = d(st.integers(0, m // 2))
        if n_tie:  # kernels with the same q in every piece: ties in max_k q_k
            Q[:, m - n_tie:] = Q[:, :n_tie]
        return s, Q

    return draw()


def _smooth_strategy(lo, hi):
    from .strategies import smooth_quadratic_oracles

    return smooth_quadratic_oracles(min_m=lo, max_m=hi, dim=4).map(lambda o: (o.s, o.M))


@contextlib.contextmanager
def _no_local_constants():
    """Within the block, hypothesis draws no literals from the caller's own modules.

    Hypothesis (6.131 and later) also draws, now and then, the numbers
    written in the source of every non-installed module imported so far, so
    a draw under a fixed seed changed with what the process had imported
    (a thorough-kit run of SPG passed alone and failed after another test,
    on a different toy). The kit's problems must be the same in every
    process; there is no public switch, so the pool is emptied here, and
    left as it is if hypothesis changes its internals
    (``tests/testing/test_kit_draws.py`` then fails).
    """
    try:
        from hypothesis.internal.conjecture import providers
        get, cache, empty = (providers._get_local_constants, providers.CONSTANTS_CACHE,
                             providers.Constants())
    except (ImportError, AttributeError):  # pragma: no cover - other hypothesis versions
        yield
        return
    providers._get_local_constants = lambda: empty
    cache.cache.clear()
    try:
        yield
    finally:
        providers._get_local_constants = get
        cache.cache.clear()


def _draw(strategy, n, seed):
    """``n`` examples of ``strategy``, drawn by hypothesis from ``seed`` (reproducibly)."""
    require("hypothesis", "mklopt.testing.check_method")
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    out = []

    @hseed(seed)
    @settings(max_examples=n + 1, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(strategy)
    def collect(example):
        out.append(example)

    with _no_local_constants():
        collect()
    # hypothesis tries the simplest example first (all zeros): a constant J,
    # which every method solves at once; the kit keeps the drawn ones after it
    return out[1:n + 1]


@functools.lru_cache(maxsize=64)
def drawn(n_per_band, seed):
    """Drawn problems: ``n_per_band`` of each kind in each band of :data:`BANDS`."""
    out = []
    for b, (lo, hi) in enumerate(BANDS):
        for kind, strategy in (("piecewise", _piecewise_strategy), ("smooth", _smooth_strategy)):
            for i, args in enumerate(_draw(strategy(lo, hi), n_per_band, seed * 1000 + 10 * b)):
                m = args[1].shape[1] if kind == "piecewise" else args[1].shape[0]
                label = (f"a drawn {kind} toy with {m} kernels (draw {i} of band {lo}-{hi}, "
                         f"seed {seed})")
                out.append(Problem(kind, args, label))
    return tuple(out)


@functools.lru_cache(maxsize=256)
def fixed(kind, n_kernels, seed):
    """A toy from the oracles' own ``random`` constructors (for rates and hand-overs)."""
    if kind == "piecewise":
        o = PiecewiseLinearOracle.random(n_kernels, max(6, n_kernels // 2), seed=seed)
        args = (o.s, o.Q)
    else:
        o = SmoothQuadraticOracle.random(n_kernels, 4, seed=seed)
        args = (o.s, o.M)
    return Problem(kind, args, repr(o) + f" (seed {seed})")


_REFERENCES = {}


def reference(problem, domain):
    """``(J*, slack)`` of ``problem`` on ``domain``, or None when the kit has no reference.

    L1 (the simplex): the certified optimum, slack ``max(bound, 1e-9 |J*|)``.
    Other sets: the smooth toy's conic optimum (cvxpy, a test extra), good
    to about 1e-6 relative, so the slack is ``1e-6 |J*|``. Computed once per
    problem and set.
    """
    key = (id(problem), repr(domain))
    if key not in _REFERENCES:
        _REFERENCES[key] = _reference(problem.make(), domain)
    return _REFERENCES[key]


def _reference(oracle, domain):
    l1 = domain is None or isinstance(domain, Simplex) or (
        isinstance(domain, ElasticNet) and domain.lam == 0.0)
    if l1:
        value, bound = oracle.certified_l1_optimum()
        return value, max(bound, 1e-9 * max(1.0, abs(value)))
    if isinstance(oracle, SmoothQuadraticOracle):
        value = oracle.exact_optimum(domain)
        return value, 1e-6 * max(1.0, abs(value))
    return None
