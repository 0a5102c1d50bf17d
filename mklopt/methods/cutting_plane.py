"""SILP: the cutting-plane method of Sonnenburg et al. for L1-MKL.

References
----------
S. Sonnenburg, G. Raetsch, C. Schaefer and B. Schoelkopf, "Large Scale
Multiple Kernel Learning", JMLR 7, 2006; as summarised by Xu et al. 2008,
section 2, eq. 2 (``papers/xu2008-extended-level-method-mkl.txt``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..domains import Simplex
from ._base import MethodBase, register
from ._cut_model import CutModel

__all__ = ["CuttingPlane"]


@dataclass
class _State:
    model: CutModel
    w: np.ndarray  # next query
    lower: float = -np.inf  # running maximum of the LP minima


@register("cutting_plane", "silp")
class CuttingPlane(MethodBase):
    r"""Semi-infinite linear programming (SILP) for L1-MKL.

    Every answer ``alpha_j`` at ``w_j`` adds the cut ``f(w, alpha_j) = 1'alpha_j
    - w'q_j / 2``; the next point minimises the cutting-plane model over the
    simplex P (Xu et al. 2008, eq. 2):

    .. math:: w_{i+1} = \arg\min_{w \in P} \max_{j \le i} f(w, \alpha_j).

    Takes no parameters.

    Notes
    -----
    The model minimum ``f_i = min_P max_j f(w, alpha_j)`` (an LP, solved with
    HiGHS) is a lower bound on ``J* = min_P J``: every cut minorises ``J``
    because ``alpha_j`` lies in Q whatever ``w``, whatever the accuracy of
    the inner solve. It also dominates every dual value
    ``D(alpha_j) = min_P f(w, alpha_j)``, so the reported lower bound is
    ``max_i f_i`` and the upper one the best ``J(w_j)``. The lower bound is
    kept as a running maximum, so solver rounding never makes it decrease.
    The reported duality gap is that of the best point, computed by
    :class:`~mklopt.domains.Simplex` like every other L1 method; the bound
    gap ``upper - lower`` is available to :class:`~mklopt.stopping.BoundGap`.

    SILP takes the model's minimiser as is: far from the evaluated points the
    model is inaccurate, and the iterates can jump between vertices of the
    simplex. :class:`~mklopt.methods.LevelBundle` regularises that step.

    References
    ----------
    Sonnenburg et al., JMLR 7, 2006; Xu et al., NIPS 2008, eq. 2.

    Examples
    --------
    >>> from mklopt.testing import PiecewiseLinearOracle
    >>> from mklopt import solve
    >>> from mklopt.stopping import BoundGap, MaxIter
    >>> oracle = PiecewiseLinearOracle.random(n_kernels=5, n_pieces=8, seed=1)
    >>> res = solve(oracle, CuttingPlane(), stop=BoundGap(1e-9) | MaxIter(100))
    >>> bool(abs(res.value - oracle.exact_l1_optimum()) <= 1e-7)
    True
    """

    uses_cuts = True

    def __init__(self):
        pass

    def _start(self, oracle):
        m = oracle.n_kernels
        domain = Simplex(m)
        return domain, _State(model=CutModel(m), w=domain.initial())

    def _resume(self, oracle, handover):
        # The handed-over cuts form the model at once; the first query is
        # its minimiser, so no call is spent re-evaluating the best point.
        domain, s = self._start(oracle)
        for lin, q in handover.cuts:
            s.model.add(lin, q)
        s.model.add(handover.answer.linear_term, handover.answer.q)
        s.lower, s.w = s.model.minimize()
        return domain, s

    def _ask(self, s):
        return s.w

    def _tell(self, s, query, answer):
        s.model.add(answer.linear_term, answer.q)
        lower, s.w = s.model.minimize()
        s.lower = max(s.lower, lower)

    def _lower(self, s):
        return s.lower
