"""What the oracles of smooth convex losses share: one combined kernel per call.

Kloft et al.'s generalised dual for a convex loss ``V`` (Kloft, Brefeld,
Sonnenburg, Zien, "Comparing sparse and non-sparse multiple kernel
learning", the *generalized dual* of their problem (1)) reads, for fixed
kernel weights ``w``,

    J(w) = max_alpha  l(alpha) - 1/2 sum_k w_k q_k(alpha),
    l(alpha) = -C sum_i V*(-alpha_i / C, y_i),   q_k = v' K_k v,

with ``1'alpha = 0`` when the model has an offset. Unlike the hinge and
epsilon-insensitive losses, whose duals are box-constrained quadratic
programs solved by SMO (:mod:`mklopt.oracles._solver`), a smooth loss has a
strictly concave ``l`` and its solver needs the combined kernel ``K(w)`` as
a matrix. :class:`LossOracle` forms it once per call through the bank's
storage (so every storage works, at ``n x n`` float64 of memory), hands it
to the subclass's ``_solve`` and builds the answer: ``q`` through the
storage's quadratic forms, ``J(w) = l(alpha) - w'q / 2``, subgradient
``-q / 2``, value-only answers and kernel subsets as for
:class:`~mklopt.oracles.SVMDual`.
"""

from __future__ import annotations

import numpy as np

from .._types import OracleAnswer
from .._validation import check_int, check_real
from ._base import check_call_weights

__all__ = ["OracleBase", "LossOracle"]


class OracleBase:
    """Base of oracles that solve their dual on the combined kernel (module notes).

    A subclass calls ``self._setup(bank)`` in ``__init__`` (``bank`` a
    :class:`~mklopt.KernelBank`; ``mklopt.kernels.bank.as_bank`` also takes
    an array of shape ``(n_kernels, n, n)``) and defines two hooks:

    ``_solve(K, warm_start) -> (alpha, bias, n_iter, converged)``
        Maximise the dual at the combined kernel ``K = sum_k w_k K_k``
        (an ``n x n`` buffer the base reuses: do not keep it, and restore
        it if you change it). ``warm_start`` is an earlier answer's
        ``alpha`` or None.
    ``_linear(alpha) -> float``
        The dual's linear term ``l(alpha)``.

    and, when the quadratic forms are not of ``alpha`` itself, ``_v(alpha)``
    (the vector ``v`` of ``q_k = v' K_k v``; default ``alpha``). The base
    checks ``w``, counts calls (``n_calls``), and builds the
    :class:`~mklopt.OracleAnswer`: ``q`` through the bank's storage, ``J(w)
    = l(alpha) - w'q / 2``, subgradient ``-q / 2``, value-only answers
    (``need_q=False``) and kernel subsets (``kernels=``), so every outer
    method and the driver's options work with it. An iterative solver passes
    ``tol`` (and optionally ``max_iter``, by default ``max(10**6, 100 n)``
    iterations) to ``_setup``; the driver then adapts ``tol`` to the gap it
    must resolve.
    """

    #: ``need_q=False`` is supported (see :meth:`__call__`).
    supports_value_only = True
    #: Whether ``l`` has Kloft's form ``-C sum_i V*(-alpha_i / C, y_i)``, so
    #: that ``(alpha, C) -> (t alpha, t C)`` keeps a dual vector feasible and
    #: scales ``l`` by ``t``: a C path may then start each point from the
    #: previous one's scaled ``alpha`` and cuts. Declare it in a subclass only
    #: when it holds; otherwise a path warm-starts the weights alone.
    c_homogeneous = False
    #: ``kernels=...`` is supported: ``q`` for a subset of kernels only.
    supports_kernel_subsets = True

    def _setup(self, bank, tol=None, max_iter=None):
        """Keep the bank (a KernelBank, or matrices of shape (n_kernels, n, n)) and counters."""
        from ..kernels.bank import as_bank

        bank = as_bank(bank)
        self.bank = bank
        self.n_kernels = int(bank.n_kernels)
        self.n_samples = int(bank.n_samples)
        if tol is not None:  # iterative solvers only (the driver adapts it)
            self.tol = check_real(tol, "tol", low=0.0, strict_low=True)
            if max_iter is None:  # the signature's default: a budget no solve should need
                max_iter = max(1_000_000, 100 * self.n_samples)
            self.max_iter = check_int(max_iter, "max_iter", low=1)
        self.n_calls = 0
        self.n_unconverged = 0
        self._K = None

    def _v(self, alpha):
        return alpha

    def __repr__(self):
        return f"{type(self).__name__}(n_kernels={self.n_kernels}, n_samples={self.n_samples})"

    def __call__(self, w, warm_start=None, need_q=True, kernels=None):
        """Solve the dual at kernel weights ``w``.

        Parameters
        ----------
        w : array-like of shape (n_kernels,)
            Non-negative finite kernel weights, not all zero.
        warm_start : array-like, optional
            An ``alpha`` as answers return it (ignored by exact solvers).
        need_q : bool, default=True
            When False only ``J(w)`` is wanted: ``q`` and ``grad`` are None
            and the value is ``l(alpha) - v'K(w)v / 2`` from the combined
            kernel already formed.
        kernels : array-like of int, optional
            Compute ``q`` only for these kernels, in this order; every kernel
            with ``w_k > 0`` must be among them.

        Returns
        -------
        OracleAnswer
        """
        w, ks = check_call_weights(w, kernels, self.n_kernels)
        n = self.n_samples
        if self._K is None:
            # One n x n buffer reused by every call (the solvers need the
            # combined kernel as a matrix; see the module notes).
            self._K = np.empty((n, n))
        K = self.bank.storage.combine(w, self._K)
        alpha, bias, n_iter, converged = self._solve(K, warm_start)
        self.n_calls += 1
        if not converged:
            self.n_unconverged += 1
        v = self._v(alpha)
        support = np.flatnonzero(v).astype(np.int64)
        linear_term = float(self._linear(alpha))
        if not need_q:
            value = linear_term - 0.5 * float(v @ (K @ v))
            return OracleAnswer(
                w=w, value=value, grad=None, q=None, alpha=alpha, bias=float(bias),
                support=support, n_solver_iter=int(n_iter), linear_term=linear_term,
                converged=bool(converged),
            )
        q = np.asarray(self.bank.storage.quad_forms(v, support, ks), dtype=np.float64)
        value = linear_term - 0.5 * float((w if ks is None else w[ks]) @ q)
        return OracleAnswer(
            w=w, value=value, grad=-0.5 * q, q=q, alpha=alpha, bias=float(bias),
            support=support, n_solver_iter=int(n_iter), linear_term=linear_term,
            converged=bool(converged),
        )


#: The name the built-in smooth-loss oracles were written against.
LossOracle = OracleBase
