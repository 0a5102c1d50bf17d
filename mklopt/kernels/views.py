"""Index views: the kernels of a subset of the points, read from one shared bank.

A multiclass fit trains one binary problem per pair of classes (or per
fold of a cross-validation), each on a subset of the training points. All
of them need the same base kernels on different index blocks, so the bank
is evaluated once on all points and each problem reads its block through a
view, instead of evaluating (and storing) its own kernels.

A view keeps the problem's own normalisation: the stored bank holds the
raw kernels ``kappa_k``, and the view of the points ``I`` scales kernel
``k`` by ``1 / s_k(I)``, the constant that
:meth:`~mklopt.kernels.KernelFunctions.from_data` would compute on
``X[I]`` alone (trace or mean diagonal on ``I``). So a view gives the
kernels of a bank built on ``X[I]``, up to the rounding of one product.

Only the verbs of the storage protocol are implemented (see
:mod:`mklopt.kernels.storage`), plus :meth:`ViewStorage.row_source`, which
lets the SMO solver combine the rows it reads and no others.
"""

from __future__ import annotations

import numpy as np

from .._interrupt import check, current_flag
from .._jit import combine as _combine

__all__ = ["ViewStorage"]


class ViewStorage:
    """The block ``K[:, idx][:, :, idx]`` of a dense bank, each kernel rescaled.

    Parameters
    ----------
    parent : DenseStorage
        The shared bank: raw kernels of all points (no per-kernel factors).
    idx : ndarray of shape (n_samples,), int64
        Ascending, distinct bank rows of the view's points.
    factors : ndarray of shape (n_kernels,)
        Kernel ``k`` of the view is ``factors[k] * parent.K[k][idx][:, idx]``.

    Notes
    -----
    Nothing ``n x n`` is copied: rows, quadratic forms and blocks are read
    from the parent with the view's indices. The parent is shared, so
    :attr:`nbytes` counts only what the view holds itself.
    """

    name = "view"

    def __init__(self, parent, idx, factors):
        if getattr(parent, "factors", None) is not None:
            raise ValueError("a view reads a bank of raw kernels (a parent without factors)")
        self.parent = parent
        self.K = parent.K
        self.idx = np.ascontiguousarray(idx, dtype=np.int64)
        self.factors = np.ascontiguousarray(factors, dtype=np.float64)
        self.n_kernels = int(parent.n_kernels)
        self.n_samples = int(self.idx.shape[0])
        self._diag = parent._diag[:, self.idx] * self.factors[:, None]

    @property
    def nbytes(self):
        """Bytes held by the view itself (its indices and diagonals)."""
        return int(self.idx.nbytes + self._diag.nbytes)

    def _active(self, w):
        """Kernels with a non-zero weight, and their weights times the view's factors."""
        ks = np.flatnonzero(w).astype(np.int64)
        return ks, np.ascontiguousarray(w[ks] * self.factors[ks])

    def row_source(self, w):
        """``(bank, weights, kernels, gidx)``: what combines a row of ``K(w)`` on demand.

        Row ``i`` of the combined kernel is
        ``sum_a weights[a] * bank[kernels[a], gidx[i], gidx]``
        (:func:`mklopt._jit.combine.view_row`).
        """
        ks, wv = self._active(w)
        return self.K, wv, ks, self.idx

    def diag(self, w):
        nz = np.flatnonzero(w)
        return w[nz] @ self._diag[nz]

    def rows(self, w, idx, out):
        ks, wv = self._active(w)
        stop = current_flag()
        _combine.view_rows(self.K, wv, ks, self.idx, idx, out, stop)
        check(stop)
        return out

    def combine(self, w, out):
        ks, wv = self._active(w)
        stop = current_flag()
        _combine.combine_view(self.K, wv, ks, self.idx, out, stop)
        check(stop)
        return out

    def quad_forms(self, v, support, kernels=None):
        if kernels is None:
            kernels = np.arange(self.n_kernels, dtype=np.int64)
        # v on the bank's rows: the parent's gathered forms over idx[S].
        gS = self.idx[support]
        vg = np.zeros(self.K.shape[1])
        vg[gS] = v[support]
        stop = current_flag()
        q = _combine.quad_forms(self.K, vg, gS, kernels, np.empty(kernels.size), stop)
        check(stop)
        return q * self.factors[kernels]

    def blocks(self, kernels, rows, cols):
        out = np.empty((kernels.size, rows.size, cols.size))
        _combine.gather_blocks(self.K, kernels, self.idx[rows], self.idx[cols], out)
        out *= self.factors[kernels][:, None, None]
        return out
