"""Kernels computed from the features whenever they are read (``storage="on_the_fly"``).

Nothing ``n x n x m`` is stored; every entry is computed from the training
features when asked for, in parallel, sharing one distance evaluation per
feature group (one BLAS product per block of rows for groups with many
features, :func:`mklopt._jit.gram.is_wide`, as for the dense build). Groups
on one or two features whose points take few distinct values (binary,
ordinal, integer features) are evaluated once on their distinct values and
read from a small table afterwards, so per-feature kernels cost O(1) per
entry. The verbs are those of :mod:`mklopt.kernels.storage`.
"""

from __future__ import annotations

import weakref

import numpy as np

from .._interrupt import check, current_flag
from .._jit import gram as _gram
from .._jit import groups as _groups
from .._jit import readonly
from .._threads import CallThreads
from .functions import KernelFunctions

#: The threads of the quadratic forms over a support's rows, per call: the
#: work is support rows squared times kernels; below about a millisecond of
#: it, one thread.
QUAD_THREADS = CallThreads("quad_forms_by_rows", min_work=2**20)

__all__ = ["OnTheFlyStorage", "table_share"]

# A feature group is read from a table of its distinct values when it has at
# most this many features, at most n / _TABLE_RATIO distinct points, and its
# tables fit in _TABLE_BYTES.
_TABLE_MAX_FEATURES = 2
_TABLE_RATIO = 4
_TABLE_BYTES = 64 * 2**20
_TABLE_MIN_SAMPLES = 64
#: Table groups are merged while their product of distinct values stays this small
#: (a merged table row, 2 KiB, stays in L1).
_MERGE_VALUES = 256
#: The coded-group arguments of ``combined_sym`` when no table group is in use.
_NO_CODES = np.zeros((0, 1), dtype=np.int64)
_NO_TABLES = np.zeros((0, 1, 1))


class _Table:
    """One feature group evaluated on its distinct points.

    ``codes[i]`` is the distinct point of sample ``i``; ``T[j]`` the
    normalised kernel ``kernels[j]`` between distinct points.
    """

    def __init__(self, fn, g, codes, uniq):
        plan = fn.plan
        self.group = g
        self.kernels = plan.kern_idx[plan.kern_ptr[g] : plan.kern_ptr[g + 1]].copy()
        self.codes = np.ascontiguousarray(codes, dtype=np.int64)
        self.n_values = int(uniq.shape[0])
        # The same routine and features as the direct path, on the distinct
        # points: identical kernel values.
        Xu = np.zeros((self.n_values, fn.n_features))
        feats = list(plan.features[g]) if plan.features[g] is not None else slice(None)
        Xu[:, feats] = uniq
        sub = KernelFunctions([fn.specs[k] for k in self.kernels], fn.scales[self.kernels], Xu)
        self.T = sub.matrices()

    @property
    def nbytes(self):
        return int(self.T.nbytes + self.codes.nbytes)


#: ``_table_groups`` per kernel functions object: the ``"auto"`` rule's
#: :func:`table_share` and the on-the-fly storage built after it share one
#: pass of ``np.unique`` over the features (0.4 s at n = 200,000).
_TABLE_GROUPS = weakref.WeakKeyDictionary()


def _table_groups(fn):
    """``(group, codes, distinct points)`` of the groups read from tables, in order.

    A group qualifies with at most :data:`_TABLE_MAX_FEATURES` features, at
    most ``n / _TABLE_RATIO`` distinct points, and while all tables so far
    stay within :data:`_TABLE_BYTES`. Computed once per ``fn`` (its
    features and plan do not change).
    """
    found = _TABLE_GROUPS.get(fn)
    if found is None:
        found = _TABLE_GROUPS[fn] = _find_table_groups(fn)
    return found


def _find_table_groups(fn):
    plan = fn.plan
    n = fn.n_samples
    if n < _TABLE_MIN_SAMPLES:
        return []
    found, used = [], 0
    for g in range(plan.n_groups):
        nf = int(plan.feat_ptr[g + 1] - plan.feat_ptr[g])
        if nf > _TABLE_MAX_FEATURES:
            continue
        Xg = fn.X[:, plan.feat_idx[plan.feat_ptr[g] : plan.feat_ptr[g + 1]]]
        uniq, codes = np.unique(Xg, axis=0, return_inverse=True)
        u = uniq.shape[0]
        m_g = int(plan.kern_ptr[g + 1] - plan.kern_ptr[g])
        size = m_g * u * u * 8
        if u * _TABLE_RATIO > n or used + size > _TABLE_BYTES:
            continue
        found.append((g, codes.ravel(), uniq))
        used += size
    return found


def table_share(functions):
    """Share of the kernels that :class:`OnTheFlyStorage` would read from tables.

    What the ``"auto"`` policy (:func:`mklopt.kernels.auto_storage`) weighs,
    found without building the tables: the same test as the storage's.

    Parameters
    ----------
    functions : KernelFunctions

    Returns
    -------
    float
        In [0, 1]; 0 when no group qualifies.
    """
    plan = functions.plan
    n_table = sum(int(plan.kern_ptr[g + 1] - plan.kern_ptr[g])
                  for g, _, _ in _table_groups(functions))
    return n_table / max(1, functions.n_kernels)


class OnTheFlyStorage:
    """Kernels computed from the features whenever they are read.

    Parameters
    ----------
    functions : KernelFunctions
        Specs, scales and the training points.
    tables : bool, default=True
        Read feature groups with few distinct values from small tables (see
        the module notes).

    Notes
    -----
    ``rows`` costs ``O(len(idx) n (|F_g| + a_g))`` summed over the groups
    with active kernels (``a_g`` of them in group ``g``); ``quad_forms``
    ``O(|S|^2 / 2 (|F_g| + m_g))`` over all groups, parallel over groups
    when there are many and over rows of the support when there are few.
    Table groups cost ``O(1)`` per entry and ``O(|S| + u^2)`` per kernel
    for ``q``.
    """

    name = "on_the_fly"

    def __init__(self, functions, tables=True):
        self.fn = functions
        self.n_kernels, self.n_samples = functions.n_kernels, functions.n_samples
        plan = functions.plan
        self._tables = self._find_tables() if tables else []
        self._direct = np.ones(self.n_kernels, dtype=bool)
        for t in self._tables:
            self._direct[t.kernels] = False
        self._direct_idx = np.flatnonzero(self._direct)
        self._direct_groups = plan.groups_of(self._direct_idx)
        self._inv = 1.0 / functions.scales
        self._tables_cache = None  # (w, codes, tables) of the last weights read

    def _find_tables(self):
        return [_Table(self.fn, g, codes, uniq) for g, codes, uniq in _table_groups(self.fn)]

    def view(self, idx, factors, functions=None, normalize=None):
        """Kernels computed on the fly from the view's own ``functions`` (built on its points)."""
        return None if functions is None else type(self)(functions)

    @property
    def nbytes(self):
        return int(self.fn.nbytes + self.fn.XT.nbytes + sum(t.nbytes for t in self._tables))

    @property
    def table_share(self):
        """Share of the kernels read from tables (0 when none is)."""
        return (self.n_kernels - self._direct_idx.size) / max(1, self.n_kernels)

    def _direct_weights(self, w):
        wk = np.where(self._direct, w * self._inv, 0.0)
        return wk, self.fn.plan.groups_of(np.flatnonzero(wk))

    def diag(self, w):
        return self.fn.diag(w)

    def _active_tables(self, w):
        """Codes and combined tables ``sum_k w_k T_k`` of the table groups in use.

        Consecutive groups are merged while the product of their numbers of
        distinct values stays within ``_MERGE_VALUES``: the merged code is
        ``c_1 u_2 + c_2`` and the merged table ``T_1 (+) T_2`` (a Kronecker
        sum), so one lookup reads both. The table row of one point stays in
        L1 and the pass over the output reads half as many codes.
        """
        # The row path asks once per block at the same weights: reuse.
        hit = self._tables_cache
        if hit is not None and np.array_equal(hit[0], w):
            return hit[1], hit[2]
        parts = []
        for t in self._tables:
            wt = w[t.kernels]
            if not np.any(wt != 0.0):
                continue
            T = np.tensordot(wt, t.T, axes=1)
            codes = t.codes
            if parts and parts[-1][1].shape[0] * t.n_values <= _MERGE_VALUES:
                c0, T0 = parts[-1]
                u0, u1 = T0.shape[0], t.n_values
                codes = c0 * u1 + codes
                T = (T0[:, None, :, None] + T[None, :, None, :]).reshape(u0 * u1, u0 * u1)
                parts[-1] = (codes, T)
            else:
                parts.append((codes, T))
        if not parts:
            self._tables_cache = (np.array(w, copy=True), None, None)
            return None, None
        u = max(T.shape[0] for _, T in parts)
        Tw = np.zeros((len(parts), u, u))
        codes = np.empty((len(parts), self.n_samples), dtype=np.int64)
        for j, (c, T) in enumerate(parts):
            Tw[j, : T.shape[0], : T.shape[0]] = T
            codes[j] = c
        self._tables_cache = (np.array(w, copy=True), codes, Tw)
        return codes, Tw

    def rows(self, w, idx, out):
        fn = self.fn
        wk, groups = self._direct_weights(w)
        fn.combined_cross(None, idx, wk, groups, out)
        codes, Tw = self._active_tables(w)
        if codes is not None:
            _groups.tables_rows(codes, Tw, idx, out)  # O(rows n): not worth a stop test
        return out

    def combine(self, w, out):
        fn = self.fn
        wk, groups = self._direct_weights(w)
        codes, Tw = self._active_tables(w)
        if codes is None:
            codes, Tw = _NO_CODES, _NO_TABLES
        narrow, wide = fn.plan.split(groups)
        stop = current_flag()
        # Narrow and coded groups in one pass over the upper triangle, the
        # wide groups added to it from their products, then one mirror.
        _groups.combined_sym(fn.X, fn.XT, *fn.plan.arrays(), wk, narrow, codes, Tw, out,
                             not wide.size, stop)
        if wide.size:
            for g in wide.tolist():
                C = fn.centred(g)
                _gram.combined(C, C, True, fn.plan.arrays(), g, wk, out, stop)
            check(stop)
            _groups.mirror_upper(out)
        check(stop)
        fn.host_combined(fn.X, fn.X, True, wk, groups, out)  # families without jit code
        return out

    def quad_forms(self, v, support, kernels=None):
        fn = self.fn
        m = self.n_kernels
        inv = None
        if kernels is None:
            ks = np.arange(m, dtype=np.int64)
        else:
            ks, inv = np.unique(kernels, return_inverse=True)
            inv = inv.ravel()
        q = np.zeros(ks.size)
        pos = np.full(m, -1, dtype=np.int64)
        pos[ks] = np.arange(ks.size)
        S = support
        if S.size == 0:
            return q if inv is None else q[inv]
        vS = np.ascontiguousarray(v[S])
        stop = current_flag()
        # Direct groups: computed from the support's features.
        slot = np.where(self._direct, pos, -1)
        groups = fn.plan.groups_of(np.flatnonzero(slot >= 0))
        narrow, wide = fn.plan.split(groups)
        if narrow.size:
            XS = readonly(np.ascontiguousarray(fn.X[S]))  # the points: read-only everywhere
            XST = np.array(XS.T, order="C")  # a copy: writable, as every XT is
            args = (XS, XST, vS, *fn.plan.arrays(), self._inv, slot, narrow)
            if narrow.size >= 8:
                _groups.quad_forms_by_group(*args, q, stop)
            else:
                n_chunks = int(min(64, max(1, S.size // 16)))
                # Threads only where they pay (mklopt._threads); the chunks,
                # and so the bits, are the same on any number of threads.
                with QUAD_THREADS(S.size * S.size * ks.size):
                    _groups.quad_forms_by_rows(*args, n_chunks, q, stop)
            check(stop)
        plan = fn.plan
        for g in wide.tolist():
            qg = _gram.quad(fn.centred(g).take(S), vS, plan.arrays(), g, self._inv, slot, stop)
            check(stop)
            ks_g = plan.kern_idx[plan.kern_ptr[g] : plan.kern_ptr[g + 1]]
            want = slot[ks_g] >= 0
            q[slot[ks_g[want]]] = qg[want]
        fn.host_quad_forms(S, vS, self._inv, slot, groups, q)  # families without jit code
        # Table groups: aggregate v over the distinct values, then V' T_k V.
        for t in self._tables:
            want = pos[t.kernels]
            sel = want >= 0
            if not sel.any():
                continue
            V = np.bincount(t.codes[S], weights=vS, minlength=t.n_values)
            vals = np.einsum("i,kij,j->k", V, t.T[sel], V)
            q[want[sel]] = vals
        return q if inv is None else q[inv]

    def blocks(self, kernels, rows, cols):
        fn = self.fn
        uniq, inv = np.unique(kernels, return_inverse=True)
        slot = np.full(self.n_kernels, -1, dtype=np.int64)
        slot[uniq] = np.arange(uniq.size)
        out = np.empty((uniq.size, rows.size, cols.size))
        if out.size:
            narrow, wide = fn.plan.split(fn.plan.groups_of(uniq))
            stop = current_flag()
            if narrow.size:
                XA = readonly(np.ascontiguousarray(fn.X[rows]))  # as a cross kernel's X_new
                XBT = np.ascontiguousarray(fn.X[cols].T)
                _groups.kernel_cross(XA, XBT, *fn.plan.arrays(), self._inv, slot, narrow, out,
                                     stop)
            for g in wide.tolist():
                C = fn.centred(g)
                _gram.slices(C.take(rows), C.take(cols), False, fn.plan.arrays(), g,
                             self._inv, slot, out, stop)
            check(stop)
            fn.host_slices(fn.X[rows], fn.X[cols], False, self._inv, slot,
                           fn.plan.groups_of(uniq), out)
        return out if np.array_equal(uniq, kernels) else out[inv.ravel()]
