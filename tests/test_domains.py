import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import OracleAnswer
from mklopt.domains import GroupSimplex, LpBall, Simplex, as_groups
from tests._strategies import partitions, reals, simplex_points, zero_or


def answer(w, q, linear_term=10.0):
    q = np.asarray(q, float)
    return OracleAnswer(w=w, value=linear_term - 0.5 * float(w @ q), grad=-q / 2, q=q,
                        alpha=np.zeros(1), bias=0.0, support=np.zeros(0, np.int64),
                        linear_term=linear_term)


@given(st.integers(1, 12).flatmap(
    lambda m: st.tuples(simplex_points(m), arrays(np.float64, m, elements=zero_or(1e-3, 50.0)))))
def test_simplex_gap_is_nonnegative_and_matches_definition(point):
    w, q = point
    m = w.size
    a = answer(w, q)
    d = Simplex(m)
    assert d.contains(w)
    tol = 1e-12 * (1.0 + q.max())
    assert d.gap(w, a) >= -tol
    # gap = J(w) - D(alpha) with D = 1'a - max q / 2 (DESIGN section 1)
    assert d.gap(w, a) == pytest.approx(a.value - d.dual_value(a), abs=tol)
    assert d.dual_value(a) == pytest.approx(10.0 - 0.5 * q.max(), abs=tol)
    # the gap closes exactly when w puts all its mass on the largest q_k
    assert d.gap(np.eye(m)[np.argmax(q)], answer(np.eye(m)[np.argmax(q)], q)) <= tol


@st.composite
def lp_points(draw):
    m = draw(st.integers(1, 10))
    p = draw(reals(1.05, 10.0))
    theta = draw(arrays(np.float64, m, elements=zero_or(1e-3, 1.0)))
    if np.any(theta > 0):  # scaled into the ball, possibly onto its sphere
        theta /= np.linalg.norm(theta, p) * draw(st.one_of(st.just(1.0), reals(1.0, 2.0)))
    q = draw(arrays(np.float64, m, elements=zero_or(1e-3, 50.0)))
    return m, p, theta, q


@given(lp_points())
def test_lp_gap_is_nonnegative_on_the_ball(point):
    m, p, theta, q = point
    d = LpBall(m, p)
    a = answer(theta, q)
    tol = 1e-12 * (1.0 + q.max())
    assert d.contains(theta)
    assert d.gap(theta, a) >= -tol
    assert d.support(q) == pytest.approx(np.linalg.norm(q, p / (p - 1)), rel=1e-12, abs=tol)
    if np.any(q > 0):
        # Hoelder is tight: the maximiser theta ∝ q^(p*-1) attains h(q)
        t = q ** (d.p_star - 1)
        t /= np.linalg.norm(t, p)
        assert t @ q == pytest.approx(d.support(q), rel=1e-9)
        assert d.gap(t, answer(t, q)) <= 1e-9 * d.support(q)
    np.testing.assert_allclose(d.initial(), np.full(m, m ** (-1 / p)))
    assert np.linalg.norm(d.initial(), p) == pytest.approx(1.0)


@st.composite
def grouped_points(draw):
    m = draw(st.integers(1, 10))
    groups = draw(partitions(m))
    lam = np.zeros(m)
    for g in groups:
        lam[g] = draw(simplex_points(len(g)))
    q = draw(arrays(np.float64, m, elements=zero_or(1e-3, 50.0)))
    # W_j = sum lam q > 0 in every group (else gamma_j = 0 and w is infinite):
    # q is positive where each group's lam is largest
    for g in groups:
        k = g[int(np.argmax(lam[g]))]
        q[k] = max(q[k], 1e-3)
    x = draw(arrays(np.float64, m, elements=reals(-5.0, 5.0)))
    return groups, lam, q, x


@given(grouped_points())
def test_group_gap_is_nonnegative_at_the_analytic_gamma(point):
    groups, lam, q, x = point
    m = lam.size
    d = GroupSimplex(groups, m)
    W = d.group_sums(lam * q)
    gamma = np.sqrt(W) / np.sqrt(W).sum()  # Nath et al. eq. 6
    w = d.effective(lam, gamma)
    assert d.contains(w)
    a = answer(w, q)
    # at the analytic gamma, w'q = (sum_j sqrt(W_j))^2 <= h(q)
    assert w @ q == pytest.approx(np.sqrt(W).sum() ** 2, rel=1e-9)
    assert d.gap(w, a) >= -1e-9 * (1 + q.max())
    assert d.gap(w, a) == pytest.approx((d.support(q) - w @ q) / 2, abs=1e-9 * (1 + q.max()))
    assert d.contains(d.initial())
    p = d.project(x)
    for g in groups:
        assert p[g].sum() == pytest.approx(1.0) and p[g].min() >= 0
        # a projection onto one simplex moves every coordinate by the same shift,
        # except those clipped at zero
        shift = p[g] - x[g]
        pos = p[g] > 0
        np.testing.assert_allclose(shift[pos], shift[pos][0], atol=1e-9)
        if not pos.all():
            assert x[g][~pos].max() <= x[g][pos].min() + 1e-9


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
