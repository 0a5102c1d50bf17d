"""Inner oracles: map kernel weights to the solution of an MKL dual at those weights.

Every oracle follows the :class:`Oracle` protocol. :class:`DualOracle` is
the base of the SMO family (a dual of libsvm's form: build the problem,
nothing else) and :class:`OracleBase` that of oracles outside it (a dual
solved on the combined kernel); see the user guide's page on new oracles.
Each built-in oracle is registered below, one line each, under the name the
estimators take as ``loss`` (:mod:`mklopt.tasks`).
"""

from .._types import Oracle
from ..tasks import register_oracle
from ._base import DualOracle
from ._loss_base import OracleBase
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
    "Oracle", "OracleBase", "DualOracle", "SVMDual", "SVRDual", "OneClassDual", "RidgeDual",
    "LogisticDual", "WeakLearners", "DualProblem", "ConvergenceWarning", "CompositeOracle",
    "CompositeAnswer",
]

# one line per oracle: (name = the estimator's loss, task) -----------------------
register_oracle("hinge", "classification", SVMDual, ("C", "tol"), exact_step=True)
register_oracle("logistic", "classification", LogisticDual, ("C", "tol"))
register_oracle("epsilon_insensitive", "regression", SVRDual, ("C", "epsilon", "tol"),
                exact_step=True)
register_oracle("squared", "regression", RidgeDual, ("C",))
register_oracle("nu", "one-class", OneClassDual, ("nu", "tol", "sample_weight"),
                exact_step=True)
