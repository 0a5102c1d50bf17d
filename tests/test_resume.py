"""solve(..., initial=result) resumes any registered method from a Result.

A resumed run starts from the result's best point without calling the oracle
there: a result that already meets the criterion costs no call, and a
resumed run to a tighter gap lands, within the two certified gaps, on the
value of one uninterrupted run.
"""

import warnings

import numpy as np
import pytest

from mklopt import Result, solve
from mklopt.methods import METHODS, ActiveSet, Boosting, LevelBundle, MethodBase
from mklopt.stopping import DualityGap, MaxOracleCalls
from mklopt.testing import SmoothQuadraticOracle
from tests.methods import _svm_problems as P

DUAL = sorted({c for c in METHODS.values() if c.oracle_kind == "dual"}, key=lambda c: c.__name__)


class _Spy:
    """Wraps an oracle and records the weights and warm starts of every call."""

    def __init__(self, oracle):
        self.oracle = oracle
        self.n_kernels = oracle.n_kernels
        self.calls = []

    def __getattr__(self, name):  # problem, bank, tol, ... of the wrapped oracle
        return getattr(self.__dict__["oracle"], name)

    def __setattr__(self, name, value):
        if name == "tol":  # the driver adapts the inner tolerance
            setattr(self.oracle, name, value)
        else:
            super().__setattr__(name, value)

    @property
    def n_calls(self):
        return len(self.calls)

    def __call__(self, w, warm_start=None, **kw):
        self.calls.append((np.array(w), warm_start))
        return self.oracle(w, warm_start=warm_start, **kw)


@pytest.mark.parametrize("cls", DUAL, ids=lambda c: c.__name__)
def test_every_method_resumes_without_an_extra_call(cls):
    loose, tight = DualityGap(1e-2), DualityGap(1e-4)
    budget = MaxOracleCalls(400)
    full = solve(P.oracle(), cls(), stop=tight | budget)
    part = solve(P.oracle(), cls(), stop=loose | budget)
    assert part.q is not None and part.q.shape == part.weights.shape

    # the result already meets its own criterion: resuming calls nothing
    spy = _Spy(P.oracle())
    again = solve(spy, cls(), stop=loose | budget, initial=part)
    assert spy.n_calls == again.n_oracle_calls == 0
    assert again.value == part.value and again.converged
    np.testing.assert_array_equal(again.weights, part.weights)

    # to a tighter gap: the first call is warm-started with the result's alpha
    spy = _Spy(P.oracle())
    rest = solve(spy, cls(), stop=tight | budget, initial=part)
    assert rest.n_oracle_calls == spy.n_calls > 0
    # (the exact step names its own warm start: its restricted solution)
    assert spy.calls[0][1] is part.alpha or cls is ActiveSet
    assert rest.value <= part.value  # the resumed point stays the best until beaten
    # both runs are certified: their values agree within the two gaps
    assert full.converged and rest.converged, (full.reason, rest.reason)
    assert abs(rest.value - full.value) <= full.gap + rest.gap + 1e-9 * abs(full.value)
    # every row of the resumed run keeps the resumed lower bound or better
    assert all(r.lower >= part.lower - 1e-12 * abs(part.lower) for r in rest.history)


def test_resume_on_a_toy_oracle_agrees_with_one_run():
    # the q kept in the Result rebuilds the answer: the resumed gap is the result's
    o = SmoothQuadraticOracle.random(6, 5, seed=2)
    part = solve(o, LevelBundle(), stop=DualityGap(1e-2))
    spy = _Spy(SmoothQuadraticOracle.random(6, 5, seed=2))
    method = LevelBundle()
    solve(spy, method, stop=DualityGap(1.0), initial=part)
    assert spy.n_calls == 0
    assert method.report().gap == pytest.approx(part.gap, rel=1e-9, abs=1e-14)
    assert method.report().lower >= part.lower


def test_bad_initial_is_refused_by_name():
    part = solve(P.oracle(), LevelBundle(), stop=DualityGap(1e-2))
    with pytest.raises(TypeError, match="initial must be a Result"):
        solve(P.oracle(), LevelBundle(), initial={"weights": part.weights})
    other = SmoothQuadraticOracle.random(part.weights.size + 1, 4, seed=0)
    with pytest.raises(ValueError, match="n_kernels"):
        solve(other, LevelBundle(), initial=part)
    fields = {f: getattr(part, f) for f in Result.__dataclass_fields__}
    with pytest.raises(ValueError, match="no q"):
        solve(P.oracle(), LevelBundle(), initial=Result(**{**fields, "q": None}))
    with pytest.raises(ValueError, match="Boosting cannot resume"):
        solve(P.oracle(), Boosting(), initial=part)


def test_a_method_without_handover_is_refused():
    class Plain:  # the bare OuterMethod protocol, no hand-over
        def start(self, oracle):
            self.inner = LevelBundle()
            self.inner.start(oracle)

        def ask(self):
            return self.inner.ask()

        def tell(self, q, a):
            self.inner.tell(q, a)

        def report(self):
            return self.inner.report()

        def extra(self):
            return {}

    part = solve(P.oracle(), LevelBundle(), stop=DualityGap(1e-2))
    assert not isinstance(Plain(), MethodBase)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(TypeError, match="takes no handover"):
            solve(P.oracle(), Plain(), initial=part)
