"""Every built-in method and oracle passes the thorough kit (slow: ``-m slow --runslow``).

Deviations are declared on the classes (``conformance``), never skipped
here: ``Subgradient`` and ``SPG`` promise no rate on piecewise-linear toys.
Methods that read the oracle's dual problem (``ActiveSet``, chains ending
in it) cannot run on a toy oracle; they run in the contract suite on SVMs.
"""

import numpy as np
import pytest

from mklopt.oracles import LogisticDual, OneClassDual, RidgeDual, SVMDual, SVRDual
from mklopt.testing import parametrize_with_checks
from tests.methods.test_contract import _kit_methods


def _methods():
    from mklopt.methods import Chain, KernelWorkingSet

    # (grouped mirror descent needs groups that fit each toy's kernels: it runs
    # in the contract suite on SVMs)
    return [*_kit_methods(), KernelWorkingSet(size=2), Chain("level", "subgradient"),
            Chain("mirror", "level")]


def _problem():
    from tests.methods import _svm_problems as P

    return P.problem()


def svm_dual():
    K, y = _problem()
    return SVMDual(K, y, C=1.0)


def svr_dual():
    K, y = _problem()
    return SVRDual(K, np.sin(np.arange(y.size) / 5.0), C=1.0, epsilon=0.1)


def one_class_dual():
    K, _ = _problem()
    return OneClassDual(K, nu=0.3)


def logistic_dual():
    K, y = _problem()
    return LogisticDual(K, y, C=1.0)


def ridge_dual():
    K, y = _problem()
    return RidgeDual(K, np.sin(np.arange(y.size) / 5.0), C=1.0)


@pytest.mark.slow
@parametrize_with_checks(methods=_methods(), thorough=True)
def test_every_built_in_method_passes_the_thorough_kit(check):
    check()


@pytest.mark.slow
@parametrize_with_checks(oracles=[svm_dual, svr_dual, one_class_dual, logistic_dual, ridge_dual],
                         thorough=True)
def test_every_built_in_oracle_passes_the_thorough_kit(check):
    check()


@pytest.mark.slow
@pytest.mark.parametrize("make", [lambda K, y: SVMDual(K, y, C=100.0),
                                  lambda K, y: LogisticDual(K, y, C=100.0)],
                         ids=["SVMDual", "LogisticDual"])
def test_the_classifiers_decide_with_the_labels_on_separable_toys(make):
    from mklopt.testing import oracle_checks

    dict(oracle_checks(lambda: make(*_problem()), thorough=True, separable=make))["decision"]()
