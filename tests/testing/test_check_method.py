"""check_method passes the shipped methods and fails mutants, naming the property."""

import pytest

from mklopt.methods import CuttingPlane, LevelBundle
from mklopt.testing import check_method


@pytest.mark.parametrize("cls", [CuttingPlane, LevelBundle])
def test_shipped_methods_pass(cls):
    check_method(cls)


class _Uphill(CuttingPlane):
    """Reports a best value that climbs by one every iteration."""

    def report(self):
        import dataclasses

        rep = super().report()
        if rep.best is None:
            return rep
        best = dataclasses.replace(rep.best, value=rep.best.value + rep.n_iter)
        return dataclasses.replace(rep, best=best)


class _WrongLower(CuttingPlane):
    def _lower(self, state):
        return 1e6


class _EarlyClaim(CuttingPlane):
    def _tell(self, state, query, answer):
        out = super()._tell(state, query, answer)
        self._finish("claimed", converged=True)
        return out


class _Mutating(LevelBundle):
    """Writes its run's state back into a hyper-parameter (breaks clone and reruns)."""

    def _tell(self, state, query, answer):
        self.lam = 0.5
        return super()._tell(state, query, answer)


class _Miscounted(CuttingPlane):
    """Reports the weights of the last query instead of the best point's."""

    def report(self):
        import dataclasses

        rep = super().report()
        if rep.best is None or rep.evaluated is None:
            return rep
        return dataclasses.replace(rep, weights=rep.evaluated)


class _TrustsItsStart(LevelBundle):
    """Offers a handed-over answer as a best point with a value below J there."""

    def _handover_candidate(self, state, handover):
        import dataclasses

        a = handover.answer
        return handover.weights, dataclasses.replace(a, value=a.value - 1.0 - abs(a.value))


@pytest.mark.parametrize("cls, message", [
    (_TrustsItsStart, "started from initial=w0: bounds are valid"),
    (_Mutating, "hyper-parameters unchanged"),
    (_Miscounted, "reported weights reproduce the reported value"),
    (_Uphill, "never increases"),
    (_WrongLower, "bounds are valid"),
    (_EarlyClaim, "converged implies|value - J"),
])
def test_mutants_fail_naming_the_property(cls, message):
    with pytest.raises(AssertionError, match=message):
        check_method(cls)


from mklopt.testing import PiecewiseLinearOracle, parametrize_with_checks  # noqa: E402


@parametrize_with_checks(methods=[CuttingPlane, LevelBundle()],
                         oracles=[lambda: PiecewiseLinearOracle.random(3, 5, seed=4)])
def test_the_pytest_helper_runs_each_check(check):
    check()


def test_one_pytest_case_per_check_named_by_method_and_property():
    mark = parametrize_with_checks(methods=[CuttingPlane, LevelBundle(lam=0.5)],
                                   oracles=[lambda: PiecewiseLinearOracle.random(3, 5, seed=4)])
    ids = [p.id for p in mark.args[1]]
    checks = ["invariants", "reset", "progress", "handover", "chain"]
    assert ids[:5] == [f"check_method[CuttingPlane-{c}]" for c in checks]
    assert all(i.startswith("check_method[LevelBundle(lam=0.5") for i in ids[5:10])
    assert {i.split("-")[-1].rstrip("]") for i in ids[10:]} == {
        "answers", "minorant", "subgradient", "tolerance", "warm_start", "decision", "reference"}
    assert all(i.startswith("check_oracle[oracle0-") for i in ids[10:])
