"""Exact elastic-net MKL optima by conic programming (cvxpy + Clarabel).

With ``r_k = sqrt(q_k)`` and ``A = (1 - lam) 11' + lam I``, the support
function of :class:`~mklopt.domains.ElasticNet` is ``h(q) = max_{u >= 0}
2 r'u - u'Au = min_{z >= r} z'A^{-1}z`` (the Lagrange dual of the sign
constraint), so for ``lam > 0``

    J* = max_{alpha in Q, z} 1'alpha - z'A^{-1}z / 2,   ||L_k'(alpha * y)|| <= z_k,

a second-order cone program (``K_k = L_k L_k'``); ``lam = 0`` is L1-MKL.
"""

import numpy as np

from mklopt.domains import Simplex
from mklopt.testing import _solve_tight  # Clarabel at 1e-9, retried when inaccurate
from tests._cvx_reference import _factors, exact_optimum


def _a_inverse(m, lam):
    c = 1.0 - lam
    return (np.eye(m) - c / (lam + m * c) * np.ones((m, m))) / lam


def exact_svm(K, y, C, lam):
    """``J*`` of elastic-net MKL for the SVM with kernels ``K`` (m, n, n)."""
    import cvxpy as cp

    if lam == 0.0:
        return exact_optimum(K, y, C, Simplex(K.shape[0]))
    L = _factors(K)
    m, n = len(L), len(y)
    # in b = a / C (box [0, 1]): J* = C max_b 1'b - C h(q(b)) / 2
    b = cp.Variable(n)
    z = cp.Variable(m)
    v = cp.multiply(b, y)
    cons = [b >= 0, b <= 1, y @ b == 0] + [cp.norm(Lk.T @ v) <= z[k] for k, Lk in enumerate(L)]
    obj = cp.sum(b) - C * cp.quad_form(z, _a_inverse(m, lam)) / 2
    prob = cp.Problem(cp.Maximize(obj), cons)
    return C * _solve_tight(prob)


def exact_toy(oracle, lam):
    """``J*`` of elastic-net MKL for a :class:`~mklopt.testing.SmoothQuadraticOracle`."""
    import cvxpy as cp

    if lam == 0.0:
        return oracle.exact_l1_optimum()
    L = [np.linalg.cholesky(Mk) for Mk in oracle.M]
    m = len(L)
    a = cp.Variable(oracle.n_samples)
    z = cp.Variable(m)
    cons = [cp.norm(Lk.T @ a) <= z[k] for k, Lk in enumerate(L)]
    obj = oracle.s @ a - cp.quad_form(z, _a_inverse(m, lam)) / 2
    prob = cp.Problem(cp.Maximize(obj), cons)
    return _solve_tight(prob)
