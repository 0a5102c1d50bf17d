"""Inner oracles: map kernel weights to the solution of an MKL dual at those weights."""

from ._problem import DualProblem
from ._warnings import ConvergenceWarning
from .composite import CompositeAnswer, CompositeOracle
from .logistic_dual import LogisticDual
from .one_class import OneClassDual
from .ridge_dual import RidgeDual
from .svm_dual import SVMDual
from .svr_dual import SVRDual
from .weak_learners import WeakLearners

__all__ = [
    "SVMDual", "SVRDual", "OneClassDual", "RidgeDual", "LogisticDual", "WeakLearners",
    "DualProblem", "ConvergenceWarning", "CompositeOracle", "CompositeAnswer",
]
