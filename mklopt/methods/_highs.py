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
"""

from __future__ import annotations

import numpy as np

try:  # SciPy >= 1.15 vendors HiGHS's bindings here (private to SciPy)
    from scipy.optimize._highspy import _core as _h

    _h._Highs, _h.HighsLp, _h.MatrixFormat.kRowwise, _h.HighsModelStatus.kOptimal  # noqa: B018
except (ImportError, AttributeError):  # pragma: no cover - depends on the SciPy build
    _h = None

__all__ = ["available", "solve_dense_lp"]

#: Relative feasibility slack accepted in an answer's check.
_CHECK_TOL = 1e-9


def available():
    """Whether the direct path is usable with this SciPy."""
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
