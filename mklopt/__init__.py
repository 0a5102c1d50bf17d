"""mklopt: composable multiple kernel learning.

An inner oracle (an SVM dual solver), interchangeable outer methods that
move the kernel weights, and one driver with pluggable stopping criteria
certified by duality gaps.
"""

from . import datasets, domains, methods, stopping
from ._types import (
    Handover,
    MethodReport,
    Oracle,
    OracleAnswer,
    OracleRequest,
    OuterMethod,
    Progress,
    Result,
)
from ._version import __version__  # noqa: F401 (mklopt.__version__)
from .driver import solve
from .kernels import KernelBank, KernelStack

__all__ = [
    "solve",
    "Oracle",
    "OracleAnswer",
    "Progress",
    "Result",
    "MethodReport",
    "OracleRequest",
    "Handover",
    "OuterMethod",
    "KernelBank",
    "KernelStack",
    "domains",
    "methods",
    "stopping",
    "datasets",
    "MKLClassifier",
    "MKLClassifierCV",
    "MKBoostClassifier",
    "MKLRegressor",
    "MKLRegressorCV",
    "MKLOneClass",
]

# The estimators are resolved on first access (PEP 562) so that ``import
# mklopt`` does not import scikit-learn, which they use when it is installed.
_LAZY_ESTIMATORS = {
    "MKLClassifier", "MKLClassifierCV", "MKBoostClassifier", "MKLRegressor", "MKLRegressorCV",
    "MKLOneClass",
}


def __getattr__(name):
    if name in _LAZY_ESTIMATORS:
        from . import estimators

        return getattr(estimators, name)
    raise AttributeError(f"module 'mklopt' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _LAZY_ESTIMATORS)
