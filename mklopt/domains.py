"""Feasible sets of the MKL formulations and their dual values.

Each MKL formulation minimises ``J(w) = max_{alpha in Q} f(w, alpha)`` over a
set W of kernel weights and owns a dual value ``D(alpha) <= J*`` (see the
formulations page of the documentation). This module is the one place where
W, its Euclidean projection, ``D`` and the duality gap ``J(w) - D(alpha)``
are computed; the outer methods, the driver and the
:class:`~mklopt.stopping.DualityGap` criterion all go through it.

Writing ``h(q) = max_{w in W} w'q`` for the "support function" part of the
dual value, ``D(alpha) = 1'alpha - h(q(alpha)) / 2`` with

==================================  ==========================================
formulation                         ``h(q)``
==================================  ==========================================
L1 (:class:`Simplex`)               ``max_k q_k``
Lp (:class:`LpBall`)                ``||q||_{p*}``, ``p* = p / (p - 1)``
Lp, ``p = inf``                     ``sum_k q_k``
elastic net (:class:`ElasticNet`)   between ``max_k q_k`` and ``sum_k q_k``
groups (:class:`GroupSimplex`)      ``(sum_j sqrt(max_{k in G_j} q_k))^2``
==================================  ==========================================

and since ``J(w) = 1'alpha - w'q / 2`` at the oracle's ``alpha``, the gap is
``(h(q) - w'q) / 2``, which is non-negative for every feasible ``w`` (by
Hoelder's inequality for Lp). For groups it is non-negative only when
``gamma`` is the analytic step of the answer's ``alpha``
(:meth:`GroupSimplex.gap` uses that ``gamma``).
"""

from __future__ import annotations

import numbers

import numpy as np

from ._jit.projections import project_simplex, project_simplex_product
from ._validation import check_int, check_real, check_vector

__all__ = ["Domain", "Simplex", "LpBall", "ElasticNet", "GroupSimplex", "as_groups",
           "retract_onto"]


class Domain:
    """Base class of the feasible sets. Subclasses define ``h`` and ``project``."""

    n_kernels: int

    def __repr__(self):
        # What error messages and the conformance kit print for the set.
        return f"{type(self).__name__}(n_kernels={getattr(self, 'n_kernels', '?')})"

    def initial(self):
        """The uniform feasible starting point of the papers."""
        raise NotImplementedError

    def project(self, x):
        """Euclidean projection of ``x`` onto the set."""
        raise NotImplementedError

    def retract(self, x):
        """A point of the set to query in place of the weights ``x``.

        What a run started from given weights (``solve(..., initial=x)``)
        or a predicted step (a C path's guide) queries first. The Euclidean
        projection (the default) for the sets that are convex in the
        weights the oracle sees; a set that is not (:class:`GroupSimplex`)
        maps ``x`` its own way. Either way a point of the set is left where
        it is.
        """
        return self.project(x)

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


def retract_onto(domain, x):
    """``domain.retract(x)``, or its projection for a set that has no ``retract``.

    The one way the driver and the C path put given or predicted weights on
    a method's set (a set written before :meth:`Domain.retract` existed, or
    not derived from :class:`Domain`, has only ``project``).
    """
    retract = getattr(domain, "retract", None)
    return np.asarray(domain.project(x) if retract is None else retract(x), dtype=np.float64)


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
        return float(np.asarray(q).max())

    def gap(self, w, answer):
        # sum_k w_k (max q - q_k) is a sum of non-negative terms, so rounding
        # cannot make the gap negative (w'q <= max q only up to rounding).
        q = np.asarray(answer.q)
        w = np.asarray(w)
        return 0.5 * float(w @ (q.max() - q)) / max(float(w.sum()), 1e-300)


class LpBall(Domain):
    """The non-negative part of the unit Lp ball ``{theta >= 0, ||theta||_p <= 1}``.

    Parameters
    ----------
    n_kernels : int
        Dimension ``m``.
    p : float
        Norm, ``1 < p <= inf``. ``p = numpy.inf`` is the box ``[0, 1]^m``.

    Notes
    -----
    ``h(q) = max {theta'q : ||theta||_p <= 1} = ||q||_{p*}`` (Kloft et al.'s
    generalised dual with ``||.||_* = ||.||_{p*}``, ``1/p + 1/p* = 1``).

    For ``p = inf``, ``p* = 1`` and ``h(q) = sum_k q_k``. Since every
    ``q_k >= 0``, ``J`` does not increase when a weight grows, so its minimum
    over the box is at ``theta = 1``: the SVM on the unweighted sum kernel
    ``sum_k K_k``, the non-sparse reference point of Kloft et al.'s
    comparison. The gap there is ``(sum_k q_k - 1'q) / 2 = 0`` for any
    ``alpha``.
    """

    def __init__(self, n_kernels, p):
        self.n_kernels = check_int(n_kernels, "n_kernels", low=1)
        self.p = check_norm(p, "p")
        self.p_star = 1.0 if self.p == np.inf else self.p / (self.p - 1.0)

    def __repr__(self):
        return f"LpBall(n_kernels={self.n_kernels}, p={self.p:g})"

    def initial(self):
        # m^(-1/p) is the uniform point of the unit sphere; it is 1 for p = inf.
        return np.full(self.n_kernels, self.n_kernels ** (-1.0 / self.p))

    def project(self, x):
        """Euclidean projection of ``x`` onto ``{theta >= 0, ||theta||_p <= 1}``.

        Negative coordinates go to zero: the ball is symmetric under sign
        changes, so the projection of ``x`` is that of ``max(x, 0)``. A
        non-negative point outside the ball moves to the sphere along the
        KKT conditions ``theta_k + mu p theta_k^(p-1) = x_k``, with the
        multiplier ``mu > 0`` found by a one-dimensional root search (closed
        forms for ``p = 2``, a radial rescaling, and ``p = inf``, a clip).
        """
        x = np.maximum(check_vector(x, "x", size=self.n_kernels), 0.0)
        p = self.p
        if p == np.inf:
            return np.minimum(x, 1.0)
        top = float(x.max())
        if top == 0.0:
            return x
        nrm = np.linalg.norm(x / top, p) * top  # scaled: x^p may overflow
        if nrm <= 1.0:
            return x
        if p == 2.0:
            return x / nrm
        pos = x > 0.0
        lx = np.log(x[pos])

        def theta(mu):
            # theta_k + mu p theta_k^(p-1) = x_k, in z = log theta_k: the left
            # side e^z + mu p e^((p-1) z) is convex and increasing in z for
            # every p > 1, so Newton's method from a point where it is >= x_k
            # descends monotonically to the root. The start is the smaller of
            # the roots of its two terms alone (either term is then <= x_k,
            # the other >= 0), which is close to the root when one dominates.
            out = np.zeros_like(x)
            z0 = np.minimum(lx, (lx - np.log(mu * p)) / (p - 1.0))
            z = _increasing_root(
                lambda z: np.exp(z) + mu * p * np.exp((p - 1.0) * z) - np.exp(lx),
                lambda z: np.exp(z) + mu * p * (p - 1.0) * np.exp((p - 1.0) * z),
                z0,
            )
            out[pos] = np.exp(z)
            return out

        # every theta_k <= 1 on the sphere, so the powers stay in range
        mu = _decreasing_root(lambda mu: float(np.sum(theta(mu) ** p)) - 1.0)
        t = theta(mu)
        # A last radial step makes the point feasible to rounding (it moves
        # it by the root search's error only).
        return t / max(np.linalg.norm(t, p), 1.0)

    def contains(self, w, tol=1e-8):
        w = np.asarray(w, dtype=float)
        return bool(np.all(w >= -tol) and np.linalg.norm(w, self.p) <= 1.0 + tol)

    def support(self, q):
        return float(np.linalg.norm(np.maximum(q, 0.0), self.p_star))


class ElasticNet(Domain):
    r"""Kernel weights of elastic-net MKL: L1-MKL at ``lam = 0``, the sum kernel at ``lam = 1``.

    The feasible set is

    .. math:: W_\lambda = \{ w \ge 0 :
              \textstyle\sum_k \beta_k(w) \le 1 \}, \qquad
              \beta_k(w) = \frac{(1-\lambda) w_k}{1 - \lambda w_k},

    equivalently ``w_k = beta_k / (1 - lam + lam beta_k)`` with ``beta`` in
    ``{beta >= 0, sum(beta) <= 1}`` (the kernel weights of Shogun's
    elastic-net MKL, whose ``beta`` lies in the simplex). It is convex
    (each ``beta_k`` is a convex increasing function of ``w_k``), and every
    ``w_k <= 1``.

    Parameters
    ----------
    n_kernels : int
        Dimension ``m``.
    lam : float
        Mixing parameter in ``[0, 1]``.

    Notes
    -----
    **Primal.** Minimising ``J`` over ``W_lam`` is the SVM with the
    block-norm regulariser (``u_k = ||f_k||``)

    .. math:: \tfrac12 \big[(1-\lambda) (\textstyle\sum_k u_k)^2
              + \lambda \textstyle\sum_k u_k^2\big]
              = \min_{w \in W_\lambda} \tfrac12 \textstyle\sum_k u_k^2 / w_k,

    a mixture of L1-MKL's squared block-L1 norm and the plain squared L2
    norm of an SVM on the sum kernel (Tomioka and Suzuki 2010 mix the same
    two norms unsquared; with the squares the problem keeps the form
    ``min_{w in W} J(w)`` of the other formulations). The identity follows
    from ``1/w_k = lam + (1 - lam)/beta_k`` and
    ``min_{beta in simplex} sum_k u_k^2/beta_k = (sum_k u_k)^2`` at
    ``beta_k ∝ u_k``.

    ``lam = 0``: ``W`` is ``{w >= 0, sum(w) <= 1}`` and ``J``, which does not
    increase when a weight grows, has its minimum on the simplex face:
    L1-MKL. ``lam = 1``: ``W`` is the box ``[0, 1]^m`` (the Lp ball with
    ``p = inf``) and the optimum is ``w = 1``, the sum kernel.

    **Dual value.** ``h(q) = max_{w in W} w'q`` has a closed form. With
    ``r = sqrt(q)`` sorted in decreasing order, ``S_k`` the sum of its first
    ``k`` entries and ``c = 1 - lam``, let ``k`` be the largest index with
    ``r_k (lam + k c) > c S_k`` (the kernels the maximiser uses); then

    .. math:: h(q) = \frac{1}{\lambda} \sum_{j \le k} \big(r_j - S_k/k\big)^2
              + \frac{S_k^2}{k (\lambda + k c)},

    which is ``sum_k q_k`` at ``lam = 1`` and tends to ``max_k q_k`` as
    ``lam -> 0`` (``h = max_k q_k`` is used at ``lam = 0``). It comes from the
    KKT conditions of ``max_beta sum_k q_k beta_k / (c + lam beta_k)``:
    ``c + lam beta_k = t r_k`` on the support, ``t = (lam + k c) / S_k``.
    ``D(alpha) = 1'alpha - h(q) / 2`` and the gap is ``(h(q) - w'q) / 2 >= 0``.
    """

    def __init__(self, n_kernels, lam):
        self.n_kernels = check_int(n_kernels, "n_kernels", low=1)
        self.lam = check_real(lam, "lam", low=0.0, high=1.0)

    # ---- the change of variables w <-> beta ------------------------------------
    def beta(self, w):
        """``beta_k = (1 - lam) w_k / (1 - lam w_k)`` (``inf`` where ``w_k >= 1/lam``)."""
        w = np.maximum(np.asarray(w, dtype=float), 0.0)
        c = 1.0 - self.lam
        # 1 - lam w as (1 - w) + c w: both terms exact or accurate near
        # lam = 1 and w = 1, where the plain difference cancels to nothing.
        den = (1.0 - w) + c * w
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0.0, c * w / den, np.inf)

    def weights(self, beta):
        """``w_k = beta_k / (1 - lam + lam beta_k)``, the inverse of :meth:`beta`."""
        beta = np.maximum(np.asarray(beta, dtype=float), 0.0)
        den = 1.0 - self.lam + self.lam * beta
        with np.errstate(divide="ignore", invalid="ignore"):
            # lam = 1: w = 1 wherever beta > 0 (and 0/0 -> 1 at beta = 0 too:
            # at lam = 1 every weight may be 1).
            return np.where(den > 0.0, beta / den, 1.0)

    def __repr__(self):
        return f"ElasticNet(n_kernels={self.n_kernels}, lam={self.lam:g})"

    def initial(self):
        # beta uniform on the simplex: w = 1 / (m (1 - lam) + lam)
        return np.full(self.n_kernels, 1.0 / (self.n_kernels * (1.0 - self.lam) + self.lam))

    def contains(self, w, tol=1e-8):
        w = np.asarray(w, dtype=float)
        if not np.all(w >= -tol) or not np.all(w <= 1.0 + tol):
            return False
        if self.lam == 1.0:
            return True
        # Within a few roundings of W: near lam = 1 the set is the box up to
        # 1 - w of order (1 - lam), and one rounding of a weight near 1 moves
        # beta_k by O(1) (lam one ulp below 1 maps beta = 1/2 to w = 1.0).
        w = np.minimum(w, 1.0) * (1.0 - 4.0 * np.finfo(float).eps)
        return bool(np.sum(self.beta(w)) <= 1.0 + tol * max(1, len(w)))

    def support(self, q):
        q = np.maximum(np.asarray(q, dtype=float), 0.0)
        lam = self.lam
        if lam == 0.0:
            return float(np.max(q))
        c = 1.0 - lam
        r = np.sort(np.sqrt(q))[::-1]
        S = np.cumsum(r)
        k_idx = np.arange(1, r.size + 1)
        active = r * (lam + k_idx * c) > c * S
        if not np.any(active):
            return 0.0  # q = 0
        k = int(np.flatnonzero(active)[-1]) + 1
        Sk = S[k - 1]
        V = float(np.sum((r[:k] - Sk / k) ** 2))
        return V / lam + Sk * Sk / (k * (lam + k * c))

    def project(self, x):
        """Euclidean projection of ``x`` onto ``W_lam``.

        ``lam = 1`` clips to the box ``[0, 1]``; ``lam = 0`` projects onto
        ``{w >= 0, sum(w) <= 1}``. Otherwise, for a point outside, the KKT
        conditions give ``w_k + mu (1 - lam) / (1 - lam w_k)^2 = x_k`` (or
        ``w_k = 0`` when ``x_k <= mu (1 - lam)``), each solved by Newton's
        method (the left side is convex and increasing), with the multiplier
        ``mu > 0`` of ``sum_k beta_k(w) = 1`` found by a one-dimensional root
        search.
        """
        x = np.maximum(check_vector(x, "x", size=self.n_kernels), 0.0)
        lam = self.lam
        if lam == 1.0:
            return np.minimum(x, 1.0)
        if lam == 0.0:
            if x.sum() <= 1.0:
                return x
            return project_simplex(np.ascontiguousarray(x), 1.0, np.empty_like(x))
        if np.sum(self.beta(x)) <= 1.0:
            return x
        c = 1.0 - lam

        def w_of(mu):
            out = np.zeros_like(x)
            pos = x > mu * c
            xp = x[pos]
            # F(w) = w + mu c / (1 - lam w)^2 - x is convex and increasing on
            # [0, 1/lam); at w_hi it is >= 0 (mu c / (1 - lam w_hi)^2 = x / lam^2).
            hi = np.minimum(xp, (1.0 - lam * np.sqrt(mu * c / xp)) / lam)
            out[pos] = _increasing_root(
                lambda w: w + mu * c / (1.0 - lam * w) ** 2 - xp,
                lambda w: 1.0 + 2.0 * lam * mu * c / (1.0 - lam * w) ** 3,
                hi,
            )
            return out

        mu = _decreasing_root(lambda mu: float(np.sum(self.beta(w_of(mu)))) - 1.0)
        w = w_of(mu)
        return self._feasible(w)

    def _feasible(self, w):
        """``w`` moved into ``W`` when rounding left it just outside.

        Near ``lam = 1`` a weight close to 1 sits where ``beta_k`` jumps by
        O(1) per rounding step of ``w_k`` (``lam`` one ulp below 1 maps
        ``w = 1`` to ``beta = 1`` and the float below it to ``1/2``), so the
        root of the multiplier equation can leave ``sum(beta)`` well above 1.
        Lowering the weight with the largest ``beta`` a few ulps at a time
        mends that without touching the other weights; rescaling every
        ``beta`` instead would shrink the small weights by the same factor.
        The rescaling remains the fallback.
        """
        w = w.copy()
        for _ in range(64):
            b = self.beta(w)
            if float(np.sum(b)) <= 1.0:
                return w
            k = int(np.argmax(b))
            w[k] = np.nextafter(w[k], 0.0) * (1.0 - 2.0 * np.finfo(float).eps)
        b = self.beta(w)
        return self.weights(b / float(np.sum(b)))

    def analytic_step(self, w, q):
        """The best ``w in W`` for the primal blocks of an SVM answer at ``w``.

        In the primal, kernel ``k`` carries ``f_k = w_k sum_i alpha_i y_i
        phi_k(x_i)``, so ``u_k = ||f_k|| = w_k sqrt(q_k)``. The minimiser of
        ``sum_k u_k^2 / w_k`` over ``W_lam`` (see the class notes) has
        ``beta_k = u_k / sum_j u_j``, so the step is
        ``w_k <- beta_k / (1 - lam + lam beta_k)``. Returns ``None`` when every
        ``u_k`` is 0.
        """
        u = np.maximum(np.asarray(w, dtype=float), 0.0) * np.sqrt(
            np.maximum(np.asarray(q, dtype=float), 0.0))
        total = float(np.sum(u))
        if not total > 0.0:
            return None
        return self.weights(u / total)


def _increasing_root(F, dF, hi, max_iter=100):
    """Roots of convex increasing functions ``F`` (elementwise), from ``F(hi) >= 0``.

    Newton's method from the right of a root of a convex increasing function
    descends monotonically to it (every tangent lies below ``F``), so no
    bracketing is needed; a step that would go up (rounding) ends the search.
    """
    t = hi.copy()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for _ in range(max_iter):
            t_new = np.minimum(t - F(t) / dF(t), t)
            t_new = np.where(np.isfinite(t_new), t_new, t)
            moved = t - t_new
            t = t_new
            if np.all(moved <= 1e-15 * np.maximum(np.abs(t), 1.0)):
                break
    return t


def _decreasing_root(G):
    """The root ``mu > 0`` of a decreasing ``G`` with ``G(0+) > 0``.

    The bracket is found by doubling or halving from 1 (``G`` is only
    evaluated at ``mu > 0``, where the projections' ``G`` are finite).
    """
    a = b = 1.0
    if G(b) > 0.0:
        while G(b) > 0.0:
            a, b = b, 2.0 * b
            if b > 1e300:  # pragma: no cover - G tends to a negative limit
                raise FloatingPointError("no root of the projection's multiplier equation")
    else:
        a = 0.5
        while not G(a) > 0.0:
            a, b = 0.5 * a, a
            if a < 1e-300:
                return a
    from scipy.optimize import brentq  # here: scipy.optimize is slow to import

    return brentq(G, a, b, xtol=1e-15 * b, rtol=4 * np.finfo(float).eps, maxiter=500)


def check_norm(p, name="p"):
    """Return the norm ``p`` as a float after checking ``1 < p <= inf``.

    ``numpy.inf`` (or ``float("inf")``) is accepted; other values must be
    finite reals greater than 1.
    """
    if isinstance(p, numbers.Real) and not isinstance(p, bool) and p == np.inf:
        return np.inf
    return check_real(p, name, low=1.0, strict_low=True)


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


#: The smallest ``gamma_j`` relative to the largest that
#: :meth:`GroupSimplex.retract` gives: its effective weights stay below
#: ``n_groups * 1e300``, finite.
_GAMMA_RATIO_MIN = 1e-300


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

    def __repr__(self):
        return f"GroupSimplex(n_kernels={self.n_kernels}, n_groups={self.n_groups})"

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

    def retract(self, x):
        """Effective weights for ``x``: its shares within each group, its groups' sizes.

        The set of effective weights is not convex (the mean of two of its
        points is in general outside it), and :meth:`project` works on
        ``lam``. With ``s_j = sum_{G_j} max(x, 0)``, the point returned has
        ``lam_j = x_{G_j} / s_j`` and ``gamma_j`` proportional to ``1 / s_j``
        (as the mirror method reads a handed-over point), so a point of the
        set is returned unchanged (unless its ``gamma_j`` are more than
        ``1e300`` apart, where ``gamma`` is floored so that the weights stay
        finite). A group without positive weight gets uniform ``lam_j`` and
        the mean ``1 / s`` of the others; without any, the uniform start.
        """
        x = np.maximum(check_vector(x, "x", size=self.n_kernels), 0.0)
        s = self.group_sums(x)
        live = s > 0.0
        if not live.any():
            return self.initial()
        # gamma_j proportional to 1 / s_j, scaled by the smallest s_j so that
        # tiny sums cannot overflow the reciprocals; and no gamma_j below
        # _GAMMA_RATIO_MIN times the largest, so that the effective weights
        # lam / gamma stay finite when the sums are more than ~1e308 apart
        # (3 against the smallest normal number; a point of the set is that
        # far from uniform only in name)
        t = np.zeros(self.n_groups)
        t[live] = np.maximum(s[live].min() / s[live], _GAMMA_RATIO_MIN)
        t[~live] = t[live].mean()
        gamma = t / t.sum()
        sizes = np.diff(self.offsets)
        lam = np.where(live[self.group_of], x / np.where(live, s, 1.0)[self.group_of],
                       1.0 / sizes[self.group_of])
        return lam / gamma[self.group_of]

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
