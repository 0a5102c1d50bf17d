"""Outer methods: each one file, registered under a short name.

Adding a method is one file plus one import line below; the contract suite
in ``tests/methods/test_contract.py`` then runs it automatically. Named
configurations with a label (the benchmarks' ``"sd"``, ``"lp4/3"``, ...)
are registered next to their method with :func:`add_preset`.
"""

from ._base import (
    ESTIMATOR_PARAMS,
    METHODS,
    PRESETS,
    MethodBase,
    Preset,
    add_preset,
    estimator_params_of,
    get_method,
    get_preset,
    method_names,
    register,
)

__all__ = ["ESTIMATOR_PARAMS", "estimator_params_of", "METHODS", "PRESETS", "MethodBase",
           "Preset", "add_preset", "get_method",
           "get_preset", "method_names", "register", "Subgradient", "Boosting",
           "CuttingPlane", "LevelBundle", "MirrorDescent", "AnalyticLp", "AnalyticElasticNet",
           "KernelWorkingSet",
           "ActiveSet", "Chain", "SPG"]

# one import per method (each registers itself) ------------------------------
from .active_set import ActiveSet  # noqa: E402
from .analytic_lp import AnalyticElasticNet, AnalyticLp  # noqa: E402
from .boosting import Boosting  # noqa: E402
from .chain import Chain  # noqa: E402
from .cutting_plane import CuttingPlane  # noqa: E402
from .level_bundle import LevelBundle  # noqa: E402
from .mirror_descent import MirrorDescent  # noqa: E402
from .spg import SPG  # noqa: E402
from .subgradient import Subgradient  # noqa: E402
from .working_set import KernelWorkingSet  # noqa: E402

# presets: the configurations the benchmarks and the CLI's bench run, with the
# labels of their tables (Xu et al. 2008; Kloft et al. 2011; Xia and Hoi 2013)
add_preset("sd", "subgradient", "SD (SimpleMKL)", direction="reduced")
add_preset("silp", "cutting_plane", "SILP")
add_preset("level", "level", "Level")
add_preset("level-paper", "level", "Level (paper λ 0.9 → 0.99)", lam=0.9, lam_final=0.99)
add_preset("mirror", "mirror", "MD")
add_preset("lp4/3", "lp", "Lp p=4/3", p=4.0 / 3.0)
add_preset("lp2", "lp", "Lp p=2", p=2.0)
add_preset("lp4", "lp", "Lp p=4", p=4.0)
for _variant in ("D1", "D2", "S1", "S2"):
    add_preset(f"mkboost-{_variant.lower()}", "mkboost", f"MKBoost-{_variant}", variant=_variant)
del _variant
