"""check_oracle accepts correct oracles and names what a broken one violates."""

import numpy as np
import pytest

from mklopt.testing import PiecewiseLinearOracle, SmoothQuadraticOracle, check_oracle


@pytest.mark.parametrize("factory", [
    lambda: PiecewiseLinearOracle.random(4, 6, seed=0),
    lambda: SmoothQuadraticOracle.random(3, seed=0),
])
def test_the_toy_oracles_pass(factory):
    check_oracle(factory)


class _WrongGrad(PiecewiseLinearOracle):
    def __call__(self, w, warm_start=None):
        ans = super().__call__(w, warm_start)
        return _set(ans, "grad", ans.q)


class _WrongValue(PiecewiseLinearOracle):
    def __call__(self, w, warm_start=None):
        ans = super().__call__(w, warm_start)
        return _set(ans, "value", ans.value + 1.0)


def _set(ans, name, value):
    import dataclasses

    return dataclasses.replace(ans, **{name: value})


@pytest.mark.parametrize("cls, message", [(_WrongGrad, "grad == -q/2"),
                                          (_WrongValue, "linear_term")])
def test_a_broken_oracle_fails_naming_the_property(cls, message):
    o = PiecewiseLinearOracle.random(4, 6, seed=0)
    with pytest.raises(AssertionError, match=message):
        check_oracle(lambda: cls(o.s, o.Q))


def test_an_oracle_accepting_any_w_fails():
    o = PiecewiseLinearOracle.random(3, 4, seed=0)

    class Lenient(PiecewiseLinearOracle):
        def __call__(self, w, warm_start=None):
            return super().__call__(np.resize(w, self.n_kernels), warm_start)

    with pytest.raises(AssertionError, match="raises ValueError"):
        check_oracle(lambda: Lenient(o.s, o.Q))


def test_the_svm_dual_passes():
    from mklopt.oracles import SVMDual
    from tests.methods import _svm_problems as P

    check_oracle(lambda: SVMDual(*P.problem(), C=1.0, tol=1e-8))
