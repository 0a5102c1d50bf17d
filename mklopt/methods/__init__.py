"""Outer methods: each one file, registered under a short name.

Adding a method is one file plus one import line below; the contract suite
in ``tests/methods/test_contract.py`` then runs it automatically.
"""

from ._base import METHODS, MethodBase, get_method, register

__all__ = ["METHODS", "MethodBase", "get_method", "register", "Subgradient", "Boosting",
           "CuttingPlane", "LevelBundle", "MirrorDescent", "AnalyticLp", "KernelWorkingSet",
           "ActiveSet", "Chain"]

# one import per method (each registers itself) ------------------------------
from .active_set import ActiveSet  # noqa: E402
from .analytic_lp import AnalyticLp  # noqa: E402
from .boosting import Boosting  # noqa: E402
from .chain import Chain  # noqa: E402
from .cutting_plane import CuttingPlane  # noqa: E402
from .level_bundle import LevelBundle  # noqa: E402
from .mirror_descent import MirrorDescent  # noqa: E402
from .subgradient import Subgradient  # noqa: E402
from .working_set import KernelWorkingSet  # noqa: E402
