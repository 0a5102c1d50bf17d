"""Warning classes of the oracles."""

__all__ = ["ConvergenceWarning"]


class ConvergenceWarning(UserWarning):
    """An inner solver stopped on its iteration budget before reaching ``tol``.

    The answer it returns is feasible but not optimal to the requested
    tolerance; raise ``max_iter`` or loosen ``tol``.
    """
