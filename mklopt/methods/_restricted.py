"""The MKL problem restricted to a few kernels and dual variables, solved exactly.

Written against :class:`~mklopt.oracles.DualProblem`, so it serves every
oracle of the common dual form of docs/new_oracle.md: with the problem's signs ``s``, kernel rows,
linear term ``p``, bounds ``upper`` and equality ``s'a = total``, and
``q_k(a) = v'K_k v``, ``v = sum_t s_t a_t e_{rows_t}``, the restricted dual is

    L1:      max_{a_S}  -p_S'a_S - 1/2 max_{k in A} q_k(a_S)
    groups:  max_{a_S}  -p_S'a_S - 1/2 (sum_j max_{k in A_j} sqrt(q_k(a_S)))^2

over ``0 <= a_S <= upper_S``, ``s_S'a_S = total``, with every variable outside
``S`` held at 0 and only the kernels ``A`` (``A_j = A`` within group ``j``).
With ``K_k[R, R] = L_k L_k'`` (a pivoted Cholesky factor) on the kernel rows ``R`` that ``S`` reads,
``q_k = ||M_k a_S||^2`` for ``M_k = (s_S * L_k[rows_S])'``, and both are
second-order cone programs, solved with ECOS. The kernel weights come from
the cone multipliers (the saddle point's ``w``):

* L1: the constraint ``q_k <= t`` has multiplier ``mu_k / 2`` with
  ``sum_k mu_k = 1``, and ``w_k = mu_k`` (the Lagrangian is
  ``-p'a - t/2 - sum_k mu_k (q_k - t) / 2``, i.e. ``f(mu, a)``). In the
  rotated-cone form ``(t + 1, 2 M_k a, t - 1)``, ``mu_k = 2 (z_0 + z_last)``.
* groups: ``||M_k a|| <= r_j`` has multiplier ``nu_k``; stationarity in
  ``a`` gives the effective weight ``w_k = nu_k / r_j``, in ``r_j`` equal
  sums ``sum_{k in A_j} nu_k = sum_i r_i``, so ``lam_j = nu / sum nu`` and
  ``gamma_j = r_j / sum_i r_i`` (Nath et al. eq. 6 at the optimum).

Variables held at their upper bound (``fixed``) leave the cone program: they
shift the equality's right-hand side and enter each cone as a constant
offset, ``q_k = ||L'v_F + c_k||^2 + e_k`` with ``L L'`` the kernel on the
free variables' rows only (:func:`fixed_offset`). With many variables at the
bound (large ``C``, overlapping classes) the cones then have the size of the
free set instead of the support.

Variables are scaled by ``1 / max(upper)`` so that the box is ``[0, 1]``.

References
----------
J. S. Nath et al., NIPS 2009 (the mixed-norm dual, eqs. 4-6); the L1 case is
its single-group special case, as in the formulations of docs/formulations.md.
"""

from __future__ import annotations

import numpy as np

from ._cut_model import solve_ecos

__all__ = ["fixed_offset", "kernel_factor", "solve_restricted"]

_ECOS_OPTS = dict(feastol=1e-10, abstol=1e-10, reltol=1e-10, max_iters=200, verbose=False)
_ECOS_RETRY = dict(feastol=1e-8, abstol=1e-8, reltol=1e-8, max_iters=400, verbose=False)
#: Pivots below this fraction of the largest diagonal entry end a factor.
_RANK_RTOL = 1e-11


def kernel_factor(K):
    """``F`` with ``K ~= F F'``: pivoted Cholesky of a PSD block, stopped at its numerical rank.

    LAPACK's ``dpstrf`` stops when the largest remaining pivot falls below
    ``1e-11 max(diag K)``, so the dropped part is below that per entry of
    the diagonal. (Cheaper than an eigen-factor, and it reveals the rank of
    smooth kernels, which keeps the cones small.)

    Parameters
    ----------
    K : ndarray of shape (r, r)

    Returns
    -------
    ndarray of shape (r, rank)
    """
    from scipy.linalg.lapack import dpstrf  # here: scipy.linalg is slow to import
    K = np.array(0.5 * (K + K.T), dtype=np.float64, order="F")
    top = float(np.max(np.diag(K))) if K.size else 0.0
    if not top > 0.0:
        return np.zeros((K.shape[0], 1))
    c, piv, rank, info = dpstrf(K, lower=1, tol=_RANK_RTOL * top)
    if info < 0:  # pragma: no cover - bad argument to LAPACK
        raise RuntimeError(f"dpstrf failed (info={info})")
    F = np.zeros((K.shape[0], max(int(rank), 1)))
    F[piv - 1] = np.tril(c)[:, : F.shape[1]]
    return F


def solve_restricted(problem, S, factors, local, group_of=None, fixed=None, offsets=None):
    """Solve the restricted dual exactly (module notes).

    Parameters
    ----------
    problem : DualProblem
    S : ndarray of int64
        Free variables (indices into the problem's variables).
    factors : list of ndarray
        ``L_k`` for each kernel of ``A`` on the kernel rows the variables of
        ``S`` read.
    local : ndarray of int64 of shape (len(S),)
        Position in the rows of ``factors`` of the kernel row each variable
        of ``S`` reads.
    group_of : ndarray of int64 of shape (len(factors),), optional
        Group (0-based, consecutive) of each kernel of ``A``; None for L1.
    fixed : ndarray of int64, optional
        Variables held at their upper bound (disjoint from ``S``); they move
        the right-hand side of the equality. None: none.
    offsets : list of ndarray, optional
        ``c_k`` (length ``rank_k + 1``) with ``q_k = ||[M_k; 0] a_S + c_k||^2``
        once the fixed variables are in (:func:`fixed_offset`). None: no
        variable is fixed.

    Returns
    -------
    a : ndarray of shape (len(S),)
        The restricted optimum, inside the box.
    w : ndarray of shape (len(factors),)
        L1: weights summing to one. Groups: effective weights
        ``lam_jk / gamma_j``.
    Or None when ECOS fails.
    """
    sigma = float(np.max(problem.upper[S]))
    sS = problem.signs[S]
    M = [(F[local] * sS[:, None]).T for F in factors]  # q_k = sigma^2 ||M_k a' + c_k / sigma||^2
    if offsets is None:
        c = [np.zeros(Mk.shape[0]) for Mk in M]
    else:
        M = [np.vstack([Mk, np.zeros((1, Mk.shape[1]))]) for Mk in M]
        c = [np.asarray(ck, dtype=np.float64) / sigma for ck in offsets]
    p = problem.linear[S] / sigma
    U = problem.upper[S] / sigma
    total = problem.total
    if fixed is not None and len(fixed):
        total -= float(problem.signs[fixed] @ problem.upper[fixed])
    total /= sigma
    if group_of is None:
        data = _l1_data(M, c, p, U, sS, total)
    else:
        data = _group_data(M, c, p, U, sS, total, group_of)
    G, h, A, b, cost, dims, unpack = data
    out = solve_ecos((cost, G, h, dims, A, b), (_ECOS_OPTS, _ECOS_RETRY), "the restricted problem")
    if out is None:
        return None
    a, w = unpack(out["x"], out["z"])
    return sigma * a, w


def fixed_offset(K, free, v_fixed):
    """Factor and cone offset of ``q(a) = v'Kv`` when part of ``v`` is held fixed.

    With ``v = E v_F + v_B`` (``E`` puts the free rows in place, ``v_B``
    is the fixed variables' part) and ``K[free, free] = L L'``,

        q = ||L'v_F + c||^2 + e,   L c = (K v_B)[free],   e = v_B'K v_B - ||c||^2 >= 0

    (``(K v_B)[free]`` lies in the range of ``K[free, free]`` for a PSD
    ``K``, and ``e`` is the Schur complement's quadratic form). The cone
    then has ``rank(L) + 1`` entries however many variables are fixed.

    Parameters
    ----------
    K : ndarray of shape (r, r)
        The kernel block on all the rows the restricted variables read.
    free : ndarray of int64
        Positions in ``K`` of the rows the free variables read.
    v_fixed : ndarray of shape (r,)

    Returns
    -------
    L : ndarray of shape (len(free), rank)
    c : ndarray of shape (rank + 1,)
        ``c`` with ``sqrt(e)`` appended.
    """
    L = kernel_factor(K[np.ix_(free, free)])
    Kv = K @ v_fixed
    c = np.linalg.lstsq(L, Kv[free], rcond=None)[0]
    e = float(v_fixed @ Kv) - float(c @ c)
    return L, np.r_[c, np.sqrt(max(e, 0.0))]


def _box_rows(ns, U):
    """``-a <= 0`` and ``a <= U`` as ECOS linear-cone rows over ``ns`` variables."""
    import scipy.sparse as sp
    eye = sp.identity(ns, format="csc")
    return sp.vstack([-eye, eye], format="csc"), np.r_[np.zeros(ns), U]


def _l1_data(M, c, p, U, sS, total):
    import scipy.sparse as sp
    ns, nA = p.size, len(M)
    # variables (a, t): min p'a + t / 2
    box, h_box = _box_rows(ns, U)
    blocks = [sp.hstack([box, sp.csc_matrix((2 * ns, 1))], format="csc")]
    h = [h_box]
    cones = []
    e_t = sp.csc_matrix(([-1.0], ([0], [ns])), shape=(1, ns + 1))
    for Mk, ck in zip(M, c):
        r = Mk.shape[0]
        mid = sp.hstack([sp.csc_matrix(-2.0 * Mk), sp.csc_matrix((r, 1))], format="csc")
        blocks += [e_t, mid, e_t]
        h += [np.ones(1), 2.0 * ck, -np.ones(1)]
        cones.append(r + 2)
    G = sp.vstack(blocks, format="csc")
    A = sp.csc_matrix(np.r_[sS, 0.0][None, :])
    c = np.r_[p, 0.5]
    dims = {"l": 2 * ns, "q": cones, "e": 0}
    offsets = 2 * ns + np.r_[0, np.cumsum(cones)]

    def unpack(x, z):
        mu = np.array([2.0 * (z[offsets[k]] + z[offsets[k + 1] - 1]) for k in range(nA)])
        mu = np.maximum(mu, 0.0)
        tot = mu.sum()
        w = mu / tot if tot > 0 else np.full(nA, 1.0 / nA)
        return x[:ns], w

    return G, np.concatenate(h), A, np.array([total]), c, dims, unpack


def _group_data(M, c, p, U, sS, total, group_of):
    import scipy.sparse as sp
    ns, nA = p.size, len(M)
    g = int(group_of.max()) + 1
    nv = ns + g + 2  # variables (a, r_1..r_g, u, t): min p'a + t / 2
    iu, it = ns + g, ns + g + 1
    box, h_box = _box_rows(ns, U)
    blocks = [sp.hstack([box, sp.csc_matrix((2 * ns, g + 2))], format="csc")]
    h = [h_box]
    # sum_j r_j - u <= 0
    row = np.zeros((1, nv))
    row[0, ns : ns + g] = 1.0
    row[0, iu] = -1.0
    blocks.append(sp.csc_matrix(row))
    h.append(np.zeros(1))
    # u^2 <= t as (t + 1, 2u, t - 1) in the second-order cone
    rot = np.zeros((3, nv))
    rot[0, it] = rot[2, it] = -1.0
    rot[1, iu] = -2.0
    blocks.append(sp.csc_matrix(rot))
    h.append(np.array([1.0, 0.0, -1.0]))
    cones = [3]
    for k, (Mk, ck) in enumerate(zip(M, c)):
        r = Mk.shape[0]
        head = sp.csc_matrix(([-1.0], ([0], [ns + int(group_of[k])])), shape=(1, nv))
        mid = sp.hstack([sp.csc_matrix(-Mk), sp.csc_matrix((r, g + 2))], format="csc")
        blocks += [head, mid]
        h += [np.zeros(1), ck]
        cones.append(r + 1)
    G = sp.vstack(blocks, format="csc")
    A = sp.csc_matrix(np.r_[sS, np.zeros(g + 2)][None, :])
    c = np.zeros(nv)
    c[:ns] = p
    c[it] = 0.5
    dims = {"l": 2 * ns + 1, "q": cones, "e": 0}
    heads = 2 * ns + 1 + 3 + np.r_[0, np.cumsum(cones[1:])][:-1]

    def unpack(x, z):
        nu = np.maximum(z[heads], 0.0)
        r = np.maximum(x[ns : ns + g], 0.0)
        gamma = r / r.sum() if r.sum() > 0 else np.full(g, 1.0 / g)
        gamma = np.maximum(gamma, 1e-12)
        w = np.zeros(nA)
        for j in range(g):
            members = np.flatnonzero(group_of == j)
            tot = nu[members].sum()
            lam = nu[members] / tot if tot > 0 else np.full(members.size, 1.0 / members.size)
            w[members] = lam / gamma[j]
        return x[:ns], w

    return G, np.concatenate(h), A, np.array([total]), c, dims, unpack
