"""Where a bank's kernels live: stored matrices, or computed from the features.

Every consumer reads kernels through the same few verbs, the protocol
:class:`mklopt.kernels.Storage` (a storage of your own is one class with
them, registered with :func:`mklopt.kernels.register_storage`):

``diag(w)``
    the diagonal of the combined kernel ``K(w) = sum_k w_k K_k``;
``rows(w, idx, out)``
    rows ``K(w)[idx, :]`` (kernels with ``w_k = 0`` skipped), what the SMO
    solver reads;
``combine(w, out)``
    the whole of ``K(w)`` when it is small enough to hold;
``quad_forms(v, support, kernels)``
    ``q_k = v_S' K_k[S, S] v_S``, the oracle's gradient;
``blocks(kernels, rows, cols)``
    single kernels on sub-blocks (weak learners, exact restricted solves).

A storage is trusted: its callers (:class:`~mklopt.kernels.KernelBank`'s
public methods, the oracles) have validated the arguments, so ``w`` is a
float64 array of length ``n_kernels`` and indices are int64 arrays in range.
:class:`DenseStorage` implements them here, :class:`OnTheFlyStorage` in
:mod:`mklopt.kernels.on_the_fly` (and importable from here); feature maps (``K_k = Phi_k
Phi_k'``) live in :mod:`mklopt.kernels.feature_maps`.

* :class:`DenseStorage`: an ``(m, n, n)`` array, float64 or float32, in memory
  or memory-mapped from disk, with optional per-kernel factors (user
  matrices normalised without a copy).
* :class:`OnTheFlyStorage`: nothing ``n x n x m`` is stored; every entry is
  computed from the training features when asked for, in parallel, sharing
  one distance evaluation per feature group (one BLAS product per block of
  rows for groups with many features, :func:`mklopt._jit.gram.is_wide`, as
  for the dense build). Groups on one or two features
  whose points take few distinct values (binary, ordinal, integer
  features) are evaluated once on their distinct values and read from a
  small table afterwards, so per-feature kernels cost O(1) per entry.
"""

from __future__ import annotations

import numpy as np

from .._interrupt import check, current_flag
from .._jit import combine as _combine
from .._jit import readonly
from .on_the_fly import OnTheFlyStorage, table_share
from .views import ViewStorage

__all__ = ["DenseStorage", "OnTheFlyStorage", "table_share"]


class DenseStorage:
    """Kernel matrices held as one ``(m, n, n)`` array.

    Parameters
    ----------
    K : ndarray of shape (n_kernels, n_samples, n_samples)
        C-contiguous float64 or float32; a read-only ``numpy.memmap`` works
        (rows are paged in as they are read).
    factors : ndarray of shape (n_kernels,), optional
        The stored kernel ``k`` is ``factors[k] * K[k]`` (default ones). User
        matrices normalised to unit trace keep their raw values on disk and
        carry the normalisation here.
    """

    name = "dense"

    def __init__(self, K, factors=None):
        # Read through a read-only view (no copy), as a memory map is read:
        # numba compiles read-only arrays separately, so every bank then
        # runs one build of each routine.
        self.K = K = readonly(K)
        self.n_kernels, self.n_samples = int(K.shape[0]), int(K.shape[1])
        m, n = self.n_kernels, self.n_samples
        self.factors = None if factors is None else np.ascontiguousarray(factors, np.float64)
        # Diagonals, one small pass (n entries per kernel), kept for diag(w).
        self._diag = np.empty((m, n))
        ar = np.arange(n)
        for k in range(m):
            self._diag[k] = K[k][ar, ar]
        if self.factors is not None:
            self._diag *= self.factors[:, None]

    def _w(self, w):
        return w if self.factors is None else w * self.factors

    def view_scales(self, idx, scales, normalize):
        """Normalisation factors of the points ``idx`` for a bank without kernel functions.

        ``scales`` are the bank's own factors; the view's are computed from
        the stored diagonal on its points (ones without ``normalize``).
        """
        out = np.ones(self.n_kernels)
        if normalize is None or self.factors is not None:
            return out
        out = (self._diag[:, idx] * scales[:, None]).sum(axis=1)
        if normalize == "diagonal":
            out /= idx.size
        out[~(out > 0.0)] = 1.0
        return out

    def view(self, idx, factors, functions=None, normalize=None):
        """The points ``idx`` of this storage, kernel ``k`` scaled by ``factors[k]``, or None.

        A :class:`~mklopt.kernels.views.ViewStorage` reads this array without
        copying it; matrices kept raw with factors (a user's normalised
        stack on disk) have no views.
        """
        if self.factors is not None:
            return None
        return ViewStorage(self, idx, factors, functions=functions)

    @property
    def nbytes(self):
        return int(self.K.nbytes + self._diag.nbytes)

    def diag(self, w):
        nz = np.flatnonzero(w)
        return w[nz] @ self._diag[nz]

    def rows(self, w, idx, out):
        stop = current_flag()
        _combine.combine_rows(self.K, self._w(w), idx, out, stop)
        check(stop)
        return out

    def combine(self, w, out):
        w = self._w(w)
        m, n = self.n_kernels, self.n_samples
        if (
            type(self.K) is np.ndarray
            and self.K.dtype == np.float64
            and np.count_nonzero(w) * 2 >= m
            and m >= 8
        ):
            # Mostly non-zero weights: one BLAS matrix-vector product over the
            # whole bank reads it at full memory bandwidth (about 2x the jitted
            # loop on two cores). Sparse weights take the loop, which reads
            # only the selected kernels.
            np.dot(w, self.K.reshape(m, n * n), out=out.reshape(n * n))
            return out
        stop = current_flag()
        _combine.combine_kernels(self.K, w, out, stop)
        check(stop)
        return out

    def quad_forms(self, v, support, kernels=None):
        m, n = self.n_kernels, self.n_samples
        S = support
        if kernels is None:
            kernels = np.arange(m, dtype=np.int64)
            if type(self.K) is np.ndarray and self.K.dtype == np.float64 and S.size * 5 >= n * 2:
                # A large support: one BLAS pass over the whole bank,
                # q = (K v) v, is faster than the gathered S x S reads.
                vs = np.zeros(n)
                vs[S] = v[S]
                q = np.dot(np.dot(self.K.reshape(m * n, n), vs).reshape(m, n), vs)
                return q if self.factors is None else q * self.factors
        stop = current_flag()
        q = _combine.quad_forms(self.K, v, S, kernels, np.empty(kernels.size), stop)
        check(stop)
        return q if self.factors is None else q * self.factors[kernels]

    def blocks(self, kernels, rows, cols):
        out = np.empty((kernels.size, rows.size, cols.size))
        _combine.gather_blocks(self.K, kernels, rows, cols, out)
        if self.factors is not None:
            out *= self.factors[kernels][:, None, None]
        return out
