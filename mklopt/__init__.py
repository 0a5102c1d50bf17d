"""mklopt: composable multiple kernel learning.

An inner oracle (an SVM dual solver), interchangeable outer methods that
move the kernel weights, and one driver with pluggable stopping criteria
certified by duality gaps.
"""

from . import domains, methods, stopping
from ._types import OracleAnswer, Progress, Result
from .driver import solve

__version__ = "0.1.0"

__all__ = [
    "solve",
    "OracleAnswer",
    "Progress",
    "Result",
    "domains",
    "methods",
    "stopping",
]
