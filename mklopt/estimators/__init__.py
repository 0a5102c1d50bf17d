"""scikit-learn-style estimators (scikit-learn itself is optional)."""

from ._base import ConvergenceWarning

__all__ = ["ConvergenceWarning"]
