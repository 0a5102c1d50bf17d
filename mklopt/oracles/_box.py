"""Per-sample box constraints: ``C`` as one number or one bound per sample.

A weighted SVM (Lin, Lee and Wahba's weighted hinge loss; libsvm's
``weight`` and scikit-learn's ``class_weight`` and ``sample_weight``)
minimises ``1/2 |f|^2 + sum_i C_i xi_i``, whose dual is the usual one with
the box ``0 <= alpha_i <= C_i``. Every quantity of an oracle's answer
(``J(w)``, ``q``, the linear term, the duality gap built on them) is read
from a dual point, so a box that varies per sample changes the feasible set
only: the gap certificate holds as it is. The SMO core already takes a
vector of upper bounds (:class:`~mklopt.oracles.DualProblem`), so there is
one compiled signature whatever ``C`` is.

A sample whose bound is 0 has no variable at all (as libsvm drops samples
of weight 0): its ``alpha`` is 0, it does not enter the bias and it is
never a support vector. The oracle's problem then has variables for the
``kept`` samples only (``DualProblem.rows`` maps them to their kernel
rows), and the answers' ``alpha`` still has one entry per sample.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_per_sample, check_real

__all__ = ["check_box"]


def check_box(C, n, name="C"):
    """``(C, upper, kept)``: a scalar or per-sample box, checked.

    Parameters
    ----------
    C : float or array-like of shape (n,)
        A number > 0, or one bound >= 0 per sample, finite, not all zero.
    n : int
        Number of samples.
    name : str
        The argument's name in errors.

    Returns
    -------
    C : float or ndarray
        ``C`` as given (a float, or a read-only float64 copy).
    upper : ndarray of shape (n,)
        The bound of every sample.
    kept : ndarray of int64 or None
        The samples with a positive bound, or None when all have one.

    Raises
    ------
    ValueError
        On a bound that is negative, NaN or infinite, a vector of the wrong
        length, or bounds that are all zero.

    Examples
    --------
    >>> C, upper, kept = check_box([1.0, 0.0, 2.0], 3)
    >>> upper.tolist(), kept.tolist()
    ([1.0, 0.0, 2.0], [0, 2])
    >>> check_box(2.0, 2)[2] is None
    True
    """
    if np.ndim(C) == 0:
        c = check_real(C, name, low=0.0, strict_low=True)
        return c, np.full(n, c), None
    upper = check_per_sample(C, n, name, "bound")
    kept = np.flatnonzero(upper > 0.0).astype(np.int64)
    upper.flags.writeable = False
    return upper, upper, (None if kept.size == n else kept)
