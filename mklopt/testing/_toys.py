"""Toy oracles of known optima: a piecewise-linear and a smooth stand-in for the SVM dual."""


import numpy as np
from scipy.optimize import linprog

from .._conic import _cvxpy, _solve_tight  # noqa: F401 (re-exported by mklopt.testing)
from .._types import OracleAnswer
from ..domains import ElasticNet, GroupSimplex, LpBall, Simplex

__all__ = ["PiecewiseLinearOracle", "SmoothQuadraticOracle", "elastic_net_metric"]


def elastic_net_metric(n_kernels, lam):
    r"""``A^{-1}`` of the conic form of the elastic-net support function.

    With ``r_k = sqrt(q_k)`` and ``A = (1 - lam) 11' + lam I``, the support
    function of :class:`~mklopt.domains.ElasticNet` is
    ``h(q) = max_{u >= 0} 2 r'u - u'Au``, whose Lagrange dual (the sign
    constraint's multiplier) is ``min_{z >= r} z'A^{-1}z``. So an exact
    optimum ``max_alpha 1'alpha - h(q(alpha)) / 2`` is the second-order cone
    program ``max 1'alpha - z'A^{-1}z / 2`` subject to
    ``||L_k'v(alpha)|| <= z_k``. ``A^{-1}`` follows from Sherman-Morrison,
    for ``0 < lam <= 1`` (``lam = 0`` is L1-MKL and is solved as such).
    """
    c = 1.0 - lam
    return (np.eye(n_kernels) - c / (lam + n_kernels * c) * np.ones((n_kernels, n_kernels))) / lam


class PiecewiseLinearOracle:
    """``J(w) = max_j (s_j - w'q_j / 2)``: non-smooth, exact optimum by an LP.

    Parameters
    ----------
    s : array-like of shape (n_pieces,)
        ``s_j = 1'alpha_j`` of each piece.
    Q : array-like of shape (n_pieces, n_kernels)
        ``q_j`` of each piece (non-negative).
    """

    def __init__(self, s, Q):
        self.s = np.asarray(s, dtype=float)
        self.Q = np.asarray(Q, dtype=float)  # (n_pieces, n_kernels)
        self.n_kernels = self.Q.shape[1]
        self.n_samples = self.Q.shape[0]
        self.n_calls = 0

    @classmethod
    def random(cls, n_kernels, n_pieces, seed=0):
        rng = np.random.default_rng(seed)
        Q = rng.uniform(0.5, 3.0, size=(n_pieces, n_kernels)) ** 2
        s = rng.uniform(5.0, 6.0, size=n_pieces)
        return cls(s, Q)

    def __call__(self, w, warm_start=None):
        self.n_calls += 1
        vals = self.s - 0.5 * self.Q @ w
        j = int(np.argmax(vals))
        alpha = np.zeros(self.n_samples)
        alpha[j] = 1.0
        q = self.Q[j].copy()
        return OracleAnswer(
            w=np.array(w, dtype=float),
            value=float(vals[j]),
            grad=-0.5 * q,
            q=q,
            alpha=alpha,
            bias=0.0,
            support=np.array([j], dtype=np.int64),
            n_solver_iter=1,
            linear_term=float(self.s[j]),
        )

    def __repr__(self):
        return f"PiecewiseLinearOracle(n_kernels={self.n_kernels}, n_pieces={len(self.s)})"

    def exact_l1_optimum(self):
        """``J* = min_{w in simplex} J(w)``, as a float (see :meth:`certified_l1_optimum`).

        Returns
        -------
        float
            The optimal value; every toy oracle returns its optimum this way.
        """
        return self.exact_l1_solution()[0]

    def exact_l1_solution(self):
        """``(J*, w*)``: the L1 optimum and a minimiser (see :meth:`certified_l1_optimum`)."""
        value, _, w = self._certified()
        return value, w

    def certified_l1_optimum(self):
        """``(J*, bound)``: the L1 optimum and a certified bound on its error.

        The LP in ``(w, t)`` is solved by HiGHS, then polished on its active
        pieces and kernels by solving the vertex's linear equations (primal
        ``w`` and dual multipliers ``mu`` over the pieces). ``J*`` is ``J(w)``
        at the polished point, and ``bound = J(w) - D(mu)`` with ``D(mu) =
        mu's - max_k (mu'Q)_k / 2``, a lower bound of every ``J`` on the
        simplex: the returned value is within ``bound`` above the optimum.
        """
        value, bound, _ = self._certified()
        return value, bound

    def _value(self, w):
        return float(np.max(self.s - 0.5 * self.Q @ w))

    def _lower(self, mu):
        return float(mu @ self.s - 0.5 * np.max(mu @ self.Q))

    def _certified(self):
        m, J = self.n_kernels, len(self.s)
        c = np.r_[np.zeros(m), 1.0]
        A_ub = np.c_[-0.5 * self.Q, -np.ones(J)]
        A_eq = np.r_[np.ones(m), 0.0][None, :]
        res = linprog(
            c, A_ub=A_ub, b_ub=-self.s, A_eq=A_eq, b_eq=[1.0],
            bounds=[(0, None)] * m + [(None, None)], method="highs",
        )
        assert res.status == 0
        w = _to_simplex(res.x[:m])
        mu = _to_simplex(-np.asarray(res.ineqlin.marginals, dtype=float))
        up, low = self._value(w), self._lower(mu)
        # Polish: the vertex's equations on the active pieces A and kernels S.
        scale = max(1.0, abs(up))
        active = np.flatnonzero(self.s - 0.5 * self.Q @ w >= up - 1e-7 * scale)
        S = np.flatnonzero(w > 1e-9)
        # primal: s_j - Q_jS w_S / 2 = t (j in A), sum w_S = 1
        A = np.zeros((len(active) + 1, len(S) + 1))
        A[:-1, :-1], A[:-1, -1], A[-1, :-1] = 0.5 * self.Q[np.ix_(active, S)], 1.0, 1.0
        x = np.linalg.lstsq(A, np.r_[self.s[active], 1.0], rcond=None)[0]
        w2 = np.zeros(m)
        w2[S] = x[:-1]
        if np.all(w2 >= 0) and self._value(_to_simplex(w2)) < up:
            w = _to_simplex(w2)
            up = self._value(w)
        # dual: (mu_A' Q_A)_k equal on S, sum mu_A = 1
        B = np.zeros((len(S) + 1, len(active) + 1))
        B[:-1, :-1], B[:-1, -1], B[-1, :-1] = self.Q[np.ix_(active, S)].T, -1.0, 1.0
        y = np.linalg.lstsq(B, np.r_[np.zeros(len(S)), 1.0], rcond=None)[0]
        mu2 = np.zeros(J)
        mu2[active] = y[:-1]
        if np.all(mu2 >= 0) and self._lower(_to_simplex(mu2)) > low:
            low = self._lower(_to_simplex(mu2))
        return up, max(0.0, up - low), w


def _to_simplex(x):
    """``x`` clipped at 0 and scaled to sum 1 (a point of the simplex)."""
    x = np.maximum(np.asarray(x, dtype=float), 0.0)
    return x / x.sum()


class SmoothQuadraticOracle:
    """``J(w) = max_a s'a - 1/2 sum_k w_k a'M_k a = s'(sum_k w_k M_k)^{-1} s / 2``.

    An unconstrained stand-in for the SVM dual: ``J`` is smooth and convex on
    the simplex, the maximiser ``a*(w)`` is exact, so ``D(a) = s'a - max_k
    a'M_k a / 2`` is an exact lower bound and the L1 optimum is the QCQP
    ``max_a s'a - t/2, a'M_k a <= t`` (``exact_l1_optimum``, by cvxpy).
    """

    def __init__(self, s, M):
        self.s = np.asarray(s, dtype=float)
        self.M = np.asarray(M, dtype=float)  # (n_kernels, r, r), positive definite
        self.n_kernels = self.M.shape[0]
        self.n_samples = self.M.shape[1]
        self.n_calls = 0

    @classmethod
    def random(cls, n_kernels, dim=5, seed=0):
        rng = np.random.default_rng(seed)
        B = rng.normal(size=(n_kernels, dim, dim))
        M = np.einsum("kij,klj->kil", B, B) + 0.1 * np.eye(dim)
        M *= rng.uniform(0.2, 2.0, size=(n_kernels, 1, 1))
        return cls(rng.normal(size=dim), M)

    def __call__(self, w, warm_start=None):
        self.n_calls += 1
        w = np.asarray(w, dtype=float)
        A = np.tensordot(w, self.M, axes=1)
        a = np.linalg.solve(A, self.s)
        q = np.einsum("i,kij,j->k", a, self.M, a)
        sa = float(self.s @ a)
        return OracleAnswer(
            w=w.copy(),
            value=sa - 0.5 * float(w @ q),
            grad=-0.5 * q,
            q=q,
            alpha=a,
            bias=0.0,
            support=np.arange(a.size, dtype=np.int64),
            n_solver_iter=1,
            linear_term=sa,
        )

    def __repr__(self):
        return f"SmoothQuadraticOracle(n_kernels={self.n_kernels}, dim={self.n_samples})"

    def exact_l1_optimum(self):
        """``J* = min_{w in simplex} J(w)``, as a float (see :meth:`certified_l1_optimum`)."""
        return self.certified_l1_optimum()[0]

    def _solve_at(self, w):
        """``(J(w), a(w), q(a(w)))`` by one linear solve."""
        a = np.linalg.solve(np.tensordot(w, self.M, axes=1), self.s)
        q = np.einsum("i,kij,j->k", a, self.M, a)
        return float(self.s @ a) - 0.5 * float(w @ q), a, q

    def certified_l1_optimum(self):
        """``(J*, bound)``: the L1 optimum and a certified bound on its error.

        Newton's method on the optimality conditions of a face of the
        simplex (``q_k(a(w))`` equal on the kernels in use, ``a(w) = (sum_k
        w_k M_k)^{-1} s``), from the uniform weights, kernels entering when
        their ``q_k`` exceeds the others' and leaving when their weight would
        turn negative, each step cut back until it makes progress (with a
        Frank-Wolfe step when Newton's makes none: proportional kernels make
        the face system singular). ``J* = J(w)`` at the final point, and ``bound =
        (max_k q_k - w'q) / 2 = J(w) - D(a(w))`` is its certified distance
        above the optimum: about 1e-15 relative on drawn toys. Should Newton
        stall above 1e-12 relative, it restarts from the kernel weights of
        the conic program (cvxpy and Clarabel, a test extra), whose own
        answer is good to 1e-9..1e-6.
        """
        value, gap, _ = self._polish_l1(np.full(self.n_kernels, 1.0 / self.n_kernels))
        if gap <= 1e-12 * max(1.0, abs(value)):
            return value, gap
        cp = _cvxpy()
        a = cp.Variable(self.n_samples)
        t = cp.Variable()
        cons = [cp.quad_form(a, cp.psd_wrap(Mk)) <= t for Mk in self.M]
        prob = cp.Problem(cp.Maximize(self.s @ a - t / 2), cons)
        _solve_tight(prob)
        # the cone constraints' multipliers are w / 2
        lam = np.array([float(np.asarray(c.dual_value).ravel()[0]) for c in cons])
        if np.isfinite(lam).all() and lam.max() > 0:
            v2, g2, _ = self._polish_l1(_to_simplex(lam))
            if g2 < gap:
                value, gap = v2, g2
        return value, gap

    def _polish_l1(self, w, max_iter=100):
        """Minimise ``J`` over the simplex from ``w``: ``(J, gap, w)`` at the best point.

        Each iteration takes Newton's step on the current face (cut at the
        boundary of the simplex, then halved until it makes progress), or
        when that makes none, a Frank-Wolfe step towards the vertex of the
        largest ``q_k`` (a descent direction whenever the gap is positive),
        halved likewise. Progress is a lower ``J``, or the same ``J`` to
        rounding and a lower gap, so the iterates cannot cycle between
        faces, and Newton gives the fast local convergence. Kernels that are
        multiples of one another make the face system singular; the
        least-squares Newton step is still a direction of the face's
        quadratic model.
        """
        m = self.n_kernels
        value, a, q = self._solve_at(w)
        gap = max(0.0, 0.5 * (float(q.max()) - float(w @ q)))
        best = (value, gap, w.copy())
        for _ in range(max_iter):
            if gap <= 1e-15 * max(1.0, abs(value)):
                break
            # J is flat at the optimum (its excess is the square of the gap's
            # order), so near it a step that leaves J unchanged to rounding
            # but lowers the gap is progress too.
            slack = 4.0 * np.finfo(float).eps * max(1.0, abs(value))
            step = None
            d = self._newton_direction(w, a, q)
            candidates = []
            if d is not None:
                # Cut at the first weight that reaches 0 (which then leaves the face).
                neg = np.flatnonzero(d < 0.0)
                ratios = -w[neg] / d[neg]
                if ratios.size and ratios.min() < 1.0:
                    candidates.append((d, float(ratios.min()), int(neg[np.argmin(ratios)])))
                else:
                    candidates.append((d, 1.0, -1))
            candidates.append((np.eye(m)[int(np.argmax(q))] - w, 1.0, -1))  # Frank-Wolfe
            for d, t, block in candidates:  # Newton first; Frank-Wolfe when it gives nothing
                cut = t
                while t > 1e-12 and step is None:
                    w2 = w + t * d
                    if t == cut and block >= 0:
                        w2[block] = 0.0
                    w2 = _to_simplex(w2)
                    v2, a2, q2 = self._solve_at(w2)
                    g2 = max(0.0, 0.5 * (float(q2.max()) - float(w2 @ q2)))
                    if v2 < value - slack or (v2 <= value + slack and g2 < gap):
                        step = (v2, a2, q2, w2, g2)
                    t *= 0.5
                if step is not None:
                    break
            if step is None:
                break  # no progress to rounding: the best point is final
            value, a, q, w, gap = step
            if gap < best[1]:
                best = (value, gap, w.copy())
        return best

    def _newton_direction(self, w, a, q):
        """Newton's direction on the face of ``w`` (plus the kernel of the largest ``q_k``).

        Solves ``F(w_S, tau) = (q_S - tau, sum w_S - 1) = 0`` to first
        order, with ``dq_k/dw_j = -2 (M_k a)' A^{-1} (M_j a)``; None when
        the system has no finite solution.
        """
        m = self.n_kernels
        # A weight left at rounding level (1e-16, say, after a cut) is not on
        # the face: kept there, Newton would pull its q_k up to the others'
        # and the cut at its zero would leave no step at all (found by
        # hypothesis: two identical kernels, one at 2e-16, stalled at 5e-7).
        S = np.flatnonzero(w > 1e-12 * w.max())
        top = int(np.argmax(q))
        if top not in S:  # a kernel with a larger q_k enters the face
            S = np.union1d(S, [top])
        A = np.tensordot(w, self.M, axes=1)
        G = np.einsum("kij,j->ik", self.M[S], a)
        H = -2.0 * G.T @ np.linalg.solve(A, G)
        n = len(S)
        K = np.zeros((n + 1, n + 1))
        K[:n, :n], K[:n, n], K[n, :n] = H, -1.0, 1.0
        tau = float(w[S] @ q[S])
        rhs = -np.r_[q[S] - tau, w[S].sum() - 1.0]
        try:
            step = np.linalg.solve(K, rhs)[:n]
        except np.linalg.LinAlgError:
            step = np.linalg.lstsq(K, rhs, rcond=None)[0][:n]
        if not np.all(np.isfinite(step)):
            return None
        d = np.zeros(m)
        d[S] = step
        return d

    def exact_optimum(self, domain):
        """``J* = max_a s'a - h(q(a)) / 2`` for the formulation of ``domain`` (cvxpy, Clarabel)."""
        cp = _cvxpy()
        L = [np.linalg.cholesky(Mk) for Mk in self.M]
        a = cp.Variable(self.n_samples)
        if isinstance(domain, Simplex) or (isinstance(domain, ElasticNet) and domain.lam == 0.0):
            return self.exact_l1_optimum()
        if isinstance(domain, ElasticNet):
            z = cp.Variable(self.n_kernels)
            cons = [cp.norm(Lk.T @ a) <= z[k] for k, Lk in enumerate(L)]
            obj = self.s @ a - cp.quad_form(z, elastic_net_metric(self.n_kernels, domain.lam)) / 2
        elif isinstance(domain, LpBall):
            t = cp.Variable(self.n_kernels)
            cons = [cp.sum_squares(Lk.T @ a) <= t[k] for k, Lk in enumerate(L)]
            obj = self.s @ a - cp.norm(t, domain.p_star) / 2
        elif isinstance(domain, GroupSimplex):
            u = cp.Variable(domain.n_groups)
            cons = [cp.norm(Lk.T @ a) <= u[domain.group_of[k]] for k, Lk in enumerate(L)]
            obj = self.s @ a - cp.square(cp.sum(u)) / 2
        else:  # pragma: no cover
            raise TypeError(domain)
        prob = cp.Problem(cp.Maximize(obj), cons)
        return _solve_tight(prob)


