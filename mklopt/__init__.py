"""mklopt: composable multiple kernel learning.

An inner oracle (an SVM dual solver), interchangeable outer methods that
move the kernel weights, and one driver with pluggable stopping criteria
certified by duality gaps.
"""

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

# Everything else is resolved on first access (PEP 562), so that ``import
# mklopt`` costs numpy and little more: the driver, the kernels and the
# methods import numba and scipy.optimize, and the estimators import
# scikit-learn when it is installed. ``from mklopt import solve`` and
# ``mklopt.datasets`` work as if imported eagerly.
_LAZY = {
    "solve": "driver",
    "KernelBank": "kernels",
    "KernelStack": "kernels",
    **dict.fromkeys(
        ["MKLClassifier", "MKLClassifierCV", "MKBoostClassifier", "MKLRegressor",
         "MKLRegressorCV", "MKLOneClass"],
        "estimators",
    ),
}
_LAZY_MODULES = {
    "datasets", "domains", "methods", "stopping", "kernels", "oracles", "driver", "estimators",
    "tasks", "persist", "plugins",
}


def __getattr__(name):
    import importlib

    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'mklopt' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY) | _LAZY_MODULES)
