import numpy as np
import pytest
from hypothesis import given, settings

from mklopt import solve
from mklopt.domains import ElasticNet, LpBall
from mklopt.methods import Subgradient, get_method
from mklopt.stopping import DualityGap, MaxIter
from tests._strategies import smooth_quadratic_oracles
from tests._toy_oracles import SmoothQuadraticOracle


def test_registered_under_both_names():
    assert get_method("subgradient") is Subgradient
    assert get_method("simplemkl") is Subgradient


@pytest.mark.parametrize("direction", ["reduced", "projected"])
@pytest.mark.parametrize("seed", range(4))
def test_reaches_exact_l1_optimum_within_gap(direction, seed):
    oracle = SmoothQuadraticOracle.random(8, 5, seed=seed)
    exact = oracle.exact_l1_optimum()
    res = solve(oracle, Subgradient(direction=direction), stop=DualityGap(1e-5) | MaxIter(2000))
    assert res.converged, res.reason
    assert res.gap >= 0
    assert -1e-7 <= res.value - exact <= res.gap + 1e-7
    assert res.weights.min() >= 0 and res.weights.sum() == pytest.approx(1.0)


@settings(max_examples=15)
@given(smooth_quadratic_oracles(min_m=2, max_m=9))
def test_reduced_gradient_iterates_decrease_and_line_search_calls_are_counted(oracle):
    method = Subgradient()
    accepted = []

    def cb(p):
        accepted.append((p.iteration, p.upper))

    res = solve(oracle, method, stop=DualityGap(1e-6) | MaxIter(25), callback=cb)
    # one outer iteration = one direction and its whole line search
    assert res.n_oracle_calls >= res.n_iter
    # (unless the start was already optimal: equal kernels make J constant)
    if res.n_iter > 0 and res.reason != "stationary" and res.history[0].rel_gap > 1e-6:
        assert res.n_oracle_calls > res.n_iter
    # the best value at the end of each iteration strictly never increases
    ends = {}
    for it, up in accepted:
        ends[it] = up
    vals = [ends[k] for k in sorted(ends)]
    assert all(b <= a for a, b in zip(vals, vals[1:]))


def test_reduced_direction_is_feasible_and_descends():
    rng = np.random.default_rng(0)
    for _ in range(50):
        w = rng.dirichlet(np.ones(6))
        w[rng.integers(6)] = 0.0
        w /= w.sum()
        g = rng.normal(size=6)
        D, mu = Subgradient._direction(w, g)
        assert D.sum() == pytest.approx(0.0, abs=1e-12)
        assert np.all(D[w == 0] >= 0)  # cannot push a zero weight negative
        assert g @ D <= 1e-12  # a descent (or stationary) direction


@pytest.mark.parametrize(
    "kw, err",
    [
        (dict(direction="newton"), ValueError),
        (dict(line_search_tol=0.0), ValueError),
        (dict(line_search_tol=2.0), ValueError),
        (dict(step_scale=-1.0), ValueError),
        (dict(step_scale="big"), TypeError),
    ],
)
def test_bad_parameters_fail_at_start(kw, err):
    method = Subgradient(**kw)  # stored verbatim
    with pytest.raises(err, match=next(iter(kw))):
        method.start(SmoothQuadraticOracle.random(3, 3))


@pytest.mark.parametrize("direction", ["reduced", "projected"])
def test_exact_l1_optimum_on_small_real_svm(direction):
    """Against the L1-MKL QCQP solved by cvxpy (Clarabel) on 60 sonar points."""
    from mklopt.domains import Simplex
    from tests.methods import _svm_problems as P

    exact = P.exact(Simplex(5), "l1")
    res = solve(P.oracle(), Subgradient(direction=direction), stop=DualityGap(1e-5) | MaxIter(3000))
    assert res.converged, res.reason
    assert res.gap >= 0 and all(p.gap >= 0 for p in res.history)
    assert abs(res.value - exact) <= res.gap + P.slack(exact)
    assert res.lower <= exact + P.slack(exact)


def test_reduced_gradient_stops_honestly_at_a_kink():
    """On a piecewise-linear J the reduced gradient can reach a kink where no
    step along its direction lowers J; it stops there instead of spinning."""
    from tests._toy_oracles import PiecewiseLinearOracle

    stalled = 0
    for seed in range(6):
        oracle = PiecewiseLinearOracle.random(6, 10, seed=seed)
        res = solve(oracle, Subgradient(), stop=DualityGap(1e-9) | MaxIter(300))
        assert res.gap >= 0
        assert res.value <= res.history[0].value
        if res.reason == "line_search_stalled":
            stalled += 1
            assert not res.converged and res.n_iter < 300
            # the last row is the stalled point's value, never below the best
            assert res.history[-1].upper == res.value
    assert stalled > 0


# ------------------------------------------------- projected, other formulations
FORMULATIONS = [dict(norm=1.5), dict(norm=2.0), dict(norm=np.inf), dict(elastic_net=0.0),
                dict(elastic_net=0.3), dict(elastic_net=0.7), dict(elastic_net=1.0)]


def _ids(kw):
    return "-".join(f"{k}={v}" for k, v in kw.items())


@pytest.mark.parametrize("kw", FORMULATIONS, ids=_ids)
@pytest.mark.parametrize("seed", range(3))
def test_projected_runs_on_lp_and_elastic_net_to_the_conic_optimum(kw, seed):
    oracle = SmoothQuadraticOracle.random(7, 5, seed=seed)
    method = Subgradient(direction="projected", **kw)
    res = solve(oracle, method, stop=DualityGap(1e-6) | MaxIter(5000))
    assert res.converged, (res.reason, res.rel_gap)
    dom = method.domain
    expected = ElasticNet if "elastic_net" in kw else LpBall
    assert type(dom) is expected
    assert all(dom.contains(p.weights, tol=1e-9) for p in res.history)
    exact = oracle.exact_optimum(dom)  # cvxpy + Clarabel
    slack = 1e-6 * abs(exact)  # Clarabel's accuracy on these problems
    assert res.lower <= exact + slack
    assert exact - slack <= res.value <= exact + res.gap + slack


@pytest.mark.parametrize("kw", [dict(norm=2.0), dict(elastic_net=0.5)], ids=_ids)
def test_projected_on_a_small_svm_is_certified(kw):
    from tests.methods import _enet_reference as R
    from tests.methods import _svm_problems as P

    method = Subgradient(direction="projected", **kw)
    res = solve(P.oracle(), method, stop=DualityGap(1e-4) | MaxIter(3000))
    assert res.converged, (res.reason, res.rel_gap)
    if "norm" in kw:
        exact = P.exact(LpBall(5, kw["norm"]), f"lp{kw['norm']}")
    else:
        exact = R.exact_svm(*P.problem(), P.C, kw["elastic_net"])
    assert res.lower <= exact + P.slack(exact)
    assert exact - P.slack(exact) <= res.value <= exact + res.gap + P.slack(exact)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(norm=2.0), "reduced gradient runs on the simplex only"),
        (dict(elastic_net=0.5), "reduced gradient runs on the simplex only"),
        (dict(direction="projected", norm=2.0, elastic_net=0.5), "leave norm at 1"),
        (dict(direction="projected", elastic_net=1.5), "elastic_net must be <= 1"),
        (dict(direction="projected", norm=0.5), "norm must be > 1"),
    ],
)
def test_bad_formulation_parameters(kw, match):
    with pytest.raises(ValueError, match=match):
        Subgradient(**kw).check_params()
