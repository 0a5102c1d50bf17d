"""Entropic mirror descent for L1-MKL and the mixed (l-inf, l1) formulation.

References
----------
J. S. Nath, G. Dinesh, S. Raman, C. Bhattacharyya, A. Ben-Tal and
K. R. Ramakrishnan, "On the Algorithmics and Applications of a Mixed-norm
based Kernel Learning Formulation", NIPS 2009, eqs. 4-9 and Algorithm 1
(``papers/nath2009-mixed-norm-mkl-mirror-descent.txt``).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from .._jit.projections import entropic_step
from .._validation import check_int, check_real
from ..domains import GroupSimplex, Simplex
from ._base import MethodBase, register

__all__ = ["MirrorDescent"]

log = logging.getLogger("mklopt")

# gamma_j is floored here when a group's W_j vanishes (alpha orthogonal to all
# its kernels), so that effective weights lam / gamma stay finite.
_GAMMA_FLOOR = 1e-12


@dataclass
class _State:
    lam: np.ndarray  # kernel order; lam_j in the simplex of group j
    gamma: np.ndarray  # (n_groups,)
    t: int = 0  # mirror steps taken
    n_inner: int = 0  # SVM calls at the current lam
    n_unsettled: int = 0  # lam whose gamma alternation hit max_inner
    best_lam: np.ndarray | None = None
    best_gamma: np.ndarray | None = None
    steps: list | None = None


@register("mirror")
class MirrorDescent(MethodBase):
    r"""Entropic mirror descent on a product of simplexes (Nath et al. 2009).

    Parameters
    ----------
    groups : list of lists of int, optional
        A partition of the kernel indices into groups ``G_1..G_n``. ``None``
        (default) means one group of all kernels: L1-MKL on the simplex.
    step_scale : float, default=1.0
        Constant ``c`` multiplying the step size of eq. 9 (see Notes), > 0.
    inner_tol : float, default=1e-6
        The gamma step and the SVM agree at ``lam`` when successive
        ``gamma`` differ by at most ``inner_tol`` in max-norm (grouped case).
    max_inner : int, default=50
        Largest number of SVM calls spent alternating with the gamma step at
        one ``lam``; >= 1.

    Notes
    -----
    **Problem.** With groups, Nath et al.'s dual (4)-(5) is
    ``min_lam J(lam)``, ``lam_j`` in the simplex of group ``j``, with

    .. math:: J(\lambda) = \max_{\gamma \in \Delta_n,\ \alpha \in Q}
              1'\alpha - \tfrac12 \sum_j W_j(\lambda, \alpha) / \gamma_j,
              \qquad W_j = \sum_{k \in G_j} \lambda_{jk} q_k(\alpha),

    an SVM with effective weights ``w_jk = lam_jk / gamma_j``. For fixed
    ``alpha`` the best ``gamma`` is analytic (eq. 6),
    ``gamma_j = sqrt(W_j) / sum_i sqrt(W_i)``; for fixed ``gamma`` the best
    ``alpha`` is the SVM (the oracle). At each ``lam`` the method alternates
    the two, re-querying the SVM at the updated effective weights until
    ``gamma`` moves less than ``inner_tol``. Only then is the point offered
    as a candidate best point: its value is ``J(lam)`` to that tolerance and
    its gap ``J(lam) - D(alpha)`` (:class:`~mklopt.domains.GroupSimplex`)
    is not negative. These re-solves are oracle calls within one iteration.

    **Mirror step** (eqs. 7-8). With the gradient
    ``dJ/dlam_jk = -q_k / (2 gamma_j)`` at the settled ``(alpha, gamma)``,
    the update with the paper's entropy ``omega`` is, in closed form,

    .. math:: \lambda_{jk} \leftarrow
              \frac{\lambda_{jk} \exp(-n s_t g_{jk})}
                   {\sum_{l \in G_j} \lambda_{jl} \exp(-n s_t g_{jl})}.

    The factor ``n`` (number of groups) comes from the ``1/n`` scaling
    inside Nath et al.'s ``omega`` (its gradient is ``(log(lam/n) + 1) / n``),
    and eq. 8 multiplies by ``n`` again. Their step size (eq. 9),
    ``s_t = sqrt(log max_j n_j) / (sqrt(t) n ||grad||_inf)``, therefore gives
    the exponent step

    .. math:: \eta_t = n s_t = c\,\frac{\sqrt{\log \max_j n_j}}
                                    {\sqrt{t}\,\|\nabla_\lambda J\|_\infty},

    which is what is implemented, with ``c = step_scale``. Eq. 9 is stated up
    to the ``O(1)`` factor of Result 1 (``sqrt(Theta sigma)``); ``c = 1`` is
    the paper's expression as printed, and the standard analysis of entropic
    mirror descent on a simplex suggests ``c = sqrt(2)``. The ``||.||_inf``
    normalisation makes the step invariant to the scale of ``J`` (``C``, the
    kernels' trace). Nath et al.'s ``delta`` term (``1e-16``) is neglected in
    eq. 8 itself (their footnote 4); so it is here. When every group has a
    single kernel, ``log max_j n_j = 0``: ``lam`` is fixed and the method
    reduces to the gamma/SVM alternation. The iterates do not decrease
    ``J`` monotonically; the best offered point is kept.

    **One group** (``groups=None``): ``gamma = 1``, the query is ``lam``
    itself and the method is entropic mirror descent for L1-MKL on the
    :class:`~mklopt.domains.Simplex` (every answer is offered).

    ``query_weights`` and ``Result.weights`` are the effective weights;
    :meth:`extra` returns ``{"lam", "gamma"}`` of the best point.

    References
    ----------
    Nath et al., NIPS 2009, eqs. 4-9 and Algorithm 1.

    Examples
    --------
    >>> from mklopt.testing import SmoothQuadraticOracle
    >>> from mklopt import solve
    >>> from mklopt.stopping import DualityGap, MaxIter
    >>> oracle = SmoothQuadraticOracle.random(n_kernels=6, seed=2)
    >>> res = solve(oracle, MirrorDescent(groups=[[0, 1, 2], [3, 4, 5]]),
    ...             stop=DualityGap(1e-3) | MaxIter(300))
    >>> bool(res.gap >= 0 and sorted(res.extra) == ["gamma", "lam"])
    True
    """

    def __init__(self, groups=None, step_scale=1.0, inner_tol=1e-6, max_inner=50):
        self.groups = groups
        self.step_scale = step_scale
        self.inner_tol = inner_tol
        self.max_inner = max_inner

    # ---- hooks ---------------------------------------------------------------
    def _start(self, oracle):
        check_real(self.step_scale, "step_scale", low=0.0, strict_low=True)
        check_real(self.inner_tol, "inner_tol", low=0.0, strict_low=True)
        check_int(self.max_inner, "max_inner", low=1)
        m = oracle.n_kernels
        if self.groups is None:
            self.domain = Simplex(m)
            self._order = np.arange(m, dtype=np.int64)
            self._offsets = np.array([0, m], dtype=np.int64)
            self._group_of = np.zeros(m, dtype=np.int64)
            lam = self.domain.initial()
        else:
            self.domain = GroupSimplex(self.groups, m)
            self._order, self._offsets = self.domain.order, self.domain.offsets
            self._group_of = self.domain.group_of
            lam = self.domain.initial_lam()
        n_groups = len(self._offsets) - 1
        self._log_size = math.log(int(np.max(np.diff(self._offsets))))
        return _State(lam=lam, gamma=np.full(n_groups, 1.0 / n_groups), steps=[])

    def _ask(self, s):
        return s.lam / s.gamma[self._group_of]

    def _tell(self, s, query, answer):
        q = np.maximum(np.asarray(answer.q, dtype=np.float64), 0.0)
        s.n_inner += 1
        if self.groups is not None:
            gamma_new = self._gamma_step(s.lam, q)
            settled = float(np.max(np.abs(gamma_new - s.gamma))) <= self.inner_tol
            if not settled and s.n_inner < self.max_inner:
                s.gamma = gamma_new  # re-solve the SVM at the new effective weights
                return False
            if not settled:
                s.n_unsettled += 1
                log.debug("gamma/SVM alternation did not settle in %d calls", s.n_inner)
            else:
                self._offer_point(s, query, answer)
            gamma_used = s.gamma
            s.gamma = gamma_new
        else:
            self._offer_point(s, query, answer)
            gamma_used = s.gamma
        s.n_inner = 0
        # mirror step on lam (eq. 8) with the gradient -q_k / (2 gamma_j)
        g = -0.5 * q / gamma_used[self._group_of]
        s.t += 1
        gmax = float(np.max(np.abs(g)))
        if gmax > 0.0 and self._log_size > 0.0:
            eta = self.step_scale * math.sqrt(self._log_size) / (math.sqrt(s.t) * gmax)
            lo = np.ascontiguousarray(s.lam[self._order])
            go = np.ascontiguousarray(g[self._order])
            out = entropic_step(lo, go, eta, self._offsets, np.empty_like(lo))
            s.lam = np.empty_like(s.lam)
            s.lam[self._order] = out
            s.steps.append(eta)
        return True

    # ---- helpers -------------------------------------------------------------
    def _gamma_step(self, lam, q):
        """Nath et al. eq. 6: ``gamma_j = sqrt(W_j) / sum_i sqrt(W_i)``."""
        W = np.bincount(self._group_of, weights=lam * q, minlength=len(self._offsets) - 1)
        r = np.sqrt(np.maximum(W, 0.0))
        total = r.sum()
        if not total > 0.0:
            return np.full(r.size, 1.0 / r.size)
        gamma = np.maximum(r / total, _GAMMA_FLOOR)
        return gamma / gamma.sum()

    def _offer_point(self, s, query, answer):
        before = self.best
        self._offer(query, answer)
        if self.best is not before:
            s.best_lam = s.lam.copy()
            s.best_gamma = s.gamma.copy()

    def extra(self):
        s = getattr(self, "_state", None)
        if s is None or s.best_lam is None:
            return {}
        return {"lam": s.best_lam.copy(), "gamma": s.best_gamma.copy()}
