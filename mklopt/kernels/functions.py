"""Kernels as functions: specs, normalisation constants and the points they are read on.

A :class:`KernelFunctions` is what a fitted model keeps of its kernels. It
holds no kernel matrix: only the specs, the normalisation constants computed
on the training set and a set of points ``X`` (all training points inside a
bank, only the support vectors inside a predictor). From these it evaluates

* single kernels between new points and ``X`` (:meth:`KernelFunctions.cross`),
* the combined kernel ``sum_k w_k K_k(X_new, X)``
  (:meth:`KernelFunctions.combine_cross`), which is what prediction needs,
* the training matrices on ``X`` itself (:meth:`KernelFunctions.matrices`),
  which a dense bank stores.

All of it goes through a columnar plan that groups the specs by feature
subset, so that all Gaussian widths on one subset share one distance
evaluation, and a bank of a million kernels is as cheap to plan as a bank of
ten. Groups on few features are summed directly by the jitted routines of
:mod:`mklopt._jit.groups`; groups with many features for their number of
kernels (:func:`mklopt._jit.gram.is_wide`) take one matrix product per group
through BLAS (:mod:`mklopt._jit.gram`), on features centred on the mean of
``X``, which is cached per group.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._interrupt import check, current_flag
from .._jit import gram as _gram
from .._jit import groups as _groups
from .._jit import readonly
from .._memory import check_memory
from .._validation import check_choice, check_matrix, check_vector, check_weights
from .families import family_of

__all__ = ["KernelFunctions"]


def _check_specs(specs, n_features):
    """A tuple of specs, each valid for ``n_features`` features (TypeError/ValueError)."""
    if not isinstance(specs, (str, bytes, Sequence)) and family_of(specs) is not None:
        specs = (specs,)
    if isinstance(specs, (str, bytes)) or not isinstance(specs, Sequence):
        raise TypeError(
            f"specs must be a sequence of kernel specs (rbf, poly, linear, grid, or a "
            f"registered family's), got {type(specs).__name__}"
        )
    specs = tuple(specs)
    if not specs:
        raise ValueError("specs is empty; give at least one kernel spec, e.g. grid(X.shape[1])")
    top = -1
    for k, s in enumerate(specs):
        if family_of(s) is None:
            raise TypeError(
                f"specs[{k}] must be a kernel spec made by rbf(), poly(), linear() or a "
                f"registered kernel family, got {type(s).__name__}"
            )
        feats = s.features
        if feats is None:
            continue
        if type(feats[0]) is not int:
            # column names or an open slice: resolved when an estimator fits
            raise ValueError(
                f"specs[{k}] = {s!r} names its columns by name or by an open slice; those "
                "are resolved by an estimator fitted on a DataFrame with these columns "
                "(or by mklopt.kernels.columns.resolve_specs(specs, n_features, "
                "feature_names)); a KernelBank needs integer column indices"
            )
        if max(feats) > top:
            top = max(feats)
            if top >= n_features:
                raise ValueError(
                    f"specs[{k}] = {s!r} uses feature {top} but X has only "
                    f"{n_features} features (indices 0..{n_features - 1})"
                )
    return specs


#: ``kind`` of a kernel evaluated by its family's NumPy ``block`` (never
#: passed to the jitted routines: its groups are left out of ``split``).
HOST = -1
#: Entries of one block of a NumPy-evaluated kernel in ``host_quad_forms`` (32 MiB).
_HOST_BLOCK = 2**22
#: Upper-triangle entries (over all kernels) up to which ``matrices`` builds
#: the bank on one thread (``_jit.groups.kernel_sym_serial``): below it the
#: threads save a few milliseconds, and the serial loop is what a small first
#: fit after install compiles (docs/benchmarks.md, "What compiles on the default fit's
#: path", from benchmarks/results/compile_default_fit.json).
SERIAL_SYM_ENTRIES = 4_000_000


class _Plan:
    """Specs grouped by feature subset, as flat arrays for the jitted routines.

    Group ``g`` reads features ``feat_idx[feat_ptr[g]:feat_ptr[g+1]]`` (in the
    spec's order) and holds kernels ``kern_idx[kern_ptr[g]:kern_ptr[g+1]]``
    (Gaussians by decreasing width first, then the others in spec order);
    ``kind``, ``param`` and ``offset`` describe each kernel (see
    :mod:`mklopt._jit.groups`), ``group_of[k]`` is its group and
    ``features[g]`` the group's subset (None for all features).
    """

    def __init__(self, specs, n_features):
        m = len(specs)
        index = {}
        group_of = np.empty(m, dtype=np.int64)
        kind = np.empty(m, dtype=np.int64)
        param = np.empty(m)
        offset = np.zeros(m)
        self.families = [family_of(s) for s in specs]
        for k, (s, fam) in enumerate(zip(specs, self.families, strict=True)):
            code = fam.jit_code(s)
            if code is None:
                # A family without a jitted code gets groups of its own.
                group_of[k] = index.setdefault((HOST, s.features), len(index))
                kind[k], param[k] = HOST, 0.0
            else:
                group_of[k] = index.setdefault(s.features, len(index))
                kind[k], param[k], offset[k] = code
        self.features = [key[1] if type(key) is tuple and key[:1] == (HOST,) else key
                         for key in index]
        self.is_host = np.array(
            [type(key) is tuple and key[:1] == (HOST,) for key in index], dtype=bool
        )
        G = len(self.features)
        sizes = [n_features if f is None else len(f) for f in self.features]
        self.feat_ptr = np.zeros(G + 1, dtype=np.int64)
        np.cumsum(sizes, out=self.feat_ptr[1:])
        self.feat_idx = np.empty(int(self.feat_ptr[-1]), dtype=np.int64)
        for g, f in enumerate(self.features):
            a, b = self.feat_ptr[g], self.feat_ptr[g + 1]
            self.feat_idx[a:b] = np.arange(n_features) if f is None else f
        # Within a group: Gaussians by increasing gamma (decreasing width),
        # so that one exp serves the widths 2^s apart (see _jit.groups._kernel_chunk),
        # then the other kernels in spec order.
        gauss = kind == _groups.GAUSSIAN
        key = np.where(gauss, -param, np.inf)
        order = np.lexsort((np.arange(m), key, group_of))
        self.kern_idx = np.ascontiguousarray(order, dtype=np.int64)
        self.kern_ptr = np.zeros(G + 1, dtype=np.int64)
        np.cumsum(np.bincount(group_of, minlength=G), out=self.kern_ptr[1:])
        self.group_of = group_of
        self.kind, self.param, self.offset = kind, param, offset
        self.n_groups, self.n_kernels = G, m
        self.n_group_features = np.diff(self.feat_ptr)
        self.n_group_kernels = np.diff(self.kern_ptr)

    def arrays(self):
        """``(feat_ptr, feat_idx, kern_ptr, kern_idx, kind, param, offset)``."""
        return (
            self.feat_ptr, self.feat_idx, self.kern_ptr, self.kern_idx,
            self.kind, self.param, self.offset,
        )

    def groups_of(self, kernels):
        """Sorted distinct groups of the given kernel indices (int64)."""
        return np.unique(self.group_of[kernels]).astype(np.int64)

    def split(self, groups):
        """``(narrow, wide)``: the groups summed directly, and those through BLAS.

        Groups of a family without a jitted code are in neither (see
        :meth:`host`). Decided by :func:`mklopt._jit.gram.is_wide` on every call (tests
        lower its thresholds to drive every group through the products).
        """
        groups = groups[~self.is_host[groups]]
        wide = _gram.is_wide(self.n_group_features[groups], self.n_group_kernels[groups])
        return groups[~wide], groups[wide]

    def host(self, groups):
        """The groups among ``groups`` evaluated by their family's NumPy code."""
        return groups[self.is_host[groups]]

    def kernels_of(self, g):
        """The kernels of group ``g`` (int64 view)."""
        return self.kern_idx[self.kern_ptr[g] : self.kern_ptr[g + 1]]

    def group_features(self, g):
        """The features of group ``g`` as an index array, or None for all of them."""
        return None if self.features[g] is None else self.feat_idx[
            self.feat_ptr[g] : self.feat_ptr[g + 1]
        ]


def _check_indices(idx, name, size, *, allow_empty=False):
    """1-D int64 indices into ``range(size)`` (negative indices refused)."""
    a = np.asarray(idx)
    if a.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of indices, got shape {a.shape}")
    if a.size == 0:
        if allow_empty:
            return np.zeros(0, dtype=np.int64)
        raise ValueError(f"{name} is empty")
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must hold integer indices, got dtype {a.dtype}")
    a = np.ascontiguousarray(a, dtype=np.int64)
    lo, hi = int(a.min()), int(a.max())
    if lo < 0 or hi >= size:
        raise ValueError(f"{name} must hold indices in [0, {size}), got values in [{lo}, {hi}]")
    return a


def _host_values(plan, specs, k):
    return plan.families[k].values(specs[k])


def _host_cols(plan, k, X):
    f = plan.features[plan.group_of[k]]
    return X if f is None else X[:, list(f)]


def _host_diag(plan, specs, k, X):
    """``kappa_k(x_i, x_i)`` from the family's NumPy ``diag``, checked."""
    fam = plan.families[k]
    d = np.asarray(fam.diag(_host_cols(plan, k, X), **_host_values(plan, specs, k)),
                   dtype=np.float64)
    if d.shape != (X.shape[0],):
        raise ValueError(
            f"kernel family {fam.name!r}: diag() returned shape {d.shape}, expected "
            f"({X.shape[0]},)"
        )
    return d


def _host_block(plan, specs, k, A, B, sym=False):
    """The raw kernel ``kappa_k(A, B)`` from the family's NumPy ``block``, checked.

    ``sym``: ``A`` is ``B``; the result is made exactly symmetric from its
    upper triangle (as the jitted routines mirror theirs).
    """
    fam = plan.families[k]
    K = np.asarray(
        fam.block(_host_cols(plan, k, A), _host_cols(plan, k, B), **_host_values(plan, specs, k)),
        dtype=np.float64,
    )
    if K.shape != (A.shape[0], B.shape[0]):
        raise ValueError(
            f"kernel family {fam.name!r}: block() returned shape {K.shape}, expected "
            f"{(A.shape[0], B.shape[0])}"
        )
    if sym:
        K = np.require(K, requirements=("C", "W"))
        if K.base is not None and not K.flags.owndata:
            K = K.copy()  # never write into an array the family keeps
        _groups.mirror_upper(K)
    return K


def _readonly(a):
    a = np.ascontiguousarray(a)
    if a.flags.writeable:
        a = a.copy()
        a.flags.writeable = False
    return a


class KernelFunctions:
    """Kernel specs with their normalisation constants, evaluated against points ``X``.

    ``K_k(a, b) = kappa_k(a, b) / scales[k]`` for the spec ``kappa_k``. This
    is the part of a bank that prediction and saved models need; it stores
    no kernel matrix.

    Parameters
    ----------
    specs : sequence of specs
        From :func:`~mklopt.kernels.rbf`, :func:`~mklopt.kernels.poly`,
        :func:`~mklopt.kernels.linear` or :func:`~mklopt.kernels.grid`.
    scales : array-like of shape (n_kernels,)
        Positive normalisation constants (for example the traces of the raw
        kernels on the training set, see :meth:`from_data`).
    X : array-like of shape (n_samples, n_features)
        The points the kernels are evaluated against (training points, or
        the support vectors of a model).

    Attributes
    ----------
    specs : tuple of specs
    scales : ndarray of shape (n_kernels,), read-only
    X : ndarray of shape (n_samples, n_features), read-only
    n_kernels, n_samples, n_features : int

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import KernelFunctions, rbf, linear
    >>> X = np.random.default_rng(0).standard_normal((6, 2))
    >>> fn = KernelFunctions.from_data(X, [rbf(1.0), linear()])
    >>> float(fn.scales[0])   # a Gaussian kernel has trace n
    6.0
    >>> K = fn.matrices()
    >>> bool(np.allclose(np.trace(K, axis1=1, axis2=2), 1.0))
    True
    >>> sv = fn.take([0, 3])  # what a model keeps: two support vectors
    >>> sv.combine_cross(X[:2], [0.5, 0.5]).shape
    (2, 2)
    """

    def __init__(self, specs, scales, X):
        X = check_matrix(X, "X")
        self.specs = _check_specs(specs, X.shape[1])
        self.n_kernels = len(self.specs)
        scales = check_vector(scales, "scales", size=self.n_kernels)
        if np.any(scales <= 0.0):
            raise ValueError("scales must be positive (one normalisation constant per kernel)")
        self.scales = _readonly(scales)
        self.X = _readonly(X)
        self.n_samples, self.n_features = (int(s) for s in self.X.shape)
        self._plan = None
        self._XT = None
        self._centred = {}

    def __getstate__(self):
        # The centred copies are a cache, rebuilt on first use: not shipped
        # with a pickled model (or to a Dask worker).
        state = dict(self.__dict__)
        state["_centred"] = {}
        return state

    @classmethod
    def from_data(cls, X, specs, normalize="trace", _plan=None):
        """Kernel functions normalised on the training points ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points.
        specs : sequence of specs
        normalize : {"trace", "diagonal", None}, default="trace"
            ``"trace"``: ``scales[k]`` is the trace of the raw kernel ``k``
            on ``X``, so every kernel has unit trace there (a raw kernel with
            zero trace, only possible for a linear kernel on an all-zero
            feature, keeps scale 1). ``"diagonal"``: ``scales[k]`` is the
            trace divided by ``n_samples``, so every kernel has a unit mean
            diagonal (Gaussian kernels are left as they are). None: all
            scales are 1.

        Returns
        -------
        KernelFunctions
        """
        # (``_plan``: the plan of these specs on this many features, when the
        # caller has it, as a bank's view has its bank's: the plan depends on
        # the specs only, and building it is most of the cost on few points.)
        X = check_matrix(X, "X")
        specs = _check_specs(specs, X.shape[1])
        check_choice(normalize, "normalize", ("trace", "diagonal", None))
        scales = np.ones(len(specs))
        plan = _plan
        if normalize is not None:
            if plan is None:
                plan = _Plan(specs, X.shape[1])
            _groups.raw_traces(readonly(X), *plan.arrays(), scales)
            for g in np.flatnonzero(plan.is_host).tolist():
                for k in plan.kernels_of(g).tolist():
                    scales[k] = float(np.sum(_host_diag(plan, specs, k, X)))
            if normalize == "diagonal":
                scales /= X.shape[0]
            scales[~(scales > 0.0)] = 1.0
        fn = cls(specs, scales, X)
        fn._plan = plan  # the same specs and features: built once (None: on first use)
        return fn

    # ------------------------------------------------------------ internals
    @property
    def plan(self):
        """The columnar plan of the specs (built on first use)."""
        if self._plan is None:
            self._plan = _Plan(self.specs, self.n_features)
        return self._plan

    @property
    def XT(self):
        """``X`` transposed, C-contiguous (built on first use)."""
        if self._XT is None:
            # Always a copy: for a single-row X, X.T is already C-contiguous
            # and would stay a read-only view, and numba compiles read-only
            # arguments separately (a second build of every kernel routine).
            self._XT = np.array(self.X.T, order="C")
        return self._XT

    def centred(self, g):
        """Group ``g``'s features of ``X`` centred on their mean (a ``gram.Centred``).

        Cached while the cache stays within twice the size of ``X`` plus
        16 MiB (a grid's all-feature group costs one copy of ``X``); beyond
        that, built on each call (``O(n |F|)``, small beside the product).
        """
        c = self._centred.get(g)
        if c is None:
            c = _gram.Centred(self.X, self.plan.group_features(g))
            used = sum(v.nbytes for v in self._centred.values())
            if used + c.nbytes <= 2 * self.X.nbytes + 16 * 2**20:
                self._centred[g] = c
        return c

    def _wide_new(self, g, X_new):
        """``(A, B)`` of :mod:`mklopt._jit.gram` for new points against ``X``."""
        B = self.centred(g)
        return B.like(X_new, self.plan.group_features(g)), B

    def _check_new(self, X_new, name="X_new"):
        X_new = check_matrix(X_new, name)
        if X_new.shape[1] != self.n_features:
            raise ValueError(
                f"{name} has {X_new.shape[1]} features but the kernels were built on "
                f"{self.n_features}"
            )
        return readonly(X_new)  # as self.X: one build of each cross-kernel routine

    def _slots(self, kernels):
        """Unique kernels, the slot map for :mod:`_jit.groups`, and the groups to visit."""
        uniq, first = np.unique(kernels, return_index=True)
        slot = np.full(self.n_kernels, -1, dtype=np.int64)
        slot[uniq] = np.arange(uniq.size)
        return uniq, first, slot, self.plan.groups_of(uniq)

    def weights_over_scales(self, w):
        """``w / scales`` (zero weights stay exactly zero) and the groups they touch."""
        wk = np.asarray(w, dtype=np.float64) / self.scales
        nz = np.flatnonzero(wk)
        return wk, self.plan.groups_of(nz)

    # ------------------------------------------- families without jit code
    def host_slices(self, A, B, sym, inv_scale, slot, groups, out):
        """``out[slot[k]] = kappa_k(A, B) * inv_scale[k]`` for the NumPy-evaluated kernels.

        Only the kernels of the host groups among ``groups`` (see
        :meth:`_Plan.host`) with ``slot[k] >= 0`` are written; the jitted
        groups are the caller's. ``A``/``B`` hold all features.
        """
        plan = self.plan
        stop = current_flag()
        for g in plan.host(groups).tolist():
            for k in plan.kernels_of(g).tolist():
                if slot[k] >= 0:
                    out[slot[k]] = _host_block(plan, self.specs, k, A, B, sym) * inv_scale[k]
                    check(stop)
        return out

    def host_combined(self, A, B, sym, wk, groups, out):
        """``out += sum_k wk[k] kappa_k(A, B)`` over the NumPy-evaluated kernels of ``groups``."""
        plan = self.plan
        stop = current_flag()
        for g in plan.host(groups).tolist():
            for k in plan.kernels_of(g).tolist():
                if wk[k] != 0.0:
                    out += wk[k] * _host_block(plan, self.specs, k, A, B, sym)
                    check(stop)
        return out

    def host_quad_forms(self, support, vS, inv_scale, slot, groups, q):
        """``q[slot[k]] = vS' K_k[S, S] vS`` for the NumPy-evaluated kernels of ``groups``."""
        plan = self.plan
        hosts = plan.host(groups)
        if hosts.size == 0:
            return q
        XS = self.X[support]
        s = XS.shape[0]
        # Blocks of rows of K[S, S] of at most _HOST_BLOCK entries: a large
        # support never holds |S|^2 numbers at once.
        step = max(1, _HOST_BLOCK // max(s, 1))
        stop = current_flag()
        for g in hosts.tolist():
            for k in plan.kernels_of(g).tolist():
                if slot[k] >= 0:
                    total = 0.0
                    for i0 in range(0, s, step):
                        Kb = _host_block(plan, self.specs, k, XS[i0 : i0 + step], XS)
                        total += float(vS[i0 : i0 + step] @ (Kb @ vS))
                        check(stop)
                    q[slot[k]] = total * inv_scale[k]
        return q

    # --------------------------------------------------------- evaluation
    def cross(self, X_new, kernels=None, max_memory=None):
        """Single kernels between new points and ``X``.

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)
        kernels : array-like of int, optional
            Which kernels (default: all), in the order wanted (repeats allowed).
        max_memory : float or None, default=None
            Byte limit for the result (default: 80% of the available memory).

        Returns
        -------
        ndarray of shape (len(kernels), n_new, n_samples), float64
            ``kappa_k(X_new, X) / scales[k]``; on ``X_new = X`` it reproduces
            :meth:`matrices` exactly for the groups summed directly, and to
            rounding (other blocks of the BLAS products, about 1e-15 of the
            kernel's largest value) for the groups through the products.
        """
        X_new = self._check_new(X_new)
        ks = (
            np.arange(self.n_kernels, dtype=np.int64)
            if kernels is None
            else _check_indices(kernels, "kernels", self.n_kernels)
        )
        n_new, n = X_new.shape[0], self.n_samples
        check_memory(
            ks.size * n_new * n * 8,
            max_memory,
            f"Cross kernels ({ks.size} kernels, {n_new} x {n})",
            "Ask for fewer kernels or fewer points at a time, or use combine_cross.",
        )
        uniq, _, slot, groups = self._slots(ks)
        out = np.empty((uniq.size, n_new, n))
        narrow, wide = self.plan.split(groups)
        inv = 1.0 / self.scales
        stop = current_flag()
        if narrow.size:
            _groups.kernel_cross(X_new, self.XT, *self.plan.arrays(), inv, slot, narrow, out,
                                 stop)
        for g in wide.tolist():
            A, B = self._wide_new(g, X_new)
            _gram.slices(A, B, False, self.plan.arrays(), g, inv, slot, out, stop)
        check(stop)
        self.host_slices(X_new, self.X, False, inv, slot, groups, out)
        if uniq.size == ks.size and np.array_equal(uniq, ks):
            return out
        return out[np.searchsorted(uniq, ks)]

    def combine_cross(self, X_new, w, columns=None):
        """Combined kernel ``sum_k w_k K_k(X_new, X[columns])``.

        Only kernels with ``w_k > 0`` and only the requested columns are
        evaluated; no per-kernel matrix is formed. This is what prediction
        uses.

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)
        w : array-like of shape (n_kernels,)
            Non-negative kernel weights, not all zero.
        columns : array-like of int, optional
            Indices into ``X`` (e.g. the support); default all.

        Returns
        -------
        ndarray of shape (n_new, len(columns)), float64
        """
        X_new = self._check_new(X_new)
        w = check_weights(w, self.n_kernels, "w")
        cols = None
        if columns is not None:
            cols = _check_indices(columns, "columns", self.n_samples, allow_empty=True)
        out = np.empty((X_new.shape[0], self.n_samples if cols is None else cols.size))
        if out.size == 0:
            out[...] = 0.0
            return out
        wk, groups = self.weights_over_scales(w)
        return self.combined_cross(X_new, None, wk, groups, out, cols)

    def combined_cross(self, X_new, rows, wk, groups, out, cols=None):
        """``out = sum_k wk[k] kappa_k(A, X[cols])``, written, without checks.

        ``A`` is ``X_new``, or ``X[rows]`` when ``X_new`` is None (the rows
        of an on-the-fly storage: the product path then reuses the cached
        centred rows). The narrow groups are summed first, then the wide
        ones in plan order. Raises :class:`mklopt._interrupt.Stopped` when
        the current run is stopped part-way (``out`` is then incomplete).
        """
        narrow, wide = self.plan.split(groups)
        stop = current_flag()
        if narrow.size:  # writes every entry of out
            XA = X_new if X_new is not None else readonly(np.ascontiguousarray(self.X[rows]))
            XT = self.XT if cols is None else np.ascontiguousarray(self.XT[:, cols])
            _groups.combined_cross(XA, XT, *self.plan.arrays(), wk, narrow, out, stop)
        else:
            out[...] = 0.0
        for g in wide.tolist():
            C = self.centred(g)
            A = C.take(rows) if X_new is None else C.like(X_new, self.plan.group_features(g))
            B = C if cols is None else C.take(cols)
            _gram.combined(A, B, False, self.plan.arrays(), g, wk, out, stop)
        check(stop)
        if self.plan.is_host.any():
            XA = X_new if X_new is not None else self.X[rows]
            self.host_combined(XA, self.X if cols is None else self.X[cols], False, wk, groups,
                               out)
        return out

    def matrices(self, kernels=None, dtype=np.float64, out=None):
        """The normalised kernel matrices on ``X`` (exactly symmetric).

        Parameters
        ----------
        kernels : array-like of int, optional
            Distinct kernel indices (default: all), in the order wanted.
        dtype : {np.float64, np.float32}, default=np.float64
            Storage type of the result; arithmetic is float64.
        out : ndarray of shape (len(kernels), n, n), optional
            C-contiguous array of that dtype to write into.

        Returns
        -------
        ndarray of shape (len(kernels), n_samples, n_samples)
        """
        ks = (
            np.arange(self.n_kernels, dtype=np.int64)
            if kernels is None
            else _check_indices(kernels, "kernels", self.n_kernels)
        )
        if np.unique(ks).size != ks.size:
            raise ValueError("kernels must not repeat a kernel")
        n = self.n_samples
        if out is None:
            out = np.empty((ks.size, n, n), dtype=dtype)
        slot = np.full(self.n_kernels, -1, dtype=np.int64)
        slot[ks] = np.arange(ks.size)
        groups = self.plan.groups_of(ks)
        narrow, wide = self.plan.split(groups)
        inv = 1.0 / self.scales
        stop = current_flag()
        if narrow.size:
            sym = (_groups.kernel_sym if n * (n + 1) // 2 * ks.size > SERIAL_SYM_ENTRIES
                   else _groups.kernel_sym_serial)
            sym(self.X, self.XT, *self.plan.arrays(), inv, slot, narrow, out, stop)
        for g in wide.tolist():
            C = self.centred(g)
            _gram.slices(C, C, True, self.plan.arrays(), g, inv, slot, out, stop)
        check(stop)  # a stopped fit's bank is incomplete: raise, and it is dropped
        self.host_slices(self.X, self.X, True, inv, slot, groups, out)
        return out

    def diag(self, w):
        """Diagonal of the combined kernel ``sum_k w_k K_k(X, X)``, shape (n_samples,)."""
        w = check_weights(w, self.n_kernels, "w")
        wk, groups = self.weights_over_scales(w)
        plan = self.plan
        out = _groups.combined_diag(self.X, *plan.arrays(), wk, groups[~plan.is_host[groups]],
                                    np.empty(self.n_samples))
        for g in plan.host(groups).tolist():
            for k in plan.kernels_of(g).tolist():
                if wk[k] != 0.0:
                    out += wk[k] * _host_diag(plan, self.specs, k, self.X)
        return out

    # ---------------------------------------------------------- sub-sets
    def take(self, rows):
        """The same kernels evaluated against ``X[rows]`` (scales kept)."""
        idx = _check_indices(rows, "rows", self.n_samples)
        return KernelFunctions(self.specs, self.scales, self.X[idx])

    def subset(self, kernels):
        """Only the given kernels (in that order), with their scales."""
        idx = _check_indices(kernels, "kernels", self.n_kernels)
        return KernelFunctions([self.specs[k] for k in idx.tolist()], self.scales[idx], self.X)

    @property
    def nbytes(self):
        """Bytes held (the points and the scales)."""
        return int(self.X.nbytes + self.scales.nbytes)

    def __repr__(self):
        return (
            f"KernelFunctions(n_kernels={self.n_kernels}, n_samples={self.n_samples}, "
            f"n_features={self.n_features})"
        )
