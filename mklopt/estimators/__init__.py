"""scikit-learn-style estimators (scikit-learn itself is optional).

Importing this subpackage imports scikit-learn when it is installed (only
:mod:`mklopt.estimators._sklearn` does, in one guarded place); ``import
mklopt`` alone does not. The modules have one job each: ``_sklearn`` the
optional scikit-learn bases, ``_checks`` the checks of ``X`` and ``y``,
``_params`` the shared hyper-parameters, ``_ovo`` the one-vs-one scheme of
the classifiers, then one module per estimator family.
"""

from ..tasks import register_estimator
from ._sklearn import ConvergenceWarning
from .mkboost import MKBoostClassifier
from .mkl import MKLClassifier
from .mkl_cv import GridEdgeWarning, MKLClassifierCV
from .mkl_regressor_cv import MKLRegressorCV
from .mkl_tasks import MKLOneClass, MKLRegressor

__all__ = [
    "ConvergenceWarning", "GridEdgeWarning", "MKLClassifier", "MKLClassifierCV",
    "MKBoostClassifier",
    "MKLRegressor", "MKLRegressorCV", "MKLOneClass",
]

# one line per estimator: its task, and the name saved models record ------------
register_estimator(MKLClassifier, "classification")
register_estimator(MKLRegressor, "regression")
register_estimator(MKLOneClass, "one-class")
register_estimator(MKBoostClassifier, "classification")
