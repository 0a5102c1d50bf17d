"""The dual problem an MKL oracle solves, in the one form its SMO core reads.

Every oracle of the common dual form of docs/new_oracle.md maximises ``l(a) - 1/2 sum_k w_k q_k(a)``
over a set that does not depend on ``w``. Written as libsvm writes its three
problems (Fan, Chen and Lin, JMLR 6, 2005, eq. 1), that is

    min_a  1/2 a'Q a + p'a   s.t.  s'a = total,  0 <= a_t <= upper_t,

with ``Q_tu = s_t s_u K(rows_t, rows_u)`` for the combined kernel ``K``. A
variable ``t`` reads kernel row ``rows_t`` with sign ``s_t``; several
variables may share a row (epsilon-SVR has two per sample). Then

    v = sum_t s_t a_t e_{rows_t},    q_k(a) = v' K_k v,    l(a) = -p'a.

=============  ===========  ================  ============  ==========  =====
oracle         variables    signs ``s``       ``rows``      ``p``       total
=============  ===========  ================  ============  ==========  =====
classification ``alpha``    ``y``             ``0..n-1``    ``-1``      0
epsilon-SVR    ``(a, a*)``  ``(+1, -1)``      ``0..n-1`` x2 ``eps -+ y``  0
one-class      ``alpha``    ``+1``            ``0..n-1``    ``0``       1
=============  ===========  ================  ============  ==========  =====

An exact solver for a restricted problem (for example an active-set step on
the support vectors) needs nothing else from the oracle.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["DualProblem"]


def _frozen(a, dtype):
    a = np.ascontiguousarray(a, dtype=dtype)
    if a.flags.writeable:
        a = a.copy()
        a.flags.writeable = False
    return a


@dataclass(frozen=True, slots=True, eq=False)
class DualProblem:
    """``min 1/2 a'Qa + p'a  s.t.  s'a = total, 0 <= a <= upper`` (module notes).

    Attributes
    ----------
    signs : ndarray of float64, shape (n_variables,)
        ``s_t`` in {-1, +1}.
    rows : ndarray of int64, shape (n_variables,)
        Kernel row read by each variable, in ``[0, n_samples)``.
    linear : ndarray of float64, shape (n_variables,)
        ``p``; the oracle's linear term is ``l(a) = -p'a``.
    upper : ndarray of float64, shape (n_variables,)
        Upper bounds, > 0 (every lower bound is 0).
    total : float
        Right-hand side of the equality ``s'a = total``.
    n_samples : int
        Number of kernel rows.
    """

    signs: NDArray[np.float64]
    rows: NDArray[np.int64]
    linear: NDArray[np.float64]
    upper: NDArray[np.float64]
    total: float
    n_samples: int

    @classmethod
    def make(cls, signs, rows, linear, upper, total, n_samples):
        """Build a problem whose arrays are read-only float64/int64 copies."""
        signs = _frozen(signs, np.float64)
        N = signs.shape[0]
        rows = _frozen(rows, np.int64)
        linear = _frozen(linear, np.float64)
        upper = _frozen(np.broadcast_to(upper, (N,)), np.float64)
        if not (rows.shape == linear.shape == upper.shape == (N,)):
            raise ValueError("signs, rows, linear and upper must have one entry per variable")
        return cls(signs, rows, linear, upper, float(total), int(n_samples))

    @property
    def n_variables(self):
        """Number of dual variables ``a``."""
        return int(self.signs.shape[0])

    def v(self, a):
        """``v = sum_t s_t a_t e_{rows_t}``, shape (n_samples,)."""
        return np.bincount(self.rows, weights=self.signs * a, minlength=self.n_samples)

    def linear_term(self, a):
        """``l(a) = -p'a``."""
        return -float(self.linear @ a)
