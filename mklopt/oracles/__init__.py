"""Inner oracles: map kernel weights to the SVM dual solution (DESIGN section 2)."""

from ._problem import DualProblem
from ._warnings import ConvergenceWarning
from .svm_dual import SVMDual
from .weak_learners import WeakLearners

__all__ = ["SVMDual", "WeakLearners", "DualProblem", "ConvergenceWarning"]
