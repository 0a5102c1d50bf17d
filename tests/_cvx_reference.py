"""Exact MKL optima by conic programming (cvxpy + Clarabel), for small problems.

``small_problem`` builds a few unit-trace kernels on a bundled data set with
plain NumPy; ``exact_optimum`` solves the dual of each formulation
(DESIGN section 1) as a second-order cone program, with ``q_k(a) =
||L_k'(a * y)||^2`` from an eigen-factor ``K_k = L_k L_k'``.
"""

import numpy as np

from mklopt.datasets import load
from mklopt.domains import ElasticNet, GroupSimplex, LpBall, Simplex
from mklopt.testing import _solve_tight, elastic_net_metric


def small_problem(name="sonar", n=60, seed=0, rows=None):
    """``(K, y)``: 5 unit-trace kernels (3 RBF, linear, quadratic) on ``n`` points.

    The points are ``n`` distinct rows drawn with ``seed``, or the given
    ``rows`` (which may repeat a row).
    """
    X, y = load(name)
    if rows is None:
        rng = np.random.default_rng(seed)
        idx = rng.choice(len(y), size=n, replace=False)
    else:
        idx = np.asarray(rows)
    X, y = X[idx], y[idx].astype(float)
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    lin = X @ X.T
    Ks = [np.exp(-d2 / (2 * s**2 * X.shape[1])) for s in (0.5, 1.0, 2.0)]
    Ks += [lin, (lin / X.shape[1] + 1.0) ** 2]
    K = np.array([k / np.trace(k) for k in Ks])
    return K, y


def _factors(K):
    out = []
    for Kk in K:
        vals, vecs = np.linalg.eigh((Kk + Kk.T) / 2)
        keep = vals > 1e-12 * vals.max()
        out.append(vecs[:, keep] * np.sqrt(vals[keep]))
    return out


def exact_optimum(K, y, C, domain):
    """``J* = max_{a in Q} 1'a - h(q(a)) / 2`` for the formulation of ``domain``."""
    import cvxpy as cp

    # Solved in b = a / C (box [0, 1]): q(a) = C^2 q(b), so
    # J* = C max_b 1'b - C h(q(b)) / 2, which keeps the conic data well scaled for any C.
    L = _factors(K)
    n = len(y)
    a = cp.Variable(n)
    v = cp.multiply(a, y)
    cons = [a >= 0, a <= 1, y @ a == 0]
    if isinstance(domain, ElasticNet) and domain.lam == 0.0:
        domain = Simplex(len(L))  # the same set of optimal values (L1-MKL)
    if isinstance(domain, Simplex):
        t = cp.Variable()
        cons += [cp.sum_squares(Lk.T @ v) <= t for Lk in L]
        obj = cp.sum(a) - C * t / 2
    elif isinstance(domain, LpBall):
        u = cp.Variable(len(L))
        cons += [cp.sum_squares(Lk.T @ v) <= u[k] for k, Lk in enumerate(L)]
        obj = cp.sum(a) - C * cp.norm(u, domain.p_star) / 2
    elif isinstance(domain, GroupSimplex):
        r = cp.Variable(domain.n_groups)
        cons += [cp.norm(Lk.T @ v) <= r[domain.group_of[k]] for k, Lk in enumerate(L)]
        obj = cp.sum(a) - C * cp.square(cp.sum(r)) / 2
    elif isinstance(domain, ElasticNet):
        z = cp.Variable(len(L))
        cons += [cp.norm(Lk.T @ v) <= z[k] for k, Lk in enumerate(L)]
        obj = cp.sum(a) - C * cp.quad_form(z, elastic_net_metric(len(L), domain.lam)) / 2
    else:  # pragma: no cover
        raise TypeError(domain)
    # tight tolerances first, then the kit's retries (a drawn problem once
    # made Clarabel fail at 1e-9)
    return C * _solve_tight(cp.Problem(cp.Maximize(obj), cons))


def small_task_problem(task, n=40, seed=0):
    """``(K, oracle)`` for ``task`` in {"svc", "svr", "one-class"} on bundled data.

    Regression reads diabetes (target standardised), one-class the benign
    class of wdbc; the kernels are those of :func:`small_problem`.
    """
    from mklopt.oracles import OneClassDual, SVMDual, SVRDual

    name = {"svc": "sonar", "svr": "diabetes", "one-class": "wdbc"}[task]
    if task == "one-class":
        X, y = load(name)
        rng = np.random.default_rng(seed)
        idx = rng.choice(np.flatnonzero(y == -1), size=n, replace=False)  # benign
        K = _kernels(X[idx])
        return K, OneClassDual(K, nu=0.2, tol=1e-6)
    if task == "svr":
        X, y = load(name)
        rng = np.random.default_rng(seed)
        idx = rng.choice(len(y), size=n, replace=False)
        t = (y[idx] - y[idx].mean()) / y[idx].std()
        K = _kernels(X[idx])
        return K, SVRDual(K, t, C=1.0, epsilon=0.1, tol=1e-6)
    K, y = small_problem(name, n=n, seed=seed)
    return K, SVMDual(K, y, C=1.0, tol=1e-6)


def _kernels(X):
    X = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    d2 = np.sum((X[:, None, :] - X[None, :, :]) ** 2, axis=-1)
    lin = X @ X.T
    Ks = [np.exp(-d2 / (2 * s**2 * X.shape[1])) for s in (0.5, 1.0, 2.0)]
    Ks += [lin, (lin / X.shape[1] + 1.0) ** 2]
    return np.array([k / np.trace(k) * len(X) for k in Ks])


def exact_problem_optimum(K, problem, domain):
    """Exact ``J*`` for any oracle's :class:`~mklopt.oracles.DualProblem`.

    ``max l(a) - h(q(a)) / 2`` over ``0 <= a <= upper, s'a = total`` with
    ``l(a) = -p'a`` and ``v = S a`` (``S`` the signed row map), as one
    second-order cone program.
    """
    import cvxpy as cp

    L = _factors(K)
    N, n = problem.n_variables, problem.n_samples
    S = np.zeros((n, N))
    S[problem.rows, np.arange(N)] = problem.signs
    a = cp.Variable(N)
    v = S @ a
    cons = [a >= 0, a <= problem.upper, problem.signs @ a == problem.total]
    lin = -problem.linear @ a
    if isinstance(domain, ElasticNet) and domain.lam == 0.0:
        domain = Simplex(len(L))  # the same set of optimal values (L1-MKL)
    if isinstance(domain, Simplex):
        t = cp.Variable()
        cons += [cp.sum_squares(Lk.T @ v) <= t for Lk in L]
        obj = lin - t / 2
    elif isinstance(domain, LpBall):
        u = cp.Variable(len(L))
        cons += [cp.sum_squares(Lk.T @ v) <= u[k] for k, Lk in enumerate(L)]
        obj = lin - cp.norm(u, domain.p_star) / 2
    elif isinstance(domain, GroupSimplex):
        r = cp.Variable(domain.n_groups)
        cons += [cp.norm(Lk.T @ v) <= r[domain.group_of[k]] for k, Lk in enumerate(L)]
        obj = lin - cp.square(cp.sum(r)) / 2
    elif isinstance(domain, ElasticNet):
        z = cp.Variable(len(L))
        cons += [cp.norm(Lk.T @ v) <= z[k] for k, Lk in enumerate(L)]
        obj = lin - cp.quad_form(z, elastic_net_metric(len(L), domain.lam)) / 2
    else:  # pragma: no cover
        raise TypeError(domain)
    return _solve_tight(cp.Problem(cp.Maximize(obj), cons))
