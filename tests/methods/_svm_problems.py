"""Small real SVM problems with exact optima, shared by the method tests."""

import functools

from mklopt.oracles import SVMDual
from tests._cvx_reference import exact_optimum, small_problem

C = 1.0
SVM_TOL = 1e-6


@functools.cache
def problem():
    return small_problem("sonar", n=60, seed=0)


@functools.cache
def _exact(key, domain):
    K, y = problem()
    return exact_optimum(K, y, C, domain)


def exact(domain, key):
    """Exact optimum of ``domain``'s formulation (cached under ``key``)."""
    return _exact(key, domain)


def oracle():
    K, y = problem()
    return SVMDual(K, y, C=C, tol=SVM_TOL)


def slack(value):
    """Allowance for the inner SVM tolerance and the conic solver."""
    return 1e-5 * max(1.0, abs(value))
