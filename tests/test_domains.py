import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import OracleAnswer
from mklopt.domains import ElasticNet, GroupSimplex, LpBall, Simplex, as_groups
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


def _at_analytic_gamma(d, lam, q):
    """``(W, w)``: the group sums ``W_j`` and the effective weights at Nath et al.'s eq. 6 gamma."""
    W = d.group_sums(lam * q)
    return W, d.effective(lam, np.sqrt(W) / np.sqrt(W).sum())


@given(grouped_points())
def test_group_gap_is_nonnegative_at_the_analytic_gamma(point):
    groups, lam, q, x = point
    m = lam.size
    d = GroupSimplex(groups, m)
    W, w = _at_analytic_gamma(d, lam, q)
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


# ------------------------------------------------------------------ p = inf
@given(st.integers(1, 10).flatmap(lambda m: st.tuples(
    arrays(np.float64, m, elements=zero_or(1e-3, 50.0)),
    arrays(np.float64, m, elements=reals(-3.0, 3.0)))))
def test_inf_ball_is_the_box_and_its_gap_the_sum_of_q(point):
    q, x = point
    m = q.size
    d = LpBall(m, np.inf)
    assert d.p_star == 1.0
    np.testing.assert_array_equal(d.initial(), np.ones(m))
    # dual norm of l-inf is l1: h(q) = sum q
    assert d.support(q) == pytest.approx(q.sum(), rel=1e-12, abs=1e-300)
    # the projection onto the box is a clip
    np.testing.assert_array_equal(d.project(x), np.clip(x, 0.0, 1.0))
    assert d.contains(np.clip(x, 0, 1)) and (x.max() <= 1.0 or not d.contains(x))
    # the gap closes at theta = 1 for every alpha: the sum kernel is optimal
    ones = np.ones(m)
    assert d.gap(ones, answer(ones, q)) == pytest.approx(0.0, abs=1e-12 * (1 + q.sum()))
    t = np.clip(x, 0, 1)
    assert d.gap(t, answer(t, q)) >= -1e-12 * (1 + q.sum())


def test_inf_is_accepted_only_as_a_norm():
    assert LpBall(3, float("inf")).p == np.inf
    for bad, err in ((-np.inf, ValueError), (np.nan, ValueError), (1.0, ValueError),
                     (True, TypeError)):
        with pytest.raises(err, match="p"):
            LpBall(3, bad)


# ------------------------------------------------------- exact Lp projection
@given(st.integers(1, 8), reals(1.05, 10.0), st.data())
def test_lp_projection_is_the_euclidean_projection(m, p, data):
    d = LpBall(m, p)
    x = data.draw(arrays(np.float64, m, elements=reals(-1e2, 1e2)))
    y = d.project(x)
    assert d.contains(y, tol=1e-12)
    # a point of the set is its own projection
    np.testing.assert_allclose(d.project(y), y, atol=1e-9)
    # variational inequality: (x - y)'(z - y) <= 0 for every z in the set
    # (checked at drawn points of the set: vertices, the sphere, the origin)
    zs = [np.zeros(m), d.initial(), *np.eye(m)]
    z = data.draw(arrays(np.float64, m, elements=reals(0.0, 1.0)))
    if z.any():
        zs.append(z / max(np.linalg.norm(z, p), 1.0))
    scale = 1.0 + np.abs(x).max()
    for z in zs:
        assert (x - y) @ (z - y) <= 1e-8 * scale, (z, y)


# ------------------------------------------------------------- elastic net
def _h_brute_force(q, lam):
    """max_{u >= 0} 2 r'u - u'Au, A = (1 - lam) 11' + lam I, over all supports."""
    import itertools

    r = np.sqrt(q)
    m = q.size
    best = 0.0
    for k in range(1, m + 1):
        for S in itertools.combinations(range(m), k):
            S = list(S)
            A = (1 - lam) * np.ones((k, k)) + lam * np.eye(k)
            u = np.linalg.solve(A, r[S])
            if np.all(u >= -1e-12):
                best = max(best, float(r[S] @ u))
    return best


@st.composite
def enet_points(draw):
    m = draw(st.integers(1, 6))
    lam = draw(st.one_of(st.sampled_from([0.0, 1.0]), reals(1e-3, 1.0)))
    q = draw(arrays(np.float64, m, elements=zero_or(1e-3, 50.0)))
    beta = draw(arrays(np.float64, m, elements=zero_or(1e-3, 1.0)))
    scale = draw(st.one_of(st.just(1.0), reals(1.0, 3.0)))  # on the boundary, or inside
    if beta.any():
        beta /= beta.sum() * scale
    return m, lam, q, beta


@given(enet_points())
def test_elastic_net_support_and_gap(point):
    m, lam, q, beta = point
    d = ElasticNet(m, lam)
    w = d.weights(beta)
    if lam < 1.0:  # at lam = 1 every beta > 0 maps to w = 1: no inverse
        # beta(w) has condition number about 1 + lam beta / (1 - lam): the
        # inverse is exact up to that many roundings of w (lam one ulp below
        # 1 maps beta = 1/2 to w = 1.0)
        cond = 1.0 + lam / (1.0 - lam)
        np.testing.assert_allclose(d.beta(w), beta, rtol=1e-9 + 8e-16 * cond, atol=1e-15)
    assert d.contains(w) and d.contains(d.initial())
    h = d.support(q)
    tol = 1e-9 * (1.0 + q.sum())
    # h is the largest w'q over the set ...
    assert w @ q <= h + tol
    assert d.gap(w, answer(w, q)) >= -tol
    # ... and equals the conjugate-norm form (a QP solved over every support)
    if lam > 0:
        assert h == pytest.approx(_h_brute_force(q, lam), rel=1e-9, abs=tol)
    # the ends: L1-MKL's max q at lam = 0, the sum kernel's sum q at lam = 1
    if lam == 0.0:
        assert h == q.max()
    if lam == 1.0:
        assert h == pytest.approx(q.sum(), rel=1e-12, abs=tol)


def test_elastic_net_support_is_continuous_at_the_l1_end():
    q = np.array([3.0, 7.0, 5.0, 7.0 - 1e-6, 0.0])
    d0 = ElasticNet(5, 0.0)
    for lam in (1e-12, 1e-9, 1e-6):
        assert ElasticNet(5, lam).support(q) == pytest.approx(d0.support(q), rel=10 * lam + 1e-6)
    assert ElasticNet(5, 1.0).support(q) == pytest.approx(q.sum())
    # the supports grow with lam (the set grows: beta <= 1 relaxes to w <= 1)
    hs = [ElasticNet(5, lam).support(q) for lam in np.linspace(0, 1, 11)]
    assert all(b >= a - 1e-12 for a, b in zip(hs, hs[1:]))


@given(st.integers(1, 7), st.one_of(st.sampled_from([0.0, 1.0]), reals(1e-3, 1.0)), st.data())
def test_elastic_net_projection_is_the_euclidean_projection(m, lam, data):
    d = ElasticNet(m, lam)
    x = data.draw(arrays(np.float64, m, elements=reals(-10.0, 10.0)))
    y = d.project(x)
    assert d.contains(y, tol=1e-10)
    np.testing.assert_allclose(d.project(y), y, atol=1e-8)
    beta = data.draw(arrays(np.float64, m, elements=zero_or(1e-3, 1.0)))
    zs = [np.zeros(m), d.initial(), *(d.weights(e) for e in np.eye(m))]
    if beta.any():
        zs.append(d.weights(beta / beta.sum()))
    for z in zs:
        assert (x - y) @ (z - y) <= 1e-8 * (1.0 + np.abs(x).max()), (z, y)


@given(enet_points())
def test_elastic_net_analytic_step_minimises_the_primal_over_the_set(point):
    m, lam, q, beta = point
    d = ElasticNet(m, lam)
    w = d.initial()
    new = d.analytic_step(w, q)
    if not np.any(q > 0):
        assert new is None
        return
    assert d.contains(new, tol=1e-12)
    if lam < 1.0 - 1e-8:
        # on the boundary; nearer lam = 1 one rounding of a weight near 1
        # moves beta_k by about eps / (1 - lam), so only `contains` (which
        # allows a few roundings) can be asked of the step there
        assert d.beta(new).sum() == pytest.approx(1.0)
    # it minimises sum_k u_k^2 / w_k (u = w sqrt(q)) over W: compare with
    # the closed form of the regulariser and with a drawn feasible point
    u = w * np.sqrt(q)
    act = u > 0
    val = np.sum(u[act] ** 2 / new[act])
    assert val == pytest.approx((1 - lam) * u.sum() ** 2 + lam * np.sum(u**2), rel=1e-9)
    other = d.weights(beta) if beta.any() else d.initial()
    if np.all(other[act] > 0):
        assert val <= np.sum(u[act] ** 2 / other[act]) * (1 + 1e-9)


def test_bad_elastic_net_parameters():
    for bad in (-0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match="lam"):
            ElasticNet(3, bad)
    with pytest.raises(TypeError, match="lam"):
        ElasticNet(3, "0.5")


@pytest.mark.parametrize("p", [1.1, 4.0, 30.0])
def test_lp_projection_of_extreme_points(p):
    # SPG projects w - lambda g for spectral steps up to ~1e6 / ||g||; the
    # projection must stay exact far outside the ball and near zero alike
    d = LpBall(4, p)
    for x in (np.array([1e30, 3e29, 0.0, 1e10]), np.array([1e-300, 2e-300, 0.0, 5.0]),
              np.array([1e200, 1.0, 2.0, 3.0])):
        y = d.project(x)
        assert d.contains(y, tol=1e-12) and np.linalg.norm(y, p) == pytest.approx(1.0)
        for z in (d.initial(), *np.eye(4)):
            assert (x / x.max() - y / x.max()) @ (z - y) <= 1e-9


@pytest.mark.parametrize("m", [2, 3, 6])
def test_elastic_net_one_ulp_below_one_starts_inside(m):
    # lam one ulp below 1: W is the box up to 1 - w of order 1e-16, so the
    # start 1 / (m (1 - lam) + lam) and the image of the uniform beta round
    # to w = 1.0, which must still count as inside (it is within one
    # rounding of W); it once counted as sum(beta) = m, and every method
    # started outside its own set.
    d = ElasticNet(m, float(np.nextafter(1.0, 0.0)))
    uniform = d.weights(np.full(m, 1.0 / m))
    assert d.contains(d.initial()) and d.contains(uniform)
    assert np.all(np.isfinite(d.beta(d.initial())))
    # and 1 - lam w is not lost to cancellation: beta at an exact point
    w = np.full(m, 1.0 - 2.0**-52)  # 1 - w = 2 ulp(1/2), exactly
    c = 1.0 - d.lam
    np.testing.assert_allclose(d.beta(w), c * w / ((1.0 - w) + c * w), rtol=1e-15)
    assert d.beta(w)[0] == pytest.approx(1.0 / 3.0, rel=1e-6)  # c / (2c + c)


def test_elastic_net_projection_one_ulp_below_one_keeps_small_weights():
    # Found by hypothesis: lam one ulp below 1 left sum(beta) near 2 after
    # the multiplier's root (two weights at 1.0), and rescaling every beta
    # then shrank the small weight 0.125 to 0.10 (and 0.09 on a second
    # projection). The projection is the box's to within rounding here.
    d = ElasticNet(6, float(np.nextafter(1.0, 0.0)))
    x = np.array([0.0, 0.125, 0.0, 0.0, 3.0, 1.0])
    y = d.project(x)
    assert d.contains(y, tol=0.0) and d.beta(y).sum() <= 1.0
    np.testing.assert_allclose(y, np.minimum(x, 1.0), atol=1e-12)
    np.testing.assert_array_equal(d.project(y), y)


@given(grouped_points())
def test_group_retract_keeps_points_of_the_set_and_lands_in_it(point):
    groups, lam, q, x = point
    m = lam.size
    d = GroupSimplex(groups, m)
    _, w = _at_analytic_gamma(d, lam, q)
    np.testing.assert_allclose(d.retract(w), w, rtol=1e-12)
    # anything (negative entries, groups without weight, the mean of two
    # points of the set, which the set does not contain in general) lands in it
    for y in (x, 0.5 * (w + d.initial()), np.zeros(m)):
        r = d.retract(y)
        assert np.all(np.isfinite(r)) and d.contains(r)


def test_group_retract_keeps_shares_within_groups():
    d = GroupSimplex([[0, 1], [2, 3, 4]], 5)
    r = d.retract(np.array([3.0, 1.0, 0.0, 0.0, 0.0]))
    assert r[0] == pytest.approx(3.0 * r[1])  # the first group's shares
    np.testing.assert_allclose(r[2:], r[2])  # the empty group: uniform
    assert d.contains(r)
    # sums at the smallest normal number: their reciprocals would overflow
    tiny = GroupSimplex([[k] for k in range(5)], 5)
    r = tiny.retract(np.full(5, np.finfo(float).tiny))
    assert np.all(np.isfinite(r)) and tiny.contains(r)
    # found by hypothesis: sums 1.3e308 apart (and an empty group) would put
    # an effective weight at 2e308, past the largest double; gamma is floored
    r = GroupSimplex([[0], [1], [2]], 3).retract(np.array([np.finfo(float).tiny, 3.0, 0.0]))
    assert np.all(np.isfinite(r)) and GroupSimplex([[0], [1], [2]], 3).contains(r)
    assert r[1] > 1e299  # the heavy group keeps a weight near the floor's limit


def test_convex_sets_retract_by_projection():
    x = np.array([0.7, -0.2, 0.9])
    np.testing.assert_array_equal(Simplex(3).retract(x), Simplex(3).project(x))
