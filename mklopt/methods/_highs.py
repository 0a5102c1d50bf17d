"""Small dense LPs straight to HiGHS, without ``scipy.optimize.linprog``'s overhead.

The cutting-plane LPs of the level and SILP methods are tiny (tens of
variables and cuts) and solved once per oracle call. Through
``scipy.optimize.linprog`` such an LP costs 2-3.6 ms, of which HiGHS's
dual simplex is about 0.2 ms: the rest is ``linprog``'s input cleaning and
its option checks (it builds an option manager per option, per call).
SciPy ships HiGHS's own Python bindings as ``scipy.optimize._highspy._core``
(the module ``linprog`` itself calls); :func:`solve_dense_lp` passes the
model to them directly and takes 0.4 ms (measured on Level's LPs on
ionosphere's grid, 15-17 variables and 23 cuts).

That module is private to SciPy, so it is used defensively:

* if it cannot be imported, or lacks what is used here, :func:`solve_dense_lp`
  returns ``None`` and the caller uses ``linprog`` (the answers are the
  same LP optimum);
* every answer is checked before it is returned (finite, primal feasible
  to 1e-9 relative, sign-correct multipliers, and the objective equal to
  ``c @ x``); an answer that fails is discarded in the same way.

Presolve is off: on LPs this small it costs more than it saves, and the
dual simplex starts from the slack basis either way.

:class:`CutLP` keeps one HiGHS model of the cutting-plane LP across the
steps of a run instead: each new cut is added as a row, kernels enter or
leave the working set through their column bounds, and the dual simplex
starts from the previous optimal basis (after one new cut it typically needs
a few pivots). Setting up a model, its options and its matrix, which the
one-shot call repeats every step, is then paid once per run. Its answers
are checked like :func:`solve_dense_lp`'s; on any failure the model is
dropped (the next solve rebuilds it cold) and the caller uses the one-shot
path.
"""

from __future__ import annotations

import weakref

import numpy as np

from .._extension import load_extension
from .._jit.cuts import check_cut_lp

#: SciPy's vendored HiGHS bindings (``scipy.optimize._highspy._core``), or
#: None when this SciPy build has none. Loaded on first use (see
#: :func:`_core`). A test may set it to None.
_h = ...

_CORE = "scipy.optimize._highspy._core"


def _core():
    """The HiGHS bindings module (loaded once), or None."""
    global _h
    if _h is ...:
        try:  # SciPy >= 1.15 vendors HiGHS's bindings here (private to SciPy)
            h = load_extension(_CORE, "scipy.optimize")  # not scipy.optimize's __init__
            h._Highs, h.HighsLp, h.MatrixFormat.kRowwise, h.HighsModelStatus.kOptimal  # noqa: B018
        except (ImportError, AttributeError):  # pragma: no cover - depends on the SciPy build
            h = None
        _h = h
    return _h


__all__ = ["available", "solve_dense_lp", "CutLP"]

#: Relative feasibility slack accepted in an answer's check.
_CHECK_TOL = 1e-9
#: HiGHS's primal and dual feasibility tolerances in :class:`CutLP`. At
#: HiGHS's default (1e-7) the cut rows of a converging run end up violated
#: by 1e-8 of their scale, which the 1e-9 check above rejects.
_CUT_LP_FEAS_TOL = 1e-10


def available():
    """Whether the direct path is usable with this SciPy."""
    _h = _core()
    return _h is not None


def solve_dense_lp(c, A_ub, b_ub, A_eq, b_eq, lb, ub):
    """``min c'x s.t. A_ub x <= b_ub, A_eq x = b_eq, lb <= x <= ub`` by HiGHS's dual simplex.

    Parameters
    ----------
    c : ndarray of shape (n,)
    A_ub : ndarray of shape (m_ub, n)
    b_ub : ndarray of shape (m_ub,)
    A_eq : ndarray of shape (m_eq, n)
    b_eq : ndarray of shape (m_eq,)
    lb, ub : ndarray of shape (n,)
        Bounds; ``-inf`` / ``inf`` for none.

    Returns
    -------
    (value, x, ineq_marginals) or None
        The optimal value, a vertex solution and the multipliers of the
        inequalities with ``linprog``'s sign (``<= 0``: the change of the
        optimum per unit increase of ``b_ub``). ``None`` when the direct
        path is unavailable, HiGHS does not report an optimum, or the
        answer fails its check; the caller then uses ``linprog``.
    """
    _h = _core()
    if _h is None:
        return None
    c = np.ascontiguousarray(c, dtype=np.float64)
    A = np.ascontiguousarray(np.vstack([A_ub, A_eq]), dtype=np.float64)
    m_ub, n = A_ub.shape
    m = A.shape[0]
    b_ub = np.asarray(b_ub, dtype=np.float64)
    b_eq = np.asarray(b_eq, dtype=np.float64)
    try:
        lp = _h.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = m
        lp.col_cost_ = c
        lp.col_lower_ = np.where(np.isneginf(lb), -_h.kHighsInf, lb).astype(np.float64)
        lp.col_upper_ = np.where(np.isposinf(ub), _h.kHighsInf, ub).astype(np.float64)
        lp.row_lower_ = np.r_[np.full(m_ub, -_h.kHighsInf), b_eq]
        lp.row_upper_ = np.r_[b_ub, b_eq]
        M = lp.a_matrix_
        M.format_ = _h.MatrixFormat.kRowwise
        M.num_col_ = n
        M.num_row_ = m
        M.start_ = np.arange(0, (m + 1) * n, n, dtype=np.int32)
        M.index_ = np.tile(np.arange(n, dtype=np.int32), m)
        M.value_ = A.ravel()
        lp.a_matrix_ = M
        hs = _h._Highs()
        hs.setOptionValue("output_flag", False)
        hs.setOptionValue("solver", "simplex")
        hs.setOptionValue("presolve", "off")
        hs.passModel(lp)
        hs.run()
        if hs.getModelStatus() != _h.HighsModelStatus.kOptimal:
            return None
        sol = hs.getSolution()
        x = np.array(sol.col_value, dtype=np.float64)
        dual = np.array(sol.row_dual, dtype=np.float64)
        value = float(hs.getInfo().objective_function_value)
    except Exception:  # pragma: no cover - a changed private API: use linprog
        return None
    if not _answer_ok(c, A_ub, b_ub, A_eq, b_eq, lb, ub, x, dual[:m_ub], value):
        return None
    return value, x, dual[:m_ub]


def _answer_ok(c, A_ub, b_ub, A_eq, b_eq, lb, ub, x, y_ub, value):
    """Finite, primal feasible, ``y_ub <= 0`` and ``value = c'x`` (relative 1e-9)."""
    if x.shape != c.shape or not (np.all(np.isfinite(x)) and np.all(np.isfinite(y_ub))):
        return False
    scale = 1.0 + np.abs(A_ub).max(initial=0.0) * np.abs(x).sum() + np.abs(b_ub).max(initial=0.0)
    tol = _CHECK_TOL * scale
    if np.any(A_ub @ x > b_ub + tol) or np.any(np.abs(A_eq @ x - b_eq) > tol):
        return False
    if np.any(x < lb - tol) or np.any(x > ub + tol):
        return False
    if np.any(y_ub > tol):
        return False
    return abs(float(c @ x) - value) <= _CHECK_TOL * (1.0 + abs(value))


#: HiGHS objects whose :class:`CutLP` has been garbage collected, kept for
#: the next one: creating an object and setting its options costs about as
#: much as a warm step, and a one-vs-one fit runs dozens of short runs.
_POOL = []
_POOL_SIZE = 8


def _new_highs():
    """A HiGHS object with :class:`CutLP`'s options, from the pool when one is there."""
    _h = _core()
    try:
        return _POOL.pop()  # atomic under the GIL, so safe across threads
    except IndexError:
        pass
    hs = _h._Highs()
    hs.setOptionValue("output_flag", False)
    hs.setOptionValue("solver", "simplex")
    hs.setOptionValue("simplex_strategy", 1)  # dual simplex, as a warm start wants
    hs.setOptionValue("presolve", "off")
    hs.setOptionValue("primal_feasibility_tolerance", _CUT_LP_FEAS_TOL)
    hs.setOptionValue("dual_feasibility_tolerance", _CUT_LP_FEAS_TOL)
    return hs


def _recycle(hs):
    """Return a HiGHS object to the pool, without its model (options are kept)."""
    if len(_POOL) < _POOL_SIZE:
        try:
            hs.clearModel()
        except Exception:  # pragma: no cover - then it is simply not reused
            return
        _POOL.append(hs)


class CutLP:
    """The cutting-plane LP of :class:`~mklopt.methods._cut_model.CutModel` in one HiGHS model.

    ``min t  s.t.  1'w = 1,  s_j - q_j'w / 2 <= t (every cut j),  w >= 0``,
    with the kernels outside a working set ``W`` held at 0. The model lives
    across calls: :meth:`solve` adds the cuts not yet passed as rows and
    changes the bounds of the kernels that entered or left ``W``, then
    reruns the dual simplex from the last optimal basis.

    Parameters
    ----------
    n_kernels : int
        Number of kernels ``m`` (columns ``0..m-1``; column ``m`` is ``t``).

    Notes
    -----
    Row 0 is ``1'w = 1``; row ``1 + j`` is cut ``j`` as
    ``-q_j'w / 2 - t <= -s_j`` (the coefficients of the one-shot path).
    """

    def __init__(self, n_kernels):
        self.n_kernels = int(n_kernels)
        self._hs = None
        self._recycle = None  # returns self._hs to the pool when self is collected
        self._rows = 0  # cuts passed to HiGHS
        self._open = np.zeros(self.n_kernels, dtype=bool)  # columns with upper bound inf
        self.n_failures = 0  # answers discarded (a count for tests and diagnostics)

    def __getstate__(self):
        # A HiGHS object cannot be pickled or deep-copied: a copy (a used
        # method passed on, a chain's copy of its stages) starts cold and
        # passes every cut again at its first solve.
        state = self.__dict__.copy()
        state.update(_hs=None, _recycle=None, _rows=0,
                     _open=np.zeros(self.n_kernels, dtype=bool))
        return state

    def reset(self):
        """Drop the HiGHS model; the next :meth:`solve` builds it afresh (a cold start).

        The dropped object is not reused: after a failure its state is unknown.
        """
        if self._recycle is not None:
            self._recycle.detach()
            self._recycle = None
        self._hs = None
        self._rows = 0
        self._open[:] = False

    def _build(self):
        _h = _core()
        m = self.n_kernels
        n = m + 1
        lp = _h.HighsLp()
        lp.num_col_ = n
        lp.num_row_ = 1
        cost = np.zeros(n)
        cost[m] = 1.0
        lp.col_cost_ = cost
        lower = np.zeros(n)
        lower[m] = -_h.kHighsInf
        lp.col_lower_ = lower
        # Every kernel starts closed (fixed at 0); solve opens the working set.
        upper = np.zeros(n)
        upper[m] = _h.kHighsInf
        lp.col_upper_ = upper
        lp.row_lower_ = np.ones(1)
        lp.row_upper_ = np.ones(1)
        M = lp.a_matrix_
        M.format_ = _h.MatrixFormat.kRowwise
        M.num_col_ = n
        M.num_row_ = 1
        M.start_ = np.array([0, m], dtype=np.int32)
        M.index_ = np.arange(m, dtype=np.int32)
        M.value_ = np.ones(m)
        lp.a_matrix_ = M
        hs = _new_highs()
        if hs.passModel(lp) != _h.HighsStatus.kOk:
            raise RuntimeError("HiGHS refused the model")
        self._hs = hs
        self._recycle = weakref.finalize(self, _recycle, hs)
        self._rows = 0
        self._open[:] = False
        self._index = np.arange(n, dtype=np.int32)
        self._start1 = np.zeros(1, dtype=np.int32)
        self._minus_inf1 = np.full(1, -_h.kHighsInf)

    def solve(self, s, Q, W, q_max, s_max, mask=None):
        """The LP on the cuts ``(s, Q)`` restricted to the kernels ``W``.

        Parameters
        ----------
        s : ndarray of shape (n_cuts,)
        Q : ndarray of shape (n_cuts, n_kernels)
            All cuts so far; the rows already passed must not have changed.
        W : ndarray of int
            The working set, without repeats.
        q_max, s_max : float
            ``max |Q[:, W]|`` and ``max |s|``, the scale of the answer's check.
        mask : ndarray of bool, optional
            ``W`` as a mask over the kernels, when the caller has it (it is
            not modified).

        Returns
        -------
        (value, w, lam) or None
            The optimal value, the weights (of every kernel, exactly 0
            outside ``W``) and the cut multipliers ``lam >= 0``; ``None``
            when the bindings are unavailable, HiGHS reports no optimum or
            the answer fails its check (the model is then dropped, so the
            next call starts cold).
        """
        _h = _core()
        if _h is None:
            return None
        m = self.n_kernels
        J = s.shape[0]
        try:
            if self._hs is None:
                self._build()
            hs = self._hs
            k = J - self._rows
            if k > 0:
                self._add_rows(s, Q, k)
            if mask is None:
                mask = np.zeros(m, dtype=bool)
                mask[W] = True
            changed = (mask != self._open).nonzero()[0]
            if changed.size:
                up = np.where(mask[changed], _h.kHighsInf, 0.0)
                hs.changeColsBounds(changed.size, changed.astype(np.int32), np.zeros(changed.size),
                                    up)
                self._open = mask.copy()
            hs.run()
            if hs.getModelStatus() != _h.HighsModelStatus.kOptimal:
                raise RuntimeError("no optimum")
            sol = hs.getSolution()
            x = np.array(sol.col_value, dtype=np.float64)
            row_dual = np.array(sol.row_dual[1:], dtype=np.float64)
            value = float(hs.getObjectiveValue())
        except Exception:  # a changed private API or a failed solve: one-shot path
            return self._fail()
        # The check of solve_dense_lp on this LP's structure, in one jitted
        # pass: finite, 1'w = 1, w >= 0, every cut <= t, multipliers of the
        # right sign (to 1e-9 of the problem's scale), and the value equal to
        # t. Kernels outside W sit at their bound 0 (exactly, unless basic).
        ok, w, _, lam = check_cut_lp(x, row_dual, mask, Q, s, float(q_max), float(s_max), value,
                                     _CHECK_TOL)
        if not ok:
            return self._fail()
        return value, w, lam

    def _add_rows(self, s, Q, k):
        """Pass the last ``k`` cuts to HiGHS as rows ``-q_j'w / 2 - t <= -s_j``."""
        _h = _core()
        m = self.n_kernels
        J = s.shape[0]
        vals = np.empty((k, m + 1))
        np.multiply(Q[J - k :], -0.5, out=vals[:, :m])
        vals[:, m] = -1.0
        if k == 1:  # the usual case, one new cut: no index arrays to build
            starts, index = self._start1, self._index
        else:
            starts = np.arange(0, k * (m + 1), m + 1, dtype=np.int32)
            index = np.tile(self._index, k)
        lower = self._minus_inf1 if k == 1 else np.full(k, -_h.kHighsInf)
        self._hs.addRows(k, lower, -s[J - k :], k * (m + 1), starts, index, vals.ravel())
        self._rows = J

    def _fail(self):
        self.n_failures += 1
        self.reset()
        return None
