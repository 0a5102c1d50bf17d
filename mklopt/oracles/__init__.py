"""Inner oracles: map kernel weights to the SVM dual solution (DESIGN section 2)."""

from ._problem import DualProblem
from ._warnings import ConvergenceWarning
from .composite import CompositeAnswer, CompositeOracle
from .one_class import OneClassDual
from .svm_dual import SVMDual
from .svr_dual import SVRDual
from .weak_learners import WeakLearners

__all__ = [
    "SVMDual", "SVRDual", "OneClassDual", "WeakLearners", "DualProblem", "ConvergenceWarning",
    "CompositeOracle", "CompositeAnswer",
]
