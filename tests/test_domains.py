import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mklopt import OracleAnswer
from mklopt.domains import GroupSimplex, LpBall, Simplex, as_groups


def answer(w, q, linear_term=10.0):
    q = np.asarray(q, float)
    return OracleAnswer(w=w, value=linear_term - 0.5 * float(w @ q), grad=-q / 2, q=q,
                        alpha=np.zeros(1), bias=0.0, support=np.zeros(0, np.int64),
                        linear_term=linear_term)


seeds = st.integers(0, 10**6)


@given(seeds, st.integers(1, 12))
def test_simplex_gap_is_nonnegative_and_matches_definition(seed, m):
    rng = np.random.default_rng(seed)
    w = rng.dirichlet(np.ones(m))
    q = rng.uniform(0, 50, m)
    a = answer(w, q)
    d = Simplex(m)
    assert d.contains(w)
    assert d.gap(w, a) >= 0
    # gap = J(w) - D(alpha) with D = 1'a - max q / 2 (DESIGN section 1)
    assert d.gap(w, a) == pytest.approx(a.value - d.dual_value(a), abs=1e-9)
    assert d.dual_value(a) == pytest.approx(10.0 - 0.5 * q.max())


@given(seeds, st.integers(1, 10), st.sampled_from([1.1, 4 / 3, 2.0, 4.0, 10.0]))
def test_lp_gap_is_nonnegative_on_the_ball(seed, m, p):
    rng = np.random.default_rng(seed)
    d = LpBall(m, p)
    theta = rng.uniform(0, 1, m)
    theta /= np.linalg.norm(theta, p) * rng.uniform(1.0, 2.0)
    q = rng.uniform(0, 50, m)
    a = answer(theta, q)
    assert d.contains(theta)
    assert d.gap(theta, a) >= -1e-12
    assert d.support(q) == pytest.approx(np.linalg.norm(q, p / (p - 1)))
    # Hoelder is tight: the maximiser theta ∝ q^(p*-1) attains h(q)
    t = q ** (d.p_star - 1)
    t /= np.linalg.norm(t, p)
    assert t @ q == pytest.approx(d.support(q), rel=1e-9)
    np.testing.assert_allclose(d.initial(), np.full(m, m ** (-1 / p)))
    assert np.linalg.norm(d.initial(), p) == pytest.approx(1.0)


@given(seeds, st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_group_gap_is_nonnegative_at_the_analytic_gamma(seed, sizes):
    rng = np.random.default_rng(seed)
    m = sum(sizes)
    perm = rng.permutation(m)
    groups, start = [], 0
    for s in sizes:
        groups.append(perm[start : start + s].tolist())
        start += s
    d = GroupSimplex(groups, m)
    lam = np.zeros(m)
    for g in groups:
        lam[g] = rng.dirichlet(np.ones(len(g)))
    q = rng.uniform(0, 50, m)
    W = d.group_sums(lam * q)
    gamma = np.sqrt(W) / np.sqrt(W).sum()  # Nath et al. eq. 6
    w = d.effective(lam, gamma)
    assert d.contains(w)
    a = answer(w, q)
    # at the analytic gamma, w'q = (sum_j sqrt(W_j))^2 <= h(q)
    assert w @ q == pytest.approx(np.sqrt(W).sum() ** 2, rel=1e-9)
    assert d.gap(w, a) >= -1e-9 * (1 + q.max())
    assert d.contains(d.initial())
    p = d.project(rng.normal(size=m))
    for g in groups:
        assert p[g].sum() == pytest.approx(1.0) and p[g].min() >= 0


def test_one_group_is_the_simplex():
    q = np.array([3.0, 7.0, 5.0])
    assert GroupSimplex([[0, 1, 2]], 3).support(q) == pytest.approx(Simplex(3).support(q))


@pytest.mark.parametrize(
    "groups, msg",
    [
        ([], "empty"),
        ([[0, 1], []], "empty group"),
        ([[0, 1]], "exactly once"),
        ([[0, 1], [1, 2]], "exactly once"),
        ([[0, 1], [2, 5]], "outside"),
        ("abc", "list of lists"),
    ],
)
def test_bad_groups(groups, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        as_groups(groups, 3)


def test_bad_domain_parameters():
    with pytest.raises(ValueError, match="p"):
        LpBall(3, 1.0)
    with pytest.raises(ValueError, match="n_kernels"):
        Simplex(0)
    with pytest.raises(ValueError, match="length"):
        Simplex(3).project([1.0, 2.0])
