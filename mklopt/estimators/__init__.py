"""scikit-learn-style estimators (scikit-learn itself is optional).

Importing this subpackage imports scikit-learn when it is installed (see
:mod:`mklopt.estimators._base`); ``import mklopt`` alone does not.
"""

from ._base import ConvergenceWarning
from .mkboost import MKBoostClassifier
from .mkl import MKLClassifier
from .mkl_tasks import MKLOneClass, MKLRegressor

__all__ = [
    "ConvergenceWarning", "MKLClassifier", "MKBoostClassifier", "MKLRegressor", "MKLOneClass",
]
