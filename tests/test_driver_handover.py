"""solve(..., initial=Handover): a run that starts from a handed-over point (a C path's next C)."""

import numpy as np
import pytest

from mklopt import Handover, solve
from mklopt.domains import Simplex
from mklopt.methods import LevelBundle
from mklopt.stopping import DualityGap, MaxIter
from mklopt.testing import SmoothQuadraticOracle


class CountingLevel(LevelBundle):
    """The level method, counting its starts and the hand-overs it was given."""

    def start(self, oracle, handover=None):
        self.starts = getattr(self, "starts", 0) + 1
        self.handovers = getattr(self, "handovers", 0) + (handover is not None)
        return super().start(oracle, handover=handover)


def _optimum(oracle):
    res = solve(oracle, LevelBundle(), stop=DualityGap(1e-7) | MaxIter(400))
    assert res.converged
    return res


def test_a_handover_certified_by_its_own_answer_costs_no_call_and_no_method_start():
    oracle = SmoothQuadraticOracle.random(6, seed=3)
    best = _optimum(oracle)
    answer = oracle(best.weights)
    calls = oracle.n_calls
    own = Simplex(6).gap(best.weights, answer) / abs(answer.value)  # the answer's own gap
    method = CountingLevel()
    handover = Handover(weights=best.weights, answer=answer, domain=Simplex(6))
    res = solve(oracle, method, stop=DualityGap(2 * own), initial=handover)
    assert res.converged and res.n_oracle_calls == 0 and oracle.n_calls == calls
    assert getattr(method, "starts", 0) == 0  # no master problem was built
    np.testing.assert_array_equal(res.weights, best.weights)
    assert res.rel_gap == pytest.approx(own) and res.lower <= res.value
    # a target the answer does not meet by itself: the method starts from it
    solve(oracle, method, stop=DualityGap(own / 2) | MaxIter(50), initial=handover)
    assert method.starts == 1 and method.handovers == 1


def test_a_handover_without_its_domain_starts_the_method_from_it_once():
    oracle = SmoothQuadraticOracle.random(6, seed=4)
    best = _optimum(oracle)
    answer = oracle(best.weights)
    own = Simplex(6).gap(best.weights, answer) / abs(answer.value)
    method = CountingLevel()
    res = solve(oracle, method, stop=DualityGap(2 * own), initial=Handover(best.weights, answer))
    # the method's own start certifies the point: still no oracle call
    assert method.starts == 1 and method.handovers == 1
    assert res.converged and res.n_oracle_calls == 0


def test_a_handover_far_from_the_optimum_goes_on_from_there_and_never_gets_worse():
    oracle = SmoothQuadraticOracle.random(8, seed=5)
    w0 = np.eye(8)[0]
    answer = oracle(w0)
    method = CountingLevel()
    res = solve(oracle, method, stop=DualityGap(1e-4) | MaxIter(500),
                initial=Handover(w0, answer, domain=Simplex(8)))
    assert method.starts == 1 and res.n_oracle_calls >= 1
    assert res.converged and res.value <= answer.value
    exact, bound = oracle.certified_l1_optimum()
    assert res.lower <= exact + bound and exact - bound <= res.value


def test_a_handover_answer_that_did_not_converge_certifies_nothing():
    oracle = SmoothQuadraticOracle.random(5, seed=6)
    best = _optimum(oracle)
    answer = oracle(best.weights)
    import dataclasses

    loose = dataclasses.replace(answer, converged=False)
    method = CountingLevel()
    solve(oracle, method, stop=DualityGap(1e-6),
          initial=Handover(best.weights, loose, domain=Simplex(5)))
    assert method.starts == 1


@pytest.mark.parametrize("bad", [object(), "level"])
def test_initial_of_another_kind_is_refused(bad):
    oracle = SmoothQuadraticOracle.random(3)
    with pytest.raises((TypeError, ValueError)):
        solve(oracle, LevelBundle(), initial=bad)
