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

The quadratic forms ``q_k = v_S' K_k[S, S] v_S`` are read from the bank or
computed from the view's features, whichever the view expects to be
cheaper (:meth:`ViewStorage.q_from_features`): reading gathers ``m |S|^2 /
2`` entries scattered over the rows of a bank that is far larger than any
cache, while the features cost ``|S|^2 / 2`` distances or products per
feature group plus a few operations per kernel, on data that fit in cache.
Both give the same forms to rounding.
"""

from __future__ import annotations

import numpy as np

from .._interrupt import check, current_flag
from .._jit import combine as _combine
from .on_the_fly import OnTheFlyStorage

__all__ = ["ViewStorage", "q_by_features"]

# The cost model of ViewStorage.q_from_features, measured on satellite
# (36 features, 17 kernels, pairs of 665-1,700 points) and digits (64
# features, pairs of 180 points) inside multiclass fits on this project's
# 2-core machine; benchmarks/README.md at commit 89ee8cc, "Pairs read the
# bank class by class; quadratic forms from the features".
#: Bytes per second of the scattered reads of a bank far larger than the caches.
Q_GATHER_BYTES_PER_S = 6.5e9
#: Seconds per support pair and per unit of work (a feature of a group or a kernel).
Q_FEATURE_S_PER_UNIT = 0.45e-9
#: Fixed seconds of the feature path per call (Python and thread start).
Q_FEATURE_FIXED_S = 60e-6


def q_by_features(functions, n_support, n_kernels, n_samples):
    """Whether the quadratic forms over a support are computed from the features.

    For ``n_kernels`` kernels over ``n_support`` of a view's ``n_samples``
    points. The cost model of :meth:`ViewStorage.q_from_features` (sizes only, so a
    fit takes the same path every time): reading from the bank costs the
    cache lines of the upper triangle of ``K_k[S, S]``, about ``n_kernels
    * |S| * min(|S| / 2, n / 16)`` lines of 64 bytes (an ascending support
    spreads over the view's ``n`` columns of each bank row), at
    :data:`Q_GATHER_BYTES_PER_S`; computing costs ``|S|^2 / 2`` times the
    features of the groups plus the kernels, at
    :data:`Q_FEATURE_S_PER_UNIT` each, plus :data:`Q_FEATURE_FIXED_S`.
    Kernels of a family evaluated by NumPy are always read.
    """
    if n_support < 2:
        return False
    plan = functions.plan
    if plan.is_host.any():
        return False
    s = float(n_support)
    lines = n_kernels * s * min(s / 2.0, n_samples / 16.0)
    gather = 64.0 * lines / Q_GATHER_BYTES_PER_S
    units = float(plan.n_group_features.sum()) + n_kernels
    compute = Q_FEATURE_FIXED_S + 0.5 * s * s * units * Q_FEATURE_S_PER_UNIT
    return compute < gather


class _IndexView:
    """The verbs a view of a stored bank shares, whatever the bank stores.

    A subclass sets ``idx`` (its points' bank rows), ``factors``,
    ``functions``, ``_diag`` (its kernels' diagonals, factors applied),
    ``_fly = None`` and ``n_kernels``, and reads the bank in
    ``_gathered_q(vg, gS, kernels, stop)`` (the stored kernels' forms over
    the bank points ``gS``) and ``_raw_blocks(kernels, rows, cols, out)``.
    """

    def _active(self, w):
        """Kernels with a non-zero weight, and their weights times the view's factors."""
        ks = np.flatnonzero(w).astype(np.int64)
        return ks, np.ascontiguousarray(w[ks] * self.factors[ks])

    def diag(self, w):
        nz = np.flatnonzero(w)
        return w[nz] @ self._diag[nz]

    def quad_forms(self, v, support, kernels=None):
        if kernels is None:
            kernels = np.arange(self.n_kernels, dtype=np.int64)
        if self.q_from_features(support.shape[0], kernels.shape[0]):
            if self._fly is None:
                self._fly = OnTheFlyStorage(self.functions)
            return self._fly.quad_forms(v, support, kernels)
        # v on the bank's rows: the stored forms over idx[S].
        gS = self.idx[support]
        vg = np.zeros(self._n_bank)
        vg[gS] = v[support]
        stop = current_flag()
        q = self._gathered_q(vg, gS, kernels, stop)
        check(stop)
        return q * self.factors[kernels]

    def blocks(self, kernels, rows, cols):
        out = np.empty((kernels.size, rows.size, cols.size))
        self._raw_blocks(kernels, self.idx[rows], self.idx[cols], out)
        out *= self.factors[kernels][:, None, None]
        return out


class ViewStorage(_IndexView):
    """The block ``K[:, idx][:, :, idx]`` of a dense bank, each kernel rescaled.

    Parameters
    ----------
    parent : DenseStorage
        The shared bank: raw kernels of all points (no per-kernel factors).
    idx : ndarray of shape (n_samples,), int64
        Distinct bank rows of the view's points, in the view's order.
    factors : ndarray of shape (n_kernels,)
        Kernel ``k`` of the view is ``factors[k] * parent.K[k][idx][:, idx]``.
    functions : KernelFunctions, optional
        The view's kernels on its own points (``X[idx]``, with the view's
        normalisation), when the bank was built from specs: then the
        quadratic forms may be computed from the features instead of read
        (see :meth:`q_from_features`).

    Notes
    -----
    Nothing ``n x n`` is copied: rows, quadratic forms and blocks are read
    from the parent with the view's indices. The parent is shared, so
    :attr:`nbytes` counts only what the view holds itself.
    """

    name = "view"

    def __init__(self, parent, idx, factors, functions=None):
        if getattr(parent, "factors", None) is not None:
            raise ValueError("a view reads a bank of raw kernels (a parent without factors)")
        self.parent = parent
        self.functions = functions
        self._fly = None  # the on-the-fly storage of the view's features, once used
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

    @property
    def _n_bank(self):
        return self.K.shape[1]

    def row_source(self, w):
        """``(bank, weights, kernels, gidx)``: what combines a row of ``K(w)`` on demand.

        Row ``i`` of the combined kernel is
        ``sum_a weights[a] * bank[kernels[a], gidx[i], gidx]``
        (:func:`mklopt._jit.combine.view_row`).
        """
        ks, wv = self._active(w)
        return self.K, wv, ks, self.idx

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

    def q_from_features(self, n_support, n_kernels):
        """Whether the forms of ``n_kernels`` kernels over ``n_support`` points are computed.

        By the cost model :func:`q_by_features`. Only views of a float64
        bank that know their kernel functions, with every kernel jitted
        (not a family evaluated by NumPy), compute.
        """
        fn = self.functions
        if fn is None or self.K.dtype != np.float64:
            # (A float32 bank's forms are read from it, as its rows are: the
            # oracle's value and its q then come from the same rounded kernels.)
            return False
        return q_by_features(fn, n_support, n_kernels, self.n_samples)

    def _gathered_q(self, vg, gS, kernels, stop):
        return _combine.quad_forms(self.K, vg, gS, kernels, np.empty(kernels.size), stop)

    def _raw_blocks(self, kernels, rows, cols, out):
        _combine.gather_blocks(self.K, kernels, rows, cols, out)
