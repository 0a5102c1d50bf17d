"""The cutting-plane model shared by SILP and the level method.

Every oracle answer ``(alpha_j, q_j)`` gives a *cut*, the affine function of
the kernel weights

    f(w, alpha_j) = s_j - 1/2 w'q_j,        s_j = 1'alpha_j,

which minorises ``J(w) = max_{alpha in Q} f(w, alpha)`` everywhere (``alpha_j``
is feasible whatever ``w``). Their maximum is the model

    g_i(w) = max_{j <= i} f(w, alpha_j)        (Xu et al. 2008, eq. 5).

Two sub-problems over the simplex P are solved on it:

* the LP ``min_{w in P} g_i(w)`` (SILP's next point, Xu et al. eq. 2, and the
  level method's lower bound, eq. 6), with scipy's HiGHS, or with ECOS when
  the caller accepts an answer within a stated precision of the minimum;
* the projection QP ``min ||w - w_i||^2 s.t. w in P, f(w, alpha_j) <= l``
  (eq. 8), as a second-order cone program solved with ECOS.

The cuts live in preallocated arrays that double when full, so adding a cut
is O(m) and the sub-problems read contiguous slices.

References
----------
Z. Xu, R. Jin, I. King and M. R. Lyu, "An Extended Level Method for
Efficient Multiple Kernel Learning", NIPS 2008 (``papers/``).
"""

from __future__ import annotations

import ctypes
import logging
import math
import signal
import threading
from typing import NamedTuple

import numpy as np

try:  # ECOS's C extension, which ecos.solve calls after checking scipy.sparse inputs
    import _ecos
except ImportError:  # pragma: no cover - depends on the ecos build
    _ecos = None

from .. import _interrupt
from .._jit.cuts import (
    INTERIOR_ZERO,
    kkt_grow,
    level_socp,
    model_value,
    price_kernels,
    renormalise,
    scatter_normalised,
)
from .._jit.projections import project_simplex
from . import _highs

__all__ = ["CutModel"]

log = logging.getLogger("mklopt")

# ECOS exit flags that carry a usable solution: 0 optimal, 10 optimal to
# reduced accuracy ("inaccurate").
_ECOS_OK = (0, 10)
# ECOS's exit flag when its own SIGINT handler caught Ctrl-C (ECOS_SIGINT in ecos.h).
_ECOS_SIGINT = -4
# The exit flags of ECOS's early returns (slacks leaving the cone, a fatal
# error in its initialisation or a factorisation), which skip putting back
# the SIGINT handler ECOS replaced.
_ECOS_EARLY_EXITS = (-3, -7)


def _ecos_check_ctrlc():
    """ECOS's ``check_ctrlc`` from its C extension, or None where it is not exported.

    ECOS (built with its Ctrl-C support, as the wheels are) installs a
    SIGINT handler of its own at the start of each solve and reports a
    signal only through its exit flag, and only when the solve has not
    converged by then: a Ctrl-C that lands in a solve that still converges
    is recorded in ECOS's flag and nowhere else. ``check_ctrlc()`` reads
    that flag (it stays set until the next solve starts).
    """
    if _ecos is None:
        return None
    try:
        func = ctypes.CDLL(_ecos.__file__).check_ctrlc
    except (OSError, AttributeError, TypeError):  # pragma: no cover - other builds
        return None
    func.restype = ctypes.c_int
    func.argtypes = []
    return func


_CHECK_CTRLC = _ecos_check_ctrlc()


_ECOS_OPTS = dict(feastol=1e-8, abstol=1e-8, reltol=1e-8, max_iters=100, verbose=False)
# The LP's answer sets Level's next level, so its rounding travels into the
# iterates: at 1e-8 a sharded run (q summed in another order) drifted 1e-10
# from the serial one under some BLAS kernels; at 1e-10 it stays near 2e-11.
_ECOS_LP_OPTS = dict(feastol=1e-10, abstol=1e-10, reltol=1e-10, max_iters=100, verbose=False)
_ECOS_RETRY = dict(feastol=1e-6, abstol=1e-6, reltol=1e-6, max_iters=200, verbose=False)


class Csc(NamedTuple):
    """A matrix in compressed sparse column form, as ECOS's C extension takes it."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple

    def to_scipy(self):
        """The same matrix as a ``scipy.sparse.csc_matrix``."""
        import scipy.sparse as sp  # here: its import is slow, and predicting needs none of it

        return sp.csc_matrix((self.data, self.indices, self.indptr), shape=self.shape)


def solve_ecos(data, attempts, what):
    """ECOS on ``data = (c, G, h, dims, A, b)``, trying the option sets ``attempts`` in turn.

    ``G`` and ``A`` are scipy.sparse matrices or :class:`Csc` arrays (then
    passed to ECOS's C extension directly). Returns ECOS's output of the
    first attempt that ends optimal (or optimal to reduced accuracy) with a
    finite ``x``, or None when none does; ECOS errors on bad data count as
    failed attempts. ``what`` names the problem in the debug log.
    """
    c, G, h, dims, A, b = data
    direct = isinstance(G, Csc) and _ecos is not None
    if isinstance(G, Csc) and not direct:  # no C extension to call: scipy.sparse it is
        G, A = G.to_scipy(), A.to_scipy()
    if not direct:
        import ecos  # here: it imports scipy.sparse, which predicting does not need
    for opts in attempts:
        try:
            if direct:
                # What ecos.solve does after its checks of scipy.sparse inputs,
                # on arrays built in CSC form (no scipy.sparse constructor).
                out = _ecos.csolve((G.shape[0], G.shape[1], A.shape[0]), c, G.data, G.indices,
                                   G.indptr, h, dims, A.data, A.indices, A.indptr, b, **opts)
            else:
                out = ecos.solve(c, G, h, dims, A, b, **opts)
        except Exception as exc:
            _restore_sigint()
            if not isinstance(exc, (ValueError, ArithmeticError)):  # ECOS raises on bad data
                raise
            log.debug("ECOS raised %s on %s", exc, what)
            continue
        flag = out["info"]["exitFlag"]
        if flag in _ECOS_EARLY_EXITS:
            _restore_sigint()
        if flag == _ECOS_SIGINT or (_CHECK_CTRLC is not None and _CHECK_CTRLC()):
            _pass_on_sigint()
            return None
        if flag in _ECOS_OK and (math.isfinite(out["x"].sum()) or np.isfinite(out["x"]).all()):
            return out
        log.debug("ECOS exit flag %s on %s", flag, what)
    return None


def _restore_sigint():
    """Put the program's SIGINT handler back after an ECOS solve (main thread).

    ECOS restores the handler it replaced only when its solve gets to its
    end; the solves that stop early (a fatal error in a factorisation,
    slacks leaving the cone: :data:`_ECOS_EARLY_EXITS`) or raise leave
    ECOS's own handler in place, and every later Ctrl-C would then reach
    ECOS's flag only. Setting Python's handler again (the same one) puts
    it back.
    """
    if threading.current_thread() is threading.main_thread():
        handler = signal.getsignal(signal.SIGINT)
        if handler is not None:
            signal.signal(signal.SIGINT, handler)


def _pass_on_sigint():
    """Deliver again a Ctrl-C that ECOS caught, then stop if it stopped the run.

    ECOS's handler keeps the signal to itself (see :func:`_ecos_check_ctrlc`),
    so a Ctrl-C that lands in a solve would be lost, and another attempt
    would start afresh. Raising the signal again, with the program's
    handler back, reaches whatever handler the program has: outside a run,
    Python's own raises ``KeyboardInterrupt`` here; in a
    :class:`~mklopt._interrupt.Run` the run's handler sets the stop flag,
    and :func:`~mklopt._interrupt.check` raises
    :class:`~mklopt._interrupt.Stopped`, which :func:`mklopt.solve` turns
    into a result with reason ``"interrupted"``. A handler that ignores the
    signal leaves the solve to fail as any other failed attempt.
    """
    signal.raise_signal(signal.SIGINT)
    _interrupt.check()


class CutModel:
    """Cutting-plane model ``g(w) = max_j s_j - w'q_j / 2`` over the simplex.

    Parameters
    ----------
    n_kernels : int
        Dimension ``m`` of ``w``.
    capacity : int, default=32
        Initial number of cut slots; the arrays double when full.

    Attributes
    ----------
    n_cuts : int
        Number of cuts added.
    s : ndarray of shape (n_cuts,)
        ``s_j = 1'alpha_j`` (a view).
    Q : ndarray of shape (n_cuts, n_kernels)
        ``q_j`` row by row (a view).
    """

    def __init__(self, n_kernels, capacity=32):
        self.n_kernels = int(n_kernels)
        self.n_cuts = 0
        self._W = np.zeros(0, dtype=np.int64)  # kernel working set of the sub-problems
        self._s = np.empty(max(int(capacity), 1))
        self._Q = np.empty((max(int(capacity), 1), self.n_kernels))
        # Per cut, its steepest kernel (seeds the LP's working set); per
        # kernel, max_j |q_jk| (the scale of the LP answer's check).
        self._top = np.empty(max(int(capacity), 1), dtype=np.int64)
        self._qmax = np.zeros(self.n_kernels)
        self._smax = 0.0
        self._rows_of_s = {}  # s_j -> the cuts with that s (finds repeated answers)
        # The LP kept in one HiGHS model across steps (rows added per cut).
        self._lp = _highs.CutLP(self.n_kernels)

    # ---- storage ---------------------------------------------------------------
    @property
    def s(self):
        return self._s[: self.n_cuts]

    @property
    def Q(self):
        return self._Q[: self.n_cuts]

    def add(self, s, q):
        """Append the cut ``f(w) = s - w'q / 2``; return False if it is already there.

        An answer that repeats an earlier one (the same ``alpha``) adds
        nothing to the model; skipping it keeps the sub-problems small.
        """
        q = np.asarray(q, dtype=np.float64)
        s = float(s)
        if q.shape != (self.n_kernels,):
            raise ValueError(f"q must have shape ({self.n_kernels},), got {q.shape}")
        if not (math.isfinite(s) and np.isfinite(q).all()):
            raise ValueError("a cut must be finite (got NaN or inf in s or q)")
        same_s = self._rows_of_s.setdefault(s, [])
        for j in same_s:  # almost always none: a repeated answer has the same s exactly
            if np.array_equal(self._Q[j], q):
                return False
        if self.n_cuts == self._s.shape[0]:
            cap = 2 * self._s.shape[0]
            s_new = np.empty(cap)
            Q_new = np.empty((cap, self.n_kernels))
            top_new = np.empty(cap, dtype=np.int64)
            s_new[: self.n_cuts] = self._s
            Q_new[: self.n_cuts] = self._Q
            top_new[: self.n_cuts] = self._top
            self._s, self._Q, self._top = s_new, Q_new, top_new
        same_s.append(self.n_cuts)
        self._s[self.n_cuts] = s
        self._Q[self.n_cuts] = q
        self._top[self.n_cuts] = q.argmax()
        np.maximum(self._qmax, np.abs(q), out=self._qmax)
        self._smax = max(self._smax, abs(s))
        self.n_cuts += 1
        return True

    # ---- evaluation --------------------------------------------------------------
    def value(self, w):
        """The model ``g(w) = max_j f(w, alpha_j)`` (``-inf`` without cuts)."""
        if self.n_cuts == 0:
            return -np.inf
        # A writable copy (w is often a read-only query): the signature the
        # jitted callers use, so numba compiles and caches one, not two.
        return model_value(self.Q, self.s, np.array(w, dtype=np.float64))

    # ---- the LP: min_{w in simplex} g(w) -------------------------------------------
    def minimize(self, precision=0.0):
        """Minimise the model over the simplex (Xu et al. eq. 6; SILP's step, eq. 2).

        Solves the LP ``min t s.t. s_j - q_j'w / 2 <= t, w >= 0, 1'w = 1`` by
        column generation over the kernels: the LP is
        solved on a working set ``W`` of kernels (the others held at 0), and a
        kernel joins ``W`` while its reduced cost is negative. With ``lam``
        the optimal cut multipliers (``lam >= 0``, ``sum(lam) = 1``), the LP
        dual value is ``lam's - max_k (Q'lam)_k / 2``, so kernel ``k`` can
        improve the restricted optimum only if ``(Q'lam)_k`` exceeds its
        maximum over ``W``. When no kernel does, the restricted solution is
        optimal for the full LP. Optima are sparse (few kernels carry weight),
        so ``W`` stays small and each LP is far cheaper than on all kernels.

        Parameters
        ----------
        precision : float, default=0.0
            How far above the LP minimum the returned point may be. With
            ``precision > 0`` the LP is first solved with ECOS (an interior-
            point solve of this small LP costs a fraction of the overhead of
            scipy's ``linprog``), and that answer is kept when its certified
            gap ``g(w) - lower`` is at most ``precision``; otherwise, and
            always with ``0``, HiGHS's dual simplex gives an exact vertex.
            Either way ``lower`` is a valid bound.

        Returns
        -------
        lower : float
            ``min_{w in P} g(w)``, a lower bound on ``min_P J``, evaluated
            as the dual value ``lam's - max_k (Q'lam)_k / 2`` of the LP's cut
            multipliers (see Notes).
        w : ndarray of shape (n_kernels,)
            A minimiser, exactly on the simplex.

        Notes
        -----
        For any ``lam`` in the simplex of the cuts,
        ``d(lam) = min_{w in P} sum_j lam_j f(w, alpha_j)
        = lam's - max_k (Q'lam)_k / 2`` is a lower bound on ``J*``, since
        every cut minorises ``J``. It is more than a bound: with
        ``abar = sum_j lam_j alpha_j`` (feasible, Q being convex), the
        concavity of the dual value gives ``D(abar) >= d(lam)`` (the linear
        term is concave and each ``q_k`` convex). So ``d(lam)`` certifies
        the duality gap ``J(w) - D(abar)`` of the aggregated dual point, and
        it is computed here in plain arithmetic from the stored cuts, so the
        bound never rests on the LP solver's objective value. At the LP's
        optimal multipliers it equals the LP minimum.
        """
        if self.n_cuts == 0:
            raise RuntimeError("the cutting-plane model has no cuts yet")
        if precision > 0.0:
            sol = self._column_generation(self._restricted_lp_ecos)
            if sol is not None and self.value(sol[1]) - sol[0] <= precision:
                return sol
        return self._column_generation(self._restricted_lp_highs)

    def _column_generation(self, lp):
        """:meth:`minimize` with the restricted-LP solver ``lp``; None when it fails."""
        Q = self.Q
        # Seed: the previous working set plus, for every cut, its steepest kernel.
        # The set is a mask over the kernels (cheaper than sorted-set functions).
        inW = np.zeros(self.n_kernels, dtype=bool)
        inW[self._W] = True
        inW[self._top[: self.n_cuts]] = True
        W = inW.nonzero()[0]
        for _ in range(self.n_kernels + 1):
            sol = lp(W, inW)
            if sol is None:
                return None
            fun, x, lam = sol
            # sum(lam), the dual value at lam / sum(lam), Q'lam / sum(lam) and
            # the kernels outside W that it prices in, in one jitted pass
            tot, lower, u, viol = price_kernels(Q, self.s, np.ascontiguousarray(lam), inW)
            if not tot > 0 or viol.size == 0:
                break
            add = viol[np.argsort(u[viol])[::-1][: max(8, W.size // 4)]]
            inW[add] = True
            W = inW.nonzero()[0]
        if x.shape[0] == self.n_kernels:  # the warm LP answers for every kernel
            w = _onto_simplex(x)
        else:
            w = np.zeros(self.n_kernels)
            w[W] = x
            w = _onto_simplex(w)
        on = W[w[W] > 0]
        # The next seed: this round's working set while it is small next to
        # the support (a kernel that just left the support often comes back,
        # and pricing it in again costs a second LP), else the support.
        self._W = W if W.size <= max(2 * on.size, 8) else (on if on.size else W)
        if not tot > 0:  # no multipliers (a degenerate solve): the model's minimum, rounded down
            lower = min(fun, self.value(w))
        # else lower is dual_value(lam / tot), from the last pricing
        return lower, w

    def dual_value(self, lam):
        """``d(lam) = lam's - max_k (Q'lam)_k / 2`` for cut weights ``lam`` in the simplex.

        A certified lower bound on ``J*`` (see :meth:`minimize`).
        """
        return float(lam @ self.s) - 0.5 * float(np.max(self.Q.T @ lam))

    def _restricted_lp_ecos(self, W, inW=None):
        """ECOS on the LP restricted to the kernels ``W``: ``(value, w_W, lam)`` or None.

        ``inW`` (``W`` as a mask) is not used here; the HiGHS solve takes it.

        Variables ``(w_W, t)``; rows ``h - Gx >= 0``: ``w >= 0``, then the
        cuts ``s_j - q_j'w / 2 - t <= 0``, each scaled to unit max-norm.
        Entries at the solver's precision are cleared (:func:`_clear_interior`).
        """
        mw, J = W.size, self.n_cuts
        Q = self.Q[:, W]
        scale = np.maximum(0.5 * np.max(np.abs(Q), axis=1), 1.0)
        G = np.zeros((mw + J, mw + 1))
        G[np.arange(mw), np.arange(mw)] = -1.0
        G[mw:, :mw] = (-0.5 / scale)[:, None] * Q
        G[mw:, mw] = -1.0 / scale
        h = np.zeros(mw + J)
        h[mw:] = -self.s / scale
        A = np.ones((1, mw + 1))
        A[0, mw] = 0.0
        c = np.zeros(mw + 1)
        c[mw] = 1.0
        import scipy.sparse as sp

        data = (c, sp.csc_matrix(G), h, {"l": mw + J, "q": [], "e": 0}, sp.csc_matrix(A),
                np.ones(1))
        out = solve_ecos(data, (_ECOS_LP_OPTS,), "the cutting-plane LP")
        if out is None:
            return None
        x = _clear_interior(np.asarray(out["x"][:mw]))
        lam = np.maximum(np.asarray(out["z"][mw:]) / scale, 0.0)
        return float(out["x"][mw]), x, lam

    def _restricted_lp_highs(self, W, inW=None):
        """HiGHS on the LP restricted to the kernels ``W``: ``(value, w_W, lam)``.

        ``inW``, the same set as a mask over the kernels, saves building it.

        ``lam >= 0`` are the cut multipliers; only their direction matters
        (the bound is recomputed from them in :meth:`dual_value`). From the
        warm model (:class:`~mklopt.methods._highs.CutLP`) the weights come
        for every kernel, 0 outside ``W``, instead of ``w_W``.
        """
        # The model kept across steps first: no set-up, a warm basis. Its
        # weights cover every kernel (0 outside W).
        warm = self._lp.solve(self.s, self.Q, W, float(self._qmax[W].max()), self._smax, inW)
        if warm is not None:
            return warm
        mw, J = W.size, self.n_cuts
        c = np.zeros(mw + 1)
        c[mw] = 1.0
        A_ub = np.empty((J, mw + 1))
        A_ub[:, :mw] = -0.5 * self.Q[:, W]
        A_ub[:, mw] = -1.0
        A_eq = np.ones((1, mw + 1))
        A_eq[0, mw] = 0.0
        bounds = np.zeros((mw + 1, 2))
        bounds[:, 1] = np.inf
        bounds[mw] = (-np.inf, np.inf)
        b_ub = -self.s
        # HiGHS's bindings directly (0.4 ms) when SciPy has them and the
        # answer checks out, else linprog (2-3.6 ms, the same optimum).
        direct = _highs.solve_dense_lp(c, A_ub, b_ub, A_eq, np.ones(1), bounds[:, 0],
                                       bounds[:, 1])
        if direct is not None:
            value, x, marg = direct
            return value, x[:mw], np.maximum(-marg, 0.0)
        from scipy.optimize import linprog  # here: slow to import, and rarely needed

        res = None
        for method in ("highs-ds", "highs-ipm"):  # ipm is more forgiving of bad scaling
            res = linprog(
                c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=[1.0], bounds=bounds, method=method
            )
            if res.status == 0 and res.x is not None:
                break
        if res.x is None:
            raise RuntimeError(f"the cutting-plane LP failed: {res.message}")
        lam = np.maximum(-np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)
        return float(res.fun), res.x[:mw], lam

    # ---- the projection QP of eq. 8 -------------------------------------------------
    def project_level(self, w0, level, fallback):
        """Euclidean projection of ``w0`` onto the level set (Xu et al. eq. 8).

        ``argmin ||w - w0||^2 s.t. w in P, f(w, alpha_j) <= level for all j``,
        solved with ECOS as the cone program ``min t s.t. ||w - w0|| <= t``
        (same minimiser).

        Parameters
        ----------
        w0 : ndarray of shape (n_kernels,)
            The point to project (the level method's current iterate ``p_i``).
        level : float
            The level ``l_i``.
        fallback : ndarray of shape (n_kernels,)
            A point of the simplex with ``g(fallback) <= level``, normally the
            LP minimiser; used when ECOS fails and to repair a solution that
            violates the level by more than rounding.

        Returns
        -------
        ndarray of shape (n_kernels,)
            A point of the simplex (exactly, up to rounding) whose model value
            is at most ``max(level, g(fallback))`` up to rounding.
        """
        w0 = np.ascontiguousarray(w0, dtype=np.float64)
        fallback = np.asarray(fallback, dtype=np.float64)
        if self.value(w0) <= level:
            return _onto_simplex(w0)  # already in the level set: its own projection
        # Column generation over kernels: solve on a working set W, then use
        # the multipliers to check the kernels left out. With mu >= 0 for the
        # cuts, the KKT conditions of eq. 8 give the projection in closed form,
        #     w = P_simplex(w0 + Q'mu / 2),
        # so a kernel outside W that gets weight there shows W was too small.
        Q = self.Q
        inW = (fallback > 0) | (w0 > 0)  # the working set as a mask over the kernels
        inW[self._W] = True
        W = inW.nonzero()[0]
        # One compiled signature of kkt_grow whoever calls: the centre as a
        # read-only view (a method's query is one; a caller's copy is not).
        w0_ro = w0.view()
        w0_ro.flags.writeable = False
        for _ in range(self.n_kernels + 1):
            sol = self._solve_level_socp(W, w0, level)
            if sol is None:
                log.info("level projection failed in ECOS; using the model minimiser instead")
                return _onto_simplex(fallback)
            x, mu = sol
            if W.size == self.n_kernels or not kkt_grow(Q, mu, w0_ro, inW):
                break
            W = inW.nonzero()[0]
        # ECOS's near-zeros cleared (as _clear_interior does), scattered, summing to 1
        w = scatter_normalised(np.ascontiguousarray(x), W, self.n_kernels)
        if not w.any():
            log.info("level projection gave no positive weight; using the model minimiser")
            return _onto_simplex(fallback)
        return self._repair(_onto_simplex(w), level, fallback)

    def _solve_level_socp(self, W, w0, level):
        """ECOS on eq. 8 restricted to the kernels ``W``.

        Returns ``(w_W, mu)``: the solution and the cut multipliers ``mu`` of
        the squared-distance problem, or None when ECOS fails. ECOS solves
        ``min t`` with ``||w - w0|| <= t``; its duals ``z`` of the (scaled)
        cut rows relate to those of ``min ||w - w0||^2 / 2`` by the factor
        ``t``: ``mu_j = t z_j / scale_j``.
        """
        G, h, A, b, c, dims, scale = self._level_socp(w0, level, W)
        mw = W.size
        out = solve_ecos((c, G, h, dims, A, b), (_ECOS_OPTS, _ECOS_RETRY), "the level projection")
        if out is None:
            return None
        t = float(out["x"][mw])
        z = out["z"][mw : mw + self.n_cuts]
        return out["x"][:mw], np.maximum(t * z / scale, 0.0)

    def _level_socp(self, w0, level, W):
        """ECOS data for ``min t s.t. ||w - w0|| <= t, w >= 0, cuts <= level, 1'w = 1``
        over the kernels ``W`` (the others fixed at 0).

        Variables ``x = (w_W, t)``. Cone ``h - Gx``: ``m`` rows ``w >= 0``,
        ``J`` cut rows (each scaled to unit max-norm), then the second-order
        cone ``(t, w - w0)``. Returns the data and the cut scales. ``G`` and
        ``h`` come from one jitted call (:func:`mklopt._jit.cuts.level_socp`).
        """
        m, J = W.size, self.n_cuts
        data, indices, indptr, h, scale = level_socp(
            self.Q, self.s, np.ascontiguousarray(W, dtype=np.int64), w0, float(level))
        G = Csc(data, indices, indptr, (m + J + 1 + m, m + 1))
        indptr_a = np.arange(m + 2, dtype=np.int64)
        indptr_a[m + 1] = m
        A = Csc(np.ones(m), np.zeros(m, dtype=np.int64), indptr_a, (1, m + 1))
        b = np.ones(1)
        c = np.zeros(m + 1)
        c[m] = 1.0
        dims = {"l": m + J, "q": [m + 1], "e": 0}
        return G, h, A, b, c, dims, scale

    def _repair(self, w, level, fallback):
        """Pull ``w`` towards ``fallback`` just enough to satisfy the level.

        ``g`` is convex and ``g(fallback) <= level``, so on the segment the
        model is at most ``(1 - theta) g(w) + theta g(fallback)``, which is
        ``<= level`` for the ``theta`` below. Changes nothing when ECOS's
        solution already meets the level to solver precision.
        """
        gw = self.value(w)
        # The level is a target of the method, not a constraint of the problem:
        # a projection that misses it by solver rounding is kept as it is.
        slack = 1e-9 * max(1.0, abs(level))
        if gw <= level + slack:
            return w
        gf = self.value(fallback)
        if gf >= gw:
            return _onto_simplex(fallback)
        theta = min(1.0, (gw - level) / (gw - gf))
        return _onto_simplex((1.0 - theta) * w + theta * fallback)


def _clear_interior(x):
    """Zero the weights of an interior-point solution that sit at the solver's precision.

    ECOS's solutions are strictly positive; weights below ``1e-9`` of the
    largest are zeros of the exact solution. Clearing them keeps later
    oracle calls from combining every kernel.
    """
    return np.where(x > INTERIOR_ZERO * max(float(x.max()), 1e-300), x, 0.0)


def _onto_simplex(x):
    """A point of the unit simplex from a solver's output, checked to rounding.

    Solvers return points on the simplex only to their tolerance. A
    non-negative vector whose sum is within rounding of 1 is renormalised;
    projecting it instead would shift every entry by the tiny threshold and
    turn exact zeros into ~1e-16 weights (so every later oracle call would
    combine every kernel). Anything farther off is projected.
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    near = 1e-9 * max(1, x.size)
    on, y = renormalise(x, near)  # the usual case, in one jitted pass
    if on:
        return y  # on the simplex by construction (non-negative, sum 1 to rounding)
    total = float(x.sum())
    if not math.isfinite(total) and not np.isfinite(x).all():  # one sum finds NaN and inf
        raise FloatingPointError("a sub-problem returned a non-finite point")
    w = np.maximum(x, 0.0)
    total = w.sum()
    if abs(total - 1.0) <= near and total > 0:
        w /= total
    else:
        w = project_simplex(x, 1.0, np.empty_like(x))
    assert w.min() >= 0.0 and abs(w.sum() - 1.0) <= near, "not on the simplex"
    return w
