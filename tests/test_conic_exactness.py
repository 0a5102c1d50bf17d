"""Every outer method that fits a formulation reaches the conic optimum, on drawn problems.

The references (``tests/_conic_reference.py``) are the **primal** MKL
problems of each loss and block norm, written from the model and solved by
Clarabel through cvxpy; the package works in the dual. Each reference is
also solved as its conic dual, and the two values must agree to 1e-7
relative (measured: at most a few 1e-9), which is the references' own
accuracy and the slack of every comparison.

For each drawn problem, every configuration of a registered method that
solves the formulation (``tests/_exact_methods.py``) runs to a relative
duality gap of 1e-4 and must bracket the reference: ``lower <= J* <=
value <= J* + gap`` (and must converge, except the configurations whose only
certificate is a single answer's dual value, ``certifies_slowly``: mirror
descent, the projected subgradient and a working set on a strict subset,
whose bracket is checked within the budget). Then one polishing run goes
to 1e-6 and must match the reference to 1e-6: the level method chained
with the exact active-set step where the oracle describes its dual as a
box-constrained program (the hinge loss), and the level method alone otherwise (the logistic and
squared losses and the shared-weight sum have no such program; see
``NEEDS_BOX_QP``), as ``MKLClassifier`` does for a tight ``tol``.

The oracles' inner tolerance is 1e-8 from the first call: the driver
tightens it as the gap closes, but an answer computed before (at the
oracle's own ``tol``) may have a small gap of its own and end the run with
its value low by up to that ``tol`` (the estimators start at ``tol / 100``).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mklopt import solve
from mklopt.methods import Chain, LevelBundle
from mklopt.oracles import CompositeOracle, LogisticDual, RidgeDual, SVMDual
from mklopt.stopping import DualityGap, MaxOracleCalls
from tests import _conic_reference as R
from tests._exact_methods import (
    NEEDS_BOX_QP,
    NOT_APPLICABLE,
    certifies_slowly,
    configurations,
    uncovered,
)
from tests._strategies import labels, log_uniform, points, reals

TARGET = 1e-4
POLISH = 1e-6
INNER_TOL = 1e-8
#: The references' accuracy: |primal - dual| / max(1, |J*|) must stay below it.
REF_ACCURACY = 1e-7
#: Relative slack of every comparison: the reference's accuracy plus the
#: inner solves' (an SMO or coordinate solve at 1e-8 errs by ~2e-8).
SLACK = REF_ACCURACY + 5e-8
LAMS = [0.01, 0.5, 0.99]


def make_oracle(loss, K, y, C, fit_intercept=True):
    if loss == "hinge":
        return SVMDual(K, y, C=C, tol=INNER_TOL)
    if loss == "logistic":
        return LogisticDual(K, y, C=C, fit_intercept=fit_intercept, tol=INNER_TOL)
    return RidgeDual(K, y, C=C, fit_intercept=fit_intercept)


def polisher(has_problem):
    """The chain that certifies 1e-6: the exact step where the oracle allows it."""
    return Chain("level", "active_set") if has_problem else LevelBundle()


@st.composite
def binary_problems(draw, losses=R.LOSSES, lo=8, hi=14):
    loss = draw(st.sampled_from(losses))
    n = draw(st.integers(lo, hi))
    X = draw(points(n, 2))
    if loss == "squared":
        y = draw(arrays(np.float64, n, elements=reals(-2.0, 2.0).map(lambda v: round(v, 3))))
    else:
        y = draw(labels(n))
    C = draw(log_uniform(0.1, 10.0))
    fit_intercept = loss == "hinge" or draw(st.booleans())
    return loss, R.unit_kernels(X), y, C, fit_intercept


@st.composite
def three_class_problems(draw, lo=5, hi=8):
    n_per = [draw(st.integers(lo, hi)) for _ in range(3)]
    X = draw(points(sum(n_per), 2))
    y = np.repeat(np.arange(3), n_per)
    X[:, 0] += 1.5 * (y == 1)  # overlapping classes, each pair separable or not
    X[:, 1] += 1.5 * (y == 2)
    return R.three_class_parts(X, y), draw(log_uniform(0.1, 10.0))


def reference(parts, C, loss, formulation, fit_intercept=True):
    ref, accuracy = R.reference(parts, C, loss, formulation, fit_intercept)
    assert accuracy <= REF_ACCURACY, (
        f"the conic primal and dual disagree by {accuracy:.1e} (relative)")
    return ref


def check_bracket(res, ref, label, converged=True):
    """Converged, and ``lower <= J* <= value <= J* + gap`` to the slack."""
    slack = SLACK * max(1.0, abs(ref))
    assert res.converged or not converged, (label, res.reason, res.rel_gap)
    assert res.lower <= ref + slack, (label, res.lower, ref)
    assert res.value >= ref - slack, (label, res.value, ref)
    assert res.value - ref <= res.gap + slack, (label, res.value, ref, res.gap)


def run_all(make, formulation, has_problem, ref, budget=3000):
    for label, factory in configurations(formulation, has_problem):
        res = solve(make(), factory(), stop=DualityGap(TARGET) | MaxOracleCalls(budget))
        check_bracket(res, ref, label, converged=not certifies_slowly(label))


def check_polish(make, has_problem, ref, budget=3000):
    res = solve(make(), polisher(has_problem), stop=DualityGap(POLISH) | MaxOracleCalls(budget))
    check_bracket(res, ref, "polish")
    assert 0.0 <= res.rel_gap <= POLISH
    assert abs(res.value - ref) <= POLISH * abs(ref) + SLACK * max(1.0, abs(ref))


# ------------------------------------------------------------------ the registry
def test_every_registered_method_is_placed():
    # A newly registered method must be given its formulations in
    # tests/_exact_methods.py (or a reason it cannot run on an MKL dual).
    assert uncovered() == []
    assert all(reason for reason in NOT_APPLICABLE.values()) and NEEDS_BOX_QP


def test_the_exact_step_refuses_the_oracles_without_a_box_program():
    # Why the chain with the exact step is not among their configurations.
    K, y = R.draw_problem(np.random.default_rng(0), 10, "logistic")
    for oracle in (LogisticDual(K, y), RidgeDual(K, y),
                   CompositeOracle([SVMDual(K, y), SVMDual(K, -y)])):
        with pytest.raises(TypeError, match="ActiveSet needs an oracle that describes its dual"):
            solve(oracle, Chain("level", "active_set", switch=1.0), stop=MaxOracleCalls(3))


# ------------------------------------------------------------------ L1 and Lp
@settings(max_examples=6, deadline=None)
@given(binary_problems())
def test_l1_mkl_every_method_within_its_gap_then_polished(problem):
    loss, K, y, C, fit_intercept = problem
    ref = reference([(K, y)], C, loss, ("l1", None), fit_intercept)
    has_problem = loss == "hinge"

    def make():
        return make_oracle(loss, K, y, C, fit_intercept)

    run_all(make, ("l1", None), has_problem, ref)
    check_polish(make, has_problem, ref)


@settings(max_examples=4, deadline=None)
@given(binary_problems(losses=("logistic", "squared")))
def test_lp_mkl_every_method_within_its_gap(problem):
    loss, K, y, C, fit_intercept = problem
    ref = reference([(K, y)], C, loss, ("lp", 2.0), fit_intercept)
    run_all(lambda: make_oracle(loss, K, y, C, fit_intercept), ("lp", 2.0), False, ref)


# ------------------------------------------------------------------ elastic net
@settings(max_examples=6, deadline=None)
@given(binary_problems(), st.sampled_from(LAMS))
def test_elastic_net_every_method_within_its_gap(problem, lam):
    loss, K, y, C, fit_intercept = problem
    ref = reference([(K, y)], C, loss, ("enet", lam), fit_intercept)
    make = lambda: make_oracle(loss, K, y, C, fit_intercept)  # noqa: E731
    run_all(make, ("enet", lam), False, ref)
    # polished by SPG, the fastest of the three here (a few calls to 1e-6)
    res = solve(make(), configurations(("enet", lam), False)[1][1](),
                stop=DualityGap(POLISH) | MaxOracleCalls(3000))
    check_bracket(res, ref, "spg polish")
    assert abs(res.value - ref) <= POLISH * abs(ref) + SLACK * max(1.0, abs(ref))


@pytest.mark.parametrize("lam", LAMS)
def test_elastic_net_lambda_values_are_distinct_problems(lam):
    # The three values are three optima between the L1 one and the sum
    # kernel's, not the ends themselves (else the check above proves less).
    K, y = R.draw_problem(np.random.default_rng(3), 12, "hinge")
    enet = reference([(K, y)], 1.0, "hinge", ("enet", lam))
    l1 = reference([(K, y)], 1.0, "hinge", ("l1", None))
    box = reference([(K, y)], 1.0, "hinge", ("lp", np.inf))
    assert box < enet < l1


# ------------------------------------------------------------------ shared weights
@settings(max_examples=3, deadline=None)
@given(three_class_problems())
def test_shared_multiclass_every_method_within_its_gap_then_polished(problem):
    parts, C = problem

    def make():
        return CompositeOracle([SVMDual(K, y, C=C, tol=INNER_TOL) for K, y in parts])

    for formulation in [("l1", None), ("lp", 2.0), ("enet", 0.5)]:
        ref = reference(parts, C, "hinge", formulation)
        run_all(make, formulation, False, ref)
    check_polish(make, False, reference(parts, C, "hinge", ("l1", None)))


# ------------------------------------------------------------------ the sweep
@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(binary_problems(lo=8, hi=30), st.sampled_from(
    [("l1", None), ("lp", 4.0 / 3.0), ("lp", 2.0), ("lp", np.inf)]
    + [("enet", lam) for lam in (0.001, 0.01, 0.25, 0.5, 0.75, 0.99, 0.999)]))
def test_sweep_every_method_within_its_gap(problem, formulation):
    loss, K, y, C, fit_intercept = problem
    ref = reference([(K, y)], C, loss, formulation, fit_intercept)
    has_problem = loss == "hinge"
    make = lambda: make_oracle(loss, K, y, C, fit_intercept)  # noqa: E731
    run_all(make, formulation, has_problem, ref, budget=5000)
    if formulation[0] == "l1":
        check_polish(make, has_problem, ref)


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(three_class_problems(lo=6, hi=14),
       st.sampled_from([("l1", None), ("lp", 2.0), ("enet", 0.01), ("enet", 0.99)]))
def test_sweep_shared_multiclass(problem, formulation):
    parts, C = problem

    def make():
        return CompositeOracle([SVMDual(K, y, C=C, tol=INNER_TOL) for K, y in parts])

    run_all(make, formulation, False, reference(parts, C, "hinge", formulation), budget=5000)


@pytest.mark.parametrize("loss", ["hinge", "logistic"])
def test_the_reference_falls_back_to_ecos_when_clarabel_raises(loss, monkeypatch):
    # A drawn logistic problem with duplicated points once made every Clarabel
    # attempt raise; the reference then comes from ECOS, to the same optimum.
    import cvxpy as cp

    K, y = R.draw_problem(np.random.default_rng(3), 12, loss)
    want = R.primal_optimum([(K, y)], 1.0, loss, ("l1", None))
    solve_problem = cp.Problem.solve

    def no_clarabel(self, *args, solver=None, **kwargs):
        if solver == cp.CLARABEL:
            raise cp.error.SolverError("Clarabel made to fail")
        return solve_problem(self, *args, solver=solver, **kwargs)

    monkeypatch.setattr(cp.Problem, "solve", no_clarabel)
    got = R.primal_optimum([(K, y)], 1.0, loss, ("l1", None))
    assert got == pytest.approx(want, rel=1e-6, abs=1e-8)
