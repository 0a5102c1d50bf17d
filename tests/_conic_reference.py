"""MKL optima of every loss and formulation by conic programming, in the primal and in the dual.

The oracles and the outer methods work with the dual ``J(w) = max_beta
l(beta) - w'q(beta) / 2`` and the support function ``h`` of the weight
set. To check them against something they do not share, this module states
each problem in its **primal** form, written directly from the model
(Kloft et al.'s problem (1) with the block norm of each formulation):

    min_{beta_k, b}  loss(f) + reg(u),   f = sum_k L_k beta_k + b,   u_k = ||beta_k||,

with ``K_k = L_k L_k'`` (so ``f_k = L_k beta_k`` has RKHS norm
``||beta_k||``) and

* ``loss``: hinge ``C sum_i (1 - y_i f_i)_+``, logistic
  ``C sum_i log(1 + exp(-y_i f_i))`` (exponential cones: cvxpy's
  ``logistic`` atom) or squared ``C/2 sum_i (y_i - f_i)^2``;
* ``reg``: L1-MKL ``(sum_k u_k)^2 / 2``, Lp-MKL ``||u||_{2p/(p+1)}^2 / 2``
  (``p = inf``: ``||u||^2 / 2``), elastic net
  ``[(1 - lam)(sum_k u_k)^2 + lam ||u||^2] / 2``. Each is
  ``min_{w in W} sum_k u_k^2 / w_k / 2`` over the formulation's weight set
  ``W``, so the primal optimum is ``min_{w in W} J(w)``;
* shared-weight multiclass: one ``beta_{p,k}`` per part ``p``, the parts'
  losses summed and ``u_k = ||(beta_{1,k}, ..., beta_{P,k})||`` (one norm
  per kernel across the parts), which is ``min_w sum_p J_p(w)``.

:func:`dual_optimum` states the same optimum as the conic dual (the
entropies of the logistic loss through ``entr``; ``h`` by its conic
representation), independently of the package's closed forms. The two are
solved separately by Clarabel with tightened tolerances; their difference
measures the references' own accuracy (:func:`reference`).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

#: Clarabel's tolerances for the references, tightest first (its defaults
#: are 1e-8): a solve that ends "inaccurate" is retried at the next.
CLARABEL_TOLS = (1e-10, 1e-9, 1e-8)

LOSSES = ("hinge", "logistic", "squared")


def factors(K):
    """``L_k`` with ``K_k = L_k L_k'`` (eigen-factors; eigenvalues below 1e-12 of the top dropped)."""
    out = []
    for Kk in np.asarray(K, dtype=np.float64):
        vals, vecs = np.linalg.eigh((Kk + Kk.T) / 2)
        keep = vals > 1e-12 * max(vals.max(), 1e-300)
        out.append(vecs[:, keep] * np.sqrt(vals[keep]))
    return out


def _solve(prob):
    import cvxpy as cp

    for tol in CLARABEL_TOLS:
        # a fresh copy each time: a retry of the same object after an
        # inaccurate solve failed where a new one succeeded
        prob = cp.Problem(prob.objective, prob.constraints)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # cvxpy's "may be inaccurate"
                prob.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol,
                           tol_feas=tol, max_iter=500)
        except cp.error.SolverError:
            continue
        if prob.status == cp.OPTIMAL:
            return float(prob.value)
    if prob.status == cp.OPTIMAL_INACCURATE:
        # (an optimum of exactly 0, say, where the relative tolerances
        # cannot be met): :func:`reference` still checks it against the
        # other form's value
        return float(prob.value)
    # Clarabel raised on every attempt (seen on a drawn logistic problem
    # with duplicated points): ECOS, the other interior-point solver at
    # hand, as an independent reference; reference() still checks its value
    # against the other form's.
    ecos = cp.Problem(prob.objective, prob.constraints)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ecos.solve(solver=cp.ECOS, abstol=1e-9, reltol=1e-9, feastol=1e-9, max_iters=500)
    except cp.error.SolverError:
        pass
    else:
        if ecos.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
            return float(ecos.value)
    raise RuntimeError(f"Clarabel (and ECOS) did not solve the reference: {prob.status}")


# ---------------------------------------------------------------- primal
def _loss(loss, f, y, C):
    import cvxpy as cp

    if loss == "hinge":
        return C * cp.sum(cp.pos(1 - cp.multiply(y, f)))
    if loss == "logistic":
        return C * cp.sum(cp.logistic(-cp.multiply(y, f)))
    if loss == "squared":
        return C / 2 * cp.sum_squares(y - f)
    raise ValueError(loss)


def _reg(formulation, u):
    import cvxpy as cp

    kind, arg = formulation
    if kind == "l1":
        return cp.square(cp.sum(u)) / 2
    if kind == "lp":
        if math.isinf(arg):
            return cp.sum_squares(u) / 2
        return cp.square(cp.pnorm(u, 2 * arg / (arg + 1))) / 2
    if kind == "enet":
        return ((1 - arg) * cp.square(cp.sum(u)) + arg * cp.sum_squares(u)) / 2
    raise ValueError(formulation)


def primal_optimum(parts, C, loss, formulation, fit_intercept=True):
    """``min`` of the primal above; ``parts`` is a list of ``(K, y)`` sharing the kernels.

    Parameters
    ----------
    parts : list of (ndarray (m, n, n), ndarray (n,))
        One binary problem, or the parts of a shared-weight problem.
    C : float
    loss : {"hinge", "logistic", "squared"}
    formulation : ("l1", None), ("lp", p) or ("enet", lam)
    fit_intercept : bool
        Each part has its offset ``b`` (the hinge loss always has one).
    """
    import cvxpy as cp

    terms, blocks = [], None
    for K, y in parts:
        L = factors(K)
        betas = [cp.Variable(Lk.shape[1]) for Lk in L]
        f = sum(Lk @ bk for Lk, bk in zip(L, betas))
        if fit_intercept or loss == "hinge":
            f = f + cp.Variable()
        terms.append(_loss(loss, f, np.asarray(y, dtype=np.float64), C))
        blocks = [[b] for b in betas] if blocks is None else [
            old + [b] for old, b in zip(blocks, betas)]
    u = cp.hstack([cp.norm(cp.hstack(bs)) for bs in blocks])
    prob = cp.Problem(cp.Minimize(sum(terms) + _reg(formulation, u)))
    return _solve(prob)


# ------------------------------------------------------------------ dual
def dual_optimum(parts, C, loss, formulation, fit_intercept=True):
    """The same optimum as ``max_beta l(beta) - h(q(beta)) / 2`` (conic dual)."""
    import cvxpy as cp

    lin, cons, quads, norms = 0, [], [], []
    for K, y in parts:
        y = np.asarray(y, dtype=np.float64)
        L = factors(K)
        n = y.size
        if loss == "squared":
            beta = cp.Variable(n)
            lin = lin + y @ beta - cp.sum_squares(beta) / (2 * C)
            if fit_intercept:
                cons.append(cp.sum(beta) == 0)
        else:
            a = cp.Variable(n)  # alpha / C, in [0, 1]
            beta = C * cp.multiply(a, y)
            cons += [a >= 0, a <= 1]
            if fit_intercept or loss == "hinge":
                cons.append(y @ a == 0)
            if loss == "hinge":
                lin = lin + C * cp.sum(a)
            else:
                lin = lin + C * cp.sum(cp.entr(a) + cp.entr(1 - a))
        quads.append([cp.sum_squares(Lk.T @ beta) for Lk in L])
        norms.append([Lk.T @ beta for Lk in L])
    m = len(quads[0])
    kind, arg = formulation
    if kind == "l1" or (kind == "enet" and arg == 0.0):
        t = cp.Variable()
        cons += [sum(q[k] for q in quads) <= t for k in range(m)]
        h = t
    elif kind == "lp":
        v = cp.Variable(m)
        cons += [sum(q[k] for q in quads) <= v[k] for k in range(m)]
        h = cp.max(v) if arg == 1 else cp.norm(v, 1 if math.isinf(arg) else arg / (arg - 1))
    elif kind == "enet":
        # h(q) = max_{w in W} w'q with r_k = sqrt(q_k) and A = (1 - lam) 11' + lam I:
        # h = max_{s >= 0} 2 r's - s'As = min_{z >= r} z'A^{-1} z (Lagrange dual of s >= 0)
        lam = arg
        z = cp.Variable(m)
        cons += [cp.norm(cp.hstack([nm[k] for nm in norms])) <= z[k] for k in range(m)]
        A = (1 - lam) * np.ones((m, m)) + lam * np.eye(m)
        F = np.linalg.cholesky(np.linalg.inv(A)).T  # z'A^{-1}z = ||F z||^2
        h = cp.sum_squares(F @ z)
    else:
        raise ValueError(formulation)
    prob = cp.Problem(cp.Maximize(lin - h / 2), cons)
    return _solve(prob)


def reference(parts, C, loss, formulation, fit_intercept=True):
    """``(J*, accuracy)``: the primal optimum and ``|primal - dual| / max(1, |primal|)``."""
    p = primal_optimum(parts, C, loss, formulation, fit_intercept)
    d = dual_optimum(parts, C, loss, formulation, fit_intercept)
    return p, abs(p - d) / max(1.0, abs(p))


# ------------------------------------------------------------ problems
def unit_kernels(X):
    """Three kernels on ``X`` (two RBF, linear + 1), each scaled to mean diagonal 1."""
    X = np.asarray(X, dtype=np.float64)
    d2 = np.sum((X[:, None] - X[None]) ** 2, axis=-1)
    Ks = [np.exp(-d2 / (2 * s**2)) for s in (0.5, 2.0)] + [X @ X.T + 1.0]
    return np.array([k / np.trace(k) * len(X) for k in Ks])


def draw_problem(rng, n, loss, d=2):
    """``(K, y)`` for ``loss`` from NumPy's ``rng`` (the benchmark's draws)."""
    X = np.round(rng.uniform(-3, 3, size=(n, d)), 3)
    if loss == "squared":
        y = np.sin(X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=n)
    else:
        y = np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
        if np.all(y == y[0]):
            y[0] = -y[0]
    return unit_kernels(X), y


def three_class_parts(X, labels):
    """The one-vs-one parts ``(K, y)`` of a 3-class problem (kernels per pair, unit mean diagonal)."""
    from itertools import combinations

    parts = []
    for i, j in combinations(np.unique(labels), 2):
        rows = np.flatnonzero((labels == i) | (labels == j))
        parts.append((unit_kernels(X[rows]), np.where(labels[rows] == j, 1.0, -1.0)))
    return parts
