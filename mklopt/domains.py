"""Feasible sets of the MKL formulations and their dual values.

Each formulation of DESIGN section 1 minimises ``J(w) = max_{alpha in Q}
f(w, alpha)`` over a set W and owns a dual value ``D(alpha) <= J*``. This
module is the one place where W, its Euclidean projection, ``D`` and the
duality gap ``J(w) - D(alpha)`` are computed; the outer methods, the driver
and the :class:`~mklopt.stopping.DualityGap` criterion all go through it.

Writing ``h(q)`` for the "support function" part of the dual value,
``D(alpha) = 1'alpha - h(q(alpha)) / 2`` with

============================  ================================================
formulation                    ``h(q)``
============================  ================================================
L1 (:class:`Simplex`)          ``max_k q_k``
Lp (:class:`LpBall`)           ``||q||_{p*}``, ``p* = p / (p - 1)``
groups (:class:`GroupSimplex`) ``(sum_j sqrt(max_{k in G_j} q_k))^2``
============================  ================================================

and since ``J(w) = 1'alpha - w'q / 2`` at the oracle's ``alpha``, the gap is
``(h(q) - w'q) / 2``, which is non-negative for every feasible ``w`` (by
Hoelder's inequality for Lp). For groups it is non-negative only when
``gamma`` is the analytic step of the answer's ``alpha``
(:meth:`GroupSimplex.gap` uses that ``gamma``).
"""

from __future__ import annotations

import numpy as np

from ._jit.projections import project_simplex, project_simplex_product
from ._validation import check_int, check_real, check_vector

__all__ = ["Domain", "Simplex", "LpBall", "GroupSimplex", "as_groups"]


class Domain:
    """Base class of the feasible sets. Subclasses define ``h`` and ``project``."""

    n_kernels: int

    def initial(self):
        """The uniform feasible starting point of the papers."""
        raise NotImplementedError

    def project(self, x):
        """Euclidean projection of ``x`` onto the set."""
        raise NotImplementedError

    def contains(self, w, tol=1e-8):
        """True when ``w`` lies in the set up to ``tol``."""
        raise NotImplementedError

    def support(self, q):
        """``h(q)``: the maximum of ``w'q`` over the set (see module notes)."""
        raise NotImplementedError

    def dual_value(self, answer):
        """``D(alpha) = 1'alpha - h(q) / 2`` for an oracle answer."""
        return float(answer.linear_term) - 0.5 * self.support(answer.q)

    def gap(self, w, answer):
        """Duality gap ``J(w) - D(alpha) = (h(q) - w'q) / 2`` at an oracle answer."""
        return 0.5 * (self.support(answer.q) - float(np.dot(w, answer.q)))


class Simplex(Domain):
    """The simplex ``{w >= 0, sum(w) = 1}`` of L1-MKL.

    Parameters
    ----------
    n_kernels : int
        Dimension ``m``.
    """

    def __init__(self, n_kernels):
        self.n_kernels = check_int(n_kernels, "n_kernels", low=1)

    def initial(self):
        return np.full(self.n_kernels, 1.0 / self.n_kernels)

    def project(self, x):
        x = check_vector(x, "x", size=self.n_kernels)
        return project_simplex(x, 1.0, np.empty_like(x))

    def contains(self, w, tol=1e-8):
        w = np.asarray(w, dtype=float)
        return bool(np.all(w >= -tol) and abs(w.sum() - 1.0) <= tol * max(1, len(w)))

    def support(self, q):
        return float(np.max(q))

    def gap(self, w, answer):
        # sum_k w_k (max q - q_k) is a sum of non-negative terms, so rounding
        # cannot make the gap negative (w'q <= max q only up to rounding).
        q = answer.q
        return 0.5 * float(np.dot(w, q.max() - q)) / max(float(np.sum(w)), 1e-300)


class LpBall(Domain):
    """The non-negative part of the unit Lp ball ``{theta >= 0, ||theta||_p <= 1}``.

    Parameters
    ----------
    n_kernels : int
        Dimension ``m``.
    p : float
        Norm, ``p > 1``.

    Notes
    -----
    ``h(q) = max {theta'q : ||theta||_p <= 1} = ||q||_{p*}`` (Kloft et al.'s
    generalised dual with ``||.||_* = ||.||_{p*}``).
    """

    def __init__(self, n_kernels, p):
        self.n_kernels = check_int(n_kernels, "n_kernels", low=1)
        self.p = check_real(p, "p", low=1.0, strict_low=True)
        self.p_star = self.p / (self.p - 1.0)

    def initial(self):
        return np.full(self.n_kernels, self.n_kernels ** (-1.0 / self.p))

    def project(self, x):
        # Exact for p = 2; for other p the radial rescaling of the clipped
        # point is feasible and is what the analytic update needs.
        x = np.maximum(check_vector(x, "x", size=self.n_kernels), 0.0)
        nrm = np.linalg.norm(x, self.p)
        return x / nrm if nrm > 1.0 else x

    def contains(self, w, tol=1e-8):
        w = np.asarray(w, dtype=float)
        return bool(np.all(w >= -tol) and np.linalg.norm(w, self.p) <= 1.0 + tol)

    def support(self, q):
        return float(np.linalg.norm(np.maximum(q, 0.0), self.p_star))


def as_groups(groups, n_kernels):
    """Validate a partition of ``range(n_kernels)`` into non-empty groups.

    Returns
    -------
    order : ndarray of int64
        Kernel indices listed group after group.
    offsets : ndarray of int64 of shape (n_groups + 1,)
        Group ``j`` is ``order[offsets[j]:offsets[j + 1]]``.
    """
    try:
        groups = [np.asarray(g, dtype=np.int64).ravel() for g in groups]
    except (TypeError, ValueError):
        raise TypeError("groups must be a list of lists of kernel indices") from None
    if not groups:
        raise ValueError("groups is empty; give at least one group of kernel indices")
    if any(g.size == 0 for g in groups):
        raise ValueError("groups contains an empty group")
    order = np.concatenate(groups)
    if np.any(order < 0) or np.any(order >= n_kernels):
        raise ValueError(f"groups refers to kernels outside 0..{n_kernels - 1}")
    if order.size != n_kernels or np.unique(order).size != n_kernels:
        raise ValueError(
            f"groups must cover each of the {n_kernels} kernels exactly once "
            f"(got {order.size} entries, {np.unique(order).size} distinct)"
        )
    offsets = np.zeros(len(groups) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([g.size for g in groups])
    return order, offsets


class GroupSimplex(Domain):
    """Effective weights of the mixed (l-inf, l1) formulation (Nath et al. 2009).

    A point is described by ``lam_j`` in the simplex of group ``j`` and
    ``gamma`` in the simplex of size ``g``; the oracle sees the effective
    weights ``w_jk = lam_jk / gamma_j``.

    Parameters
    ----------
    groups : list of sequences of int
        A partition of the kernel indices.
    n_kernels : int
        Number of kernels.
    """

    def __init__(self, groups, n_kernels):
        self.n_kernels = check_int(n_kernels, "n_kernels", low=1)
        self.order, self.offsets = as_groups(groups, self.n_kernels)
        self.n_groups = len(self.offsets) - 1
        self.group_of = np.empty(self.n_kernels, dtype=np.int64)
        for j in range(self.n_groups):
            self.group_of[self.order[self.offsets[j] : self.offsets[j + 1]]] = j

    def initial(self):
        lam = self.initial_lam()
        gamma = np.full(self.n_groups, 1.0 / self.n_groups)
        return self.effective(lam, gamma)

    def initial_lam(self):
        """Uniform ``lam`` (in kernel order)."""
        sizes = np.diff(self.offsets)
        return 1.0 / sizes[self.group_of]

    def effective(self, lam, gamma):
        """``w_jk = lam_jk / gamma_j`` (kernel order)."""
        return lam / gamma[self.group_of]

    def project(self, x):
        """Project ``x`` (kernel order) onto the product of the group simplexes."""
        x = check_vector(x, "x", size=self.n_kernels)
        xo = np.ascontiguousarray(x[self.order])
        out = project_simplex_product(xo, self.offsets, np.empty_like(xo))
        res = np.empty_like(x)
        res[self.order] = out
        return res

    def group_sums(self, v):
        """``sum_{k in G_j} v_k`` for each group."""
        return np.bincount(self.group_of, weights=v, minlength=self.n_groups)

    def group_max(self, v):
        """``max_{k in G_j} v_k`` for each group."""
        out = np.full(self.n_groups, -np.inf)
        np.maximum.at(out, self.group_of, v)
        return out

    def contains(self, w, tol=1e-8):
        """True when ``w`` is ``lam / gamma`` for feasible ``lam`` and ``gamma``."""
        w = np.asarray(w, dtype=float)
        if np.any(w < -tol):
            return False
        s = self.group_sums(w)  # = 1 / gamma_j
        if np.any(s <= 0):
            return False
        return abs(np.sum(1.0 / s) - 1.0) <= tol * max(1, self.n_groups)

    def support(self, q):
        return float(np.sum(np.sqrt(np.maximum(self.group_max(q), 0.0))) ** 2)

    def gap(self, w, answer):
        """Duality gap of the point ``lam`` behind the effective weights ``w``.

        With ``gamma_j = 1 / sum_{G_j} w`` and ``lam = gamma w``, the best
        ``gamma`` for the answer's ``alpha`` (Nath et al. eq. 6) gives
        ``max_gamma f(lam / gamma, alpha) = 1'alpha - (sum_j sqrt(W_j))^2 / 2``
        with ``W_j = sum_{G_j} lam_jk q_k``; the gap returned is that value
        minus ``D(alpha)``, ``(h(q) - (sum_j sqrt(W_j))^2) / 2``. At the
        analytic ``gamma`` it equals ``(h(q) - w'q) / 2``; elsewhere
        ``w'q > (sum_j sqrt(W_j))^2`` and ``(h(q) - w'q) / 2`` can be
        negative, while this gap still bounds ``J(w) - D(alpha)`` from above
        and is never negative (``W_j <= max_{G_j} q``, termwise).
        """
        w = np.maximum(np.asarray(w, dtype=float), 0.0)
        q = np.asarray(answer.q, dtype=float)
        qmax = np.maximum(self.group_max(q), 0.0)
        s = self.group_sums(w)
        Wj = self.group_sums(w * np.maximum(q, 0.0)) / np.maximum(s, 1e-300)
        rm = np.sqrt(qmax)
        rw = np.sqrt(np.minimum(Wj, qmax))
        return 0.5 * float(np.sum(rm - rw) * np.sum(rm + rw))
