"""The kit catches what a researcher breaks: flawed copies of a correct method and oracle.

Each copy below breaks one property of ``FrankWolfe`` or ``SquaredHinge``
(``_originals.py``). The correct originals pass the default kit; every copy
fails it, with a message naming the property (and, for the per-check runs
of ``parametrize_with_checks``, in the check that names it).
"""

import dataclasses

import numpy as np
import pytest

from mklopt.testing import check_method, check_oracle, method_checks, oracle_checks
from tests.testing._originals import FrankWolfe, SquaredHinge, _FWState, kernels

K, Y = kernels()


def _oracle(cls=SquaredHinge, **kw):
    return lambda: cls(K, Y, **kw)


def _separable(cls=SquaredHinge):
    # C large enough that the soft margin separates the separable toy
    return lambda K, y: cls(K, y, C=50.0)


# ---------------------------------------------------------------- methods
class UphillForEver(FrankWolfe):
    """Steps towards the vertex of the smallest q_k: uphill, and it claims nothing."""

    def _step(self, s, answer):
        vertex = np.zeros_like(s.w)
        vertex[np.argmin(answer.q)] = 1.0
        return 2.0 / (s.t + 2.0), vertex


class NeverMoves(FrankWolfe):
    def _tell(self, s, query, answer):
        s.t += 1


class IgnoresHandover(FrankWolfe):
    """Restarts from the centre after a hand-over (``initial=``, a Chain)."""

    def _resume(self, oracle, handover):
        return self._start(oracle)


class OffSimplexAbove5(FrankWolfe):
    """Correct up to 5 kernels; with more, its steps drift off the simplex by 1e-3."""

    def _tell(self, s, query, answer):
        super()._tell(s, query, answer)
        if s.w.size > 5:
            s.w = s.w * 1.001


class NaNAfter150(FrankWolfe):
    def _tell(self, s, query, answer):
        super()._tell(s, query, answer)
        if s.t >= 150:
            s.w = np.full_like(s.w, np.nan)


class TooSlow(FrankWolfe):
    """Steps ``2 / (t + 2)^2``: it moves and improves, far too slowly."""

    def __init__(self, power=2.0):
        super().__init__(power)


class KeepsStateAcrossStart(FrankWolfe):
    """Counts its steps on the instance, so a second run starts with small steps."""

    _steps = 0

    def _start(self, oracle):
        domain, s = super()._start(oracle)
        s.t = type(self)._steps
        return domain, s

    def _tell(self, s, query, answer):
        super()._tell(s, query, answer)
        type(self)._steps += 1


class ForgetsTheHandover(FrankWolfe):
    """Resumes from the hand-over's weights, but does not keep it as its best point."""

    def _handover_candidate(self, state, handover):
        return None

    def _resume(self, oracle, handover):
        domain = self._start(oracle)[0]
        # a far point instead of the hand-over: its best value is worse
        return domain, _FWState(w=np.eye(oracle.n_kernels)[int(np.argmin(handover.answer.q))])


class ClaimsEarly(FrankWolfe):
    def _tell(self, s, query, answer):
        super()._tell(s, query, answer)
        if s.t >= 5:
            self._finish("done", converged=True)


class ReportsLastPoint(FrankWolfe):
    def report(self):
        rep = super().report()
        if rep.best is None or rep.evaluated is None:
            return rep
        return dataclasses.replace(rep, weights=rep.evaluated)


METHOD_FLAWS = [
    (UphillForEver, "progress", "the best point improves"),
    (NeverMoves, "progress", "the method moves"),
    (IgnoresHandover, "handover", "a hand-over is used"),
    (OffSimplexAbove5, "invariants", r"kernels .*queries are finite and in the domain.*feasible"),
    (NaNAfter150, "invariants", r"queries are finite and in the domain.*after 150 oracle calls"),
    (TooSlow, "progress", r"progress: J\(best\) - J\* fell"),
    (KeepsStateAcrossStart, "reset", "start resets everything"),
    (ForgetsTheHandover, "handover", "never reports a worse best value than the hand-over's"),
    (ClaimsEarly, "invariants", "converged implies the gap target is met"),
    (ReportsLastPoint, "invariants", "reported weights reproduce the reported value"),
]


def test_the_correct_method_passes_the_default_kit():
    check_method(FrankWolfe)


@pytest.mark.parametrize("cls, check, message", METHOD_FLAWS,
                         ids=[c.__name__ for c, _, _ in METHOD_FLAWS])
def test_each_flawed_method_fails_the_default_kit_naming_its_property(cls, check, message):
    KeepsStateAcrossStart._steps = 0
    with pytest.raises(AssertionError, match=message) as info:
        check_method(cls)
    assert str(info.value).startswith(f"{cls.__name__} {check} on ")
    # the per-check case of the same name fails alone (parametrize_with_checks' ids)
    KeepsStateAcrossStart._steps = 0
    with pytest.raises(AssertionError, match=message):
        dict(method_checks(cls))[check]()


def test_the_off_simplex_flaw_needs_more_than_five_kernels():
    """Its only flaw is past 5 kernels: the kit finds it because it draws up to 50."""
    from mklopt import solve
    from mklopt.stopping import MaxOracleCalls
    from mklopt.testing import SmoothQuadraticOracle

    res = solve(SmoothQuadraticOracle.random(5, seed=0), OffSimplexAbove5(), stop=MaxOracleCalls(50))
    assert res.reason == "max_oracle_calls"
    with pytest.warns(UserWarning, match="not in its feasible set"):
        res = solve(SmoothQuadraticOracle.random(6, seed=0), OffSimplexAbove5(),
                    stop=MaxOracleCalls(50))
    assert res.reason == "invalid_query" and res.n_oracle_calls == 1


# ---------------------------------------------------------------- oracles
class BiasFlipped(SquaredHinge):
    def _bias(self, a):
        return -super()._bias(a)


class MissingTerm(SquaredHinge):
    """The linear term lacks -a'a/(4C): J and its gap belong to another problem."""

    def _linear(self, alpha):
        v = alpha * self.y
        return float(alpha.sum() - 0.5 * v.sum() ** 2)


class StopsAtFixedViolation(SquaredHinge):
    """The inner solver stops at a KKT residual of 0.05 whatever its tolerance."""

    def _stop_at(self):
        return 0.05


class IgnoresWarmStart(SquaredHinge):
    def _solve(self, K, warm_start):
        return super()._solve(K, None)


class InfeasibleAlpha(SquaredHinge):
    """Returns its smallest multiplier negative (a sign slip in a projection)."""

    def _solve(self, K, warm_start):
        a, b, it, ok = super()._solve(K, warm_start)
        a = a.copy()
        k = int(np.argmin(a))
        a[k] = -a[k] - 1e-2
        return a, b, it, ok


class WrongC(SquaredHinge):
    """Solves with 2C but computes its value with C: its reference disagrees."""

    def _hessian(self, K):
        return (K + 1.0) * np.outer(self.y, self.y) + np.eye(self.y.size) / (4.0 * self.C)


class ScaledQ(SquaredHinge):
    """Reports q twice too large (and a value consistent with it)."""

    def __call__(self, w, warm_start=None, need_q=True, kernels=None):
        ans = super().__call__(w, warm_start, need_q, kernels)
        q = 2.0 * ans.q
        return dataclasses.replace(ans, q=q, grad=-0.5 * q,
                                   value=ans.linear_term - 0.5 * float(np.dot(ans.w, q)))


class GradSign(SquaredHinge):
    def __call__(self, w, warm_start=None, need_q=True, kernels=None):
        ans = super().__call__(w, warm_start, need_q, kernels)
        return dataclasses.replace(ans, grad=0.5 * ans.q)


ORACLE_FLAWS = [
    (BiasFlipped, "decision", "sign agrees with the labels"),
    (MissingTerm, "minorant|subgradient", "lower bound everywhere|finite differences"),
    (StopsAtFixedViolation, "minorant", "every answer is a lower bound everywhere"),
    (IgnoresWarmStart, "warm_start", "re-solves in few iterations"),
    (InfeasibleAlpha, "answers", "alpha is feasible"),
    (WrongC, "minorant|subgradient|reference", "lower bound|finite differences|reference"),
    (ScaledQ, "minorant|subgradient", "lower bound everywhere|subgradient"),
    (GradSign, "answers", r"grad == -q/2"),
]


def test_the_correct_oracle_passes_the_default_kit():
    check_oracle(_oracle(), separable=_separable())


@pytest.mark.parametrize("cls, check, message", ORACLE_FLAWS,
                         ids=[c.__name__ for c, _, _ in ORACLE_FLAWS])
def test_each_flawed_oracle_fails_the_default_kit_naming_its_property(cls, check, message):
    with pytest.raises(AssertionError, match=message) as info:
        check_oracle(_oracle(cls), separable=_separable(cls))
    named = str(info.value).split(" at w=")[0]
    assert named.startswith(cls.__name__) and named.split()[1] in check.split("|")
    # the per-check case of that name fails alone
    with pytest.raises(AssertionError, match=message):
        dict(oracle_checks(_oracle(cls), separable=_separable(cls)))[named.split()[1]]()
