"""Stored distances and inner products: a bank that holds a few matrices per feature group.

A dense bank stores every kernel, ``m n^2`` entries. Kernels on the same
features differ only in the function applied to one quantity per pair of
points: the squared distance for Gaussian kernels (every width) and the
inner product for polynomial ones (every degree). :class:`ProductStorage`
stores those quantities, at most two ``n x n`` matrices per feature group,
and applies the kernels when a row, a diagonal, a quadratic form or a block
is read (:mod:`mklopt._jit.products`). For the MKBoost grid (17 kernels on
all features) that is 2 matrices instead of 17: 8.5 times less memory
written and held.

The values are those of a dense bank, bit for bit: the quantities are summed
by the dense build's own routines and each kernel is applied with its
operations (including the chain of squarings that derives Gaussian widths
``2^s`` apart from one exp). Its index views read the bank as
:class:`~mklopt.kernels.views.ViewStorage` reads a dense one, with the same
sums, so a fit on either storage takes the same path to the same model.

What it costs: applying a kernel costs about one exp per factor 1024 of
``gamma`` and a product per further width, where a dense bank reads one
stored value per kernel; building it writes ``2 / m`` of the dense bank.
One-vs-one pairs and cross-validation folds read one bank built on all
points (:meth:`~mklopt.kernels.KernelBank.view`), and the estimators choose
this storage for that bank when it holds at most half as many matrices as
kernels (:func:`products_pay`).
"""

from __future__ import annotations

import numpy as np

from .._interrupt import check, current_flag
from .._jit import gram as _gram
from .._jit import products as _products
from .._jit import readonly
from .._memory import check_memory
from .views import _IndexView, q_by_features

__all__ = ["ProductStorage", "product_matrices", "products_pay"]


def product_matrices(plan):
    """``(mat_d, mat_g, count)``: where each group's distances and inner products are stored.

    ``count`` matrices in all; group ``g``'s squared distances are
    ``P[mat_d[g]]`` and its inner products ``P[mat_g[g]]``.

    ``mat_d[g]`` (``mat_g[g]``) is -1 when group ``g`` has no Gaussian
    (no polynomial) kernel.
    """
    G = plan.n_groups
    mat_d = np.full(G, -1, dtype=np.int64)
    mat_g = np.full(G, -1, dtype=np.int64)
    count = 0
    for g in range(G):
        kinds = plan.kind[plan.kernels_of(g)]
        if (kinds == _products.GAUSSIAN).any():
            mat_d[g] = count
            count += 1
        if (kinds != _products.GAUSSIAN).any():
            mat_g[g] = count
            count += 1
    return mat_d, mat_g, count


def products_pay(functions):
    """Whether a bank of ``functions`` is held as products by the estimators' ``"auto"``.

    True when every kernel has jitted code (no family evaluated by NumPy)
    and the products are at most half as many matrices as the kernels, so
    that the bank is at least twice smaller than a dense one.

    Parameters
    ----------
    functions : KernelFunctions

    Returns
    -------
    bool
    """
    plan = functions.plan
    if plan.is_host.any():
        return False
    return 2 * product_matrices(plan)[2] <= functions.n_kernels


def _recipes(plan, inv_scale):
    """``(ri, rf)`` of every kernel (see :mod:`mklopt._jit.products`).

    The Gaussians' bases and squarings replay the doubling chain of
    :func:`mklopt._jit.groups._kernel_chunk` over each group's kernels in
    plan order, as the dense build runs it.
    """
    m = plan.n_kernels
    mat_d, mat_g, _ = product_matrices(plan)
    ri = np.zeros((4, m), dtype=np.int64)
    rf = np.zeros((3, m))
    rank = np.empty(m, dtype=np.int64)
    rank[plan.kern_idx] = np.arange(m)
    ri[3] = rank
    rf[2] = inv_scale
    pow_max = 1024.0  # groups._POW_MAX
    for g in range(plan.n_groups):
        prev, base, squarings = 0.0, 0.0, 0
        for k in plan.kernels_of(g).tolist():
            if plan.kind[k] == _products.GAUSSIAN:
                pk = float(plan.param[k])
                gam = 0.5 / (pk * pk)
                s = -1
                if prev > 0.0 and gam <= base * pow_max:
                    t, s = prev, 0
                    while t < gam and s < 64:
                        t *= 2.0
                        s += 1
                    if t != gam:
                        s = -1
                if s < 0:
                    base, squarings = gam, 0
                else:
                    squarings += s
                prev = gam
                ri[:3, k] = (mat_d[g], _products.GAUSSIAN, squarings)
                rf[0, k] = base
            else:
                prev = 0.0
                ri[:3, k] = (mat_g[g], plan.kind[k], int(plan.param[k]))
                rf[1, k] = plan.offset[k]
    return ri, rf


def _products_bytes(count, n):
    return count * n * n * 8 + n * n * 8


class ProductStorage(_IndexView):
    """Kernels applied on demand to stored squared distances and inner products.

    Build it with :meth:`build` (``KernelBank.from_specs(X, specs,
    storage="products")``); :meth:`view` gives the storage of a subset of
    the points.

    Parameters
    ----------
    P : ndarray of shape (n_products, N, N)
        The stored distances and inner products of all ``N`` points.
    ri, rf : ndarray
        The kernels' recipes (:mod:`mklopt._jit.products`).
    diag_raw : ndarray of shape (n_kernels, N)
        Every kernel's diagonal on all points.
    idx : ndarray of shape (n_samples,), int64
        The bank points of this storage's points, in its order.
    factors : ndarray of shape (n_kernels,)
        Kernel ``k`` of this storage is ``factors[k]`` times the stored one.
    functions : KernelFunctions, optional
        The kernels on this storage's points (with its normalisation): its
        quadratic forms may be computed from the features, as a dense
        view's are (:func:`mklopt.kernels.views.q_by_features`).
    """

    name = "products"

    def __init__(self, P, ri, rf, diag_raw, idx, factors, functions=None, owner=False):
        self.P = readonly(P)  # one build of each routine, memory-mapped or not
        self.ri, self.rf = ri, rf
        self.diag_raw = diag_raw
        self.idx = np.ascontiguousarray(idx, dtype=np.int64)
        self.factors = np.ascontiguousarray(factors, dtype=np.float64)
        self.functions = functions
        self.owner = owner
        self._fly = None
        self.n_kernels = int(ri.shape[1])
        self.n_samples = int(self.idx.shape[0])
        self._diag = diag_raw[:, self.idx] * self.factors[:, None]

    @classmethod
    def build(cls, functions, max_memory=None):
        """The products of ``functions``'s groups on its points.

        Raises
        ------
        ValueError
            When a kernel has no jitted code (a family evaluated by NumPy).
        MemoryError
            Before allocating, when the products do not fit under
            ``max_memory``.
        """
        plan = functions.plan
        if plan.is_host.any():
            fams = sorted({type(plan.families[k]).__name__ for k in range(plan.n_kernels)
                           if plan.is_host[plan.group_of[k]]})
            raise ValueError(
                "storage='products' applies Gaussian and polynomial kernels to stored distances "
                f"and inner products; these kernel families have no such form: {fams}. Use "
                "storage='dense' or 'on_the_fly'."
            )
        n = functions.n_samples
        mat_d, mat_g, count = product_matrices(plan)
        check_memory(
            _products_bytes(count, n), max_memory,
            f"The distances and inner products of {plan.n_groups} feature groups on {n} samples",
            "Use storage='on_the_fly' (stores only X), a subsample of the rows, or pass "
            "max_memory=<bytes> to raise the limit.",
        )
        P = np.empty((count, n, n))
        # No fill first: every entry is written once by the build below, on
        # its threads (where the system grants NumPy's huge-page advice, the
        # first writes fault in a few hundred pages). With the lower triangle
        # written beside the upper one, the build took 0.197 s at satellite
        # 80 % (two 5,148 x 5,148 matrices) where fill, build and mirror took
        # 0.25 s (benchmarks/README.md at commit 89ee8cc, "Both triangles in
        # one pass").
        stop = current_flag()
        groups = np.arange(plan.n_groups, dtype=np.int64)
        narrow, wide = plan.split(groups)
        fp, fi = plan.feat_ptr, plan.feat_idx
        if narrow.size:
            _products.products_sym(functions.X, functions.XT, fp, fi, narrow, mat_d, mat_g, P,
                                   stop)
        for g in wide.tolist():
            C = functions.centred(g)
            need_d, need_g = bool(mat_d[g] >= 0), bool(mat_g[g] >= 0)
            for r0, c0, Pb, Qb in _gram._blocks(C, C, True, need_d, need_g):
                if stop[0] != 0:
                    break
                nr, nc = max(Pb.shape[0], Qb.shape[0]), max(Pb.shape[1], Qb.shape[1])
                t = _gram._n_tasks(nr, nc, 1, True)
                if t > 1:
                    _products.products_block_par(Pb, Qb, C.Xc, C.sq, r0, c0, mat_d[g],
                                                 mat_g[g], P, t)
                else:
                    _products.products_block(Pb, Qb, C.Xc, C.sq, r0, c0, mat_d[g], mat_g[g], P)
        check(stop)
        # The narrow groups' matrices come out whole; the wide groups' blocks
        # are upper-triangle ones.
        upper = [int(m) for g in wide.tolist() for m in (mat_d[g], mat_g[g]) if m >= 0]
        if upper:
            _gram.mirror_slices(P, np.array(upper, dtype=np.int64))
        ri, rf = _recipes(plan, 1.0 / functions.scales)
        ar = np.arange(n, dtype=np.int64)
        diag_raw = _products.product_diagonals(P, ri, rf, ar, np.empty((plan.n_kernels, n)))
        return cls(P, ri, rf, diag_raw, ar, np.ones(plan.n_kernels), functions, owner=True)

    def view(self, idx, factors, functions=None, normalize=None):
        """The storage of the points ``idx`` of this one, kernel ``k`` scaled by ``factors[k]``."""
        return type(self)(self.P, self.ri, self.rf, self.diag_raw, self.idx[idx],
                          self.factors * factors, functions)

    @property
    def nbytes(self):
        """Bytes held: the products (in the storage that built them), indices and diagonals."""
        own = self.idx.nbytes + self._diag.nbytes
        if self.owner:
            own += self.P.nbytes + self.diag_raw.nbytes
        return int(own)

    @property
    def _n_bank(self):
        return self.P.shape[1]

    def row_source(self, w):
        """``(P, weights, kernels, gidx, ri, rf, diag_raw)``: what combines rows of ``K(w)``.

        Row ``i`` is :func:`mklopt._jit.products.product_row`; its diagonal
        :func:`~mklopt._jit.products.product_diag` over ``diag_raw``.
        """
        ks, wv = self._active(w)
        return self.P, wv, ks, self.idx, self.ri, self.rf, self.diag_raw

    def rows(self, w, idx, out):
        ks, wv = self._active(w)
        stop = current_flag()
        _products.product_rows(self.P, self.ri, self.rf, wv, ks, self.idx, idx, out, stop)
        check(stop)
        return out

    def combine(self, w, out):
        ks, wv = self._active(w)
        stop = current_flag()
        _products.product_combine(self.P, self.ri, self.rf, wv, ks, self.idx, out, stop)
        check(stop)
        return out

    def q_from_features(self, n_support, n_kernels):
        """Whether the forms are computed from the features (the views' cost model).

        :func:`~mklopt.kernels.views.q_by_features`, when the storage knows
        its kernel functions. That model charges the gather of every
        kernel's lines, where the products read one matrix per feature
        group; the features still win from about 200 support points on,
        because :func:`~mklopt._jit.groups.quad_forms_by_rows` runs in
        parallel and reads the features in order, while
        :func:`~mklopt._jit.products.product_quad_forms` is serial and
        gathers scattered columns. Measured on one satellite pair of 662 rows
        with 68 kernels on 4 groups (2 cores, medians of 7, both paths
        forced in turn in one process; the forms agree to 2e-13): products
        against features 0.27 / 0.34 ms at ``|S| = 50`` (the one size where
        the products are faster, by 0.07 ms), 3.3 / 1.4 ms at 200,
        17.5 / 7.3 ms at 500, 22.5 / 13.1 ms at 662.
        """
        fn = self.functions
        return fn is not None and q_by_features(fn, n_support, n_kernels, self.n_samples)

    def _gathered_q(self, vg, gS, kernels, stop):
        return _products.product_quad_forms(self.P, self.ri, self.rf, vg, gS, kernels,
                                            np.empty(kernels.size), stop)

    def _raw_blocks(self, kernels, rows, cols, out):
        _products.product_blocks(self.P, self.ri, self.rf, kernels, rows, cols, out)


def products_bytes(functions):
    """Bytes a :class:`ProductStorage` of ``functions`` stores (with one ``n x n`` work matrix)."""
    return _products_bytes(product_matrices(functions.plan)[2], functions.n_samples)

