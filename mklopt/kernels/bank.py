"""KernelBank: the m training kernel matrices, their specs and scales.

The bank is what every oracle reads: ``combine`` builds ``sum_k w_k K_k`` for
the SVM solver, ``quad_forms`` gives ``q_k = v' K_k v`` over the support, and
``cross`` / ``combine_cross`` evaluate the same (identically normalised)
kernels between new points and the training points at prediction time.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np

from .._jit import combine as _combine
from .._jit import kernels as _kern
from .._validation import available_memory, check_choice, check_matrix, check_vector, check_weights
from .specs import RBF, Linear, Poly

__all__ = ["KernelBank"]

_GIB = float(2**30)
# Fraction of the currently available memory a bank may take by default.
_MEMORY_FRACTION = 0.8
# A kernel passes the PSD check when K + _PSD_RTOL * trace(K) * I has a
# Cholesky factor, i.e. (up to rounding) lambda_min(K) >= -_PSD_RTOL * trace(K).
_PSD_RTOL = 1e-8
# Largest |K - K'| allowed, relative to max |K|.
_SYM_RTOL = 1e-8


def _fmt_bytes(b):
    return f"{b / _GIB:.3g} GiB ({int(b):,} bytes)"


def _check_memory(needed, max_memory, what, advice):
    """Raise MemoryError before allocating ``needed`` bytes if over the limit."""
    if max_memory is None:
        avail = available_memory()
        if avail is None:
            return
        limit = _MEMORY_FRACTION * avail
        source = f"{int(_MEMORY_FRACTION * 100)}% of the {_fmt_bytes(avail)} available now"
    else:
        if isinstance(max_memory, bool) or not isinstance(max_memory, numbers.Real):
            raise TypeError(f"max_memory must be a number of bytes or None, got {max_memory!r}")
        if not max_memory > 0:
            raise ValueError(f"max_memory must be > 0 bytes, got {max_memory!r}")
        limit = float(max_memory)
        source = "max_memory"
    if needed > limit:
        raise MemoryError(
            f"{what} needs {_fmt_bytes(needed)} but the limit is {_fmt_bytes(limit)} "
            f"({source}). {advice}"
        )


def _check_dtype(dtype, name="dtype"):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name} must be np.float64 or np.float32, got {dtype!r}") from None
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"{name} must be np.float64 or np.float32, got {dt}")
    return dt


def _check_indices(idx, name, size, *, distinct=False, allow_empty=False):
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
    if distinct and np.unique(a).size != a.size:
        raise ValueError(f"{name} must not hold repeated indices")
    return a


class _Group:
    """Specs on one feature subset, evaluated together to share work."""

    def __init__(self, features):
        self.features = features
        self.rbf_idx, self.sigmas = [], []
        self.gram_idx, self.degrees, self.offsets = [], [], []

    def freeze(self):
        self.rbf_idx = np.asarray(self.rbf_idx, dtype=np.int64)
        self.sigmas = np.asarray(self.sigmas, dtype=np.float64)
        self.gram_idx = np.asarray(self.gram_idx, dtype=np.int64)
        self.degrees = np.asarray(self.degrees, dtype=np.int64)
        self.offsets = np.asarray(self.offsets, dtype=np.float64)
        return self

    def columns(self, X):
        if self.features is None:
            return X
        return np.ascontiguousarray(X[:, list(self.features)])


def _plan(specs):
    """Group spec indices by feature subset (first-seen order)."""
    groups = {}
    for k, s in enumerate(specs):
        g = groups.setdefault(s.features, _Group(s.features))
        if isinstance(s, RBF):
            g.rbf_idx.append(k)
            g.sigmas.append(s.sigma)
        elif isinstance(s, Poly):
            g.gram_idx.append(k)
            g.degrees.append(s.degree)
            g.offsets.append(1.0)
        else:  # Linear
            g.gram_idx.append(k)
            g.degrees.append(1)
            g.offsets.append(0.0)
    return [g.freeze() for g in groups.values()]


def _check_specs(specs, n_features):
    if isinstance(specs, (RBF, Poly, Linear)):
        specs = (specs,)
    if isinstance(specs, (str, bytes)) or not isinstance(specs, Sequence):
        raise TypeError(
            f"specs must be a sequence of kernel specs (rbf, poly, linear, grid), "
            f"got {type(specs).__name__}"
        )
    specs = tuple(specs)
    if not specs:
        raise ValueError("specs is empty; give at least one kernel spec, e.g. grid(X.shape[1])")
    for k, s in enumerate(specs):
        if not isinstance(s, (RBF, Poly, Linear)):
            raise TypeError(
                f"specs[{k}] must be a kernel spec made by rbf(), poly() or linear(), "
                f"got {type(s).__name__}"
            )
        if s.features is not None and max(s.features) >= n_features:
            raise ValueError(
                f"specs[{k}] = {s!r} uses feature {max(s.features)} but X has only "
                f"{n_features} features (indices 0..{n_features - 1})"
            )
    return specs


class KernelBank:
    """The m base kernel matrices of a training set, ready for the MKL oracles.

    Build one with :meth:`from_specs` (kernels evaluated from data; they can
    then be evaluated on new points) or :meth:`from_matrices` (matrices you
    already have). The constructor itself only wires validated parts
    together and is not the public entry point.

    Attributes
    ----------
    K : ndarray of shape (n_kernels, n_samples, n_samples)
        C-contiguous float64 (or float32 on request) normalised kernel
        matrices, ``K[k] = raw_k / scales[k]``. Treat it as read-only.
    n_kernels : int
    n_samples : int
    specs : tuple of specs or None
        The kernel specs (None for user matrices).
    scales : ndarray of shape (n_kernels,)
        Normalisation constants computed on the training set (the trace of
        each raw kernel for ``normalize="trace"``, else ones). A raw kernel
        with zero trace (only possible for an all-zero matrix, e.g. a linear
        kernel on a constant, standardised feature) keeps scale 1.
    X_train : ndarray of shape (n_samples, n_features) or None
        Training inputs, kept for prediction (None for user matrices).

    Notes
    -----
    The kernels are assumed symmetric: ``quad_forms`` reads only the upper
    triangle of ``K[k][S, S]``. Kernels from specs are symmetric exactly;
    :meth:`from_matrices` checks symmetry unless ``check=False``.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import KernelBank, rbf, poly
    >>> X = np.random.default_rng(0).standard_normal((20, 3))
    >>> bank = KernelBank.from_specs(X, [rbf(1.0), rbf(2.0), poly(2)])
    >>> bank.K.shape
    (3, 20, 20)
    >>> round(float(np.trace(bank.K[2])), 12)
    1.0
    >>> bank.combine([0.5, 0.5, 0.0]).shape
    (20, 20)
    """

    def __init__(self, K, scales, specs=None, X_train=None):
        if not isinstance(K, np.ndarray) or K.ndim != 3 or K.shape[1] != K.shape[2]:
            raise ValueError("K must be an (n_kernels, n_samples, n_samples) array")
        if K.dtype not in (np.float64, np.float32) or not K.flags.c_contiguous:
            raise ValueError("K must be C-contiguous float64 or float32")
        self.K = K
        self.n_kernels = int(K.shape[0])
        self.n_samples = int(K.shape[1])
        self.scales = check_vector(scales, "scales", size=self.n_kernels)
        self.specs = None if specs is None else tuple(specs)
        if self.specs is not None and len(self.specs) != self.n_kernels:
            raise ValueError(f"specs has {len(self.specs)} entries for {self.n_kernels} kernels")
        if X_train is not None:
            X_train = check_matrix(X_train, "X_train")
            if X_train.shape[0] != self.n_samples:
                raise ValueError(
                    f"X_train has {X_train.shape[0]} rows for {self.n_samples} samples"
                )
        if (X_train is None) != (self.specs is None):
            raise ValueError("specs and X_train go together: give both or neither")
        self.X_train = X_train
        self._groups = None if self.specs is None else _plan(self.specs)

    # ------------------------------------------------------------------ build
    @classmethod
    def from_specs(cls, X, specs, normalize="trace", dtype=np.float64, max_memory=None):
        """Evaluate kernel specs on training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs; finite. Standardise them first (the papers'
            protocol); a constant feature then becomes all zeros, which gives
            valid, constant kernels and no NaN.
        specs : sequence of specs
            From :func:`rbf`, :func:`poly`, :func:`linear` or :func:`grid`.
            Specs on the same feature subset share one squared-distance
            matrix (all widths) and one Gram matrix (all degrees).
        normalize : {"trace", None}, default="trace"
            ``"trace"`` scales each kernel to unit trace on ``X``; the same
            constants are used by :meth:`cross`.
        dtype : {np.float64, np.float32}, default=np.float64
            Storage type of ``K``. float32 halves memory and bandwidth; all
            arithmetic (combination, quadratic forms) stays in float64.
        max_memory : float or None, default=None
            Byte limit for the bank; None means 80% of the memory available
            now.

        Returns
        -------
        KernelBank

        Raises
        ------
        ValueError, TypeError
            On NaN/inf or a non-2-D ``X``, an empty or invalid spec list, a
            feature index out of range, or a bad ``normalize``/``dtype``.
        MemoryError
            Before allocating, when ``n_kernels * n_samples**2 * itemsize``
            (plus two n x n work matrices) exceeds the limit.
        """
        X = check_matrix(X, "X")
        n, d = X.shape
        specs = _check_specs(specs, d)
        check_choice(normalize, "normalize", ("trace", None))
        dt = _check_dtype(dtype)
        m = len(specs)
        needed = m * n * n * dt.itemsize + 2 * n * n * 8
        _check_memory(
            needed,
            max_memory,
            f"A bank of {m} kernels on {n} samples ({dt.name})",
            "Use fewer kernels, dtype=np.float32 (halves it), a subsample of the rows, "
            "or pass max_memory=<bytes> to raise the limit.",
        )
        groups = _plan(specs)
        K = np.empty((m, n, n), dtype=dt)
        scales = np.ones(m)
        work = np.empty((n, n))
        for g in groups:
            Xs = g.columns(X)
            if g.rbf_idx.size:
                _kern.sq_dists_sym(Xs, work)
                if normalize == "trace":
                    scales[g.rbf_idx] = float(n)  # unit diagonal
                for j, k in enumerate(g.rbf_idx):
                    _kern.rbf_from_sq_dists(
                        work, g.sigmas[j : j + 1], 1.0 / scales[k : k + 1], K[k : k + 1]
                    )
            if g.gram_idx.size:
                _kern.gram_sym(Xs, work)
                diag = np.diagonal(work)
                for j, k in enumerate(g.gram_idx):
                    if normalize == "trace":
                        tr = float(np.sum((diag + g.offsets[j]) ** g.degrees[j]))
                        scales[k] = tr if tr > 0.0 else 1.0
                    _kern.poly_from_gram(
                        work,
                        g.degrees[j : j + 1],
                        g.offsets[j : j + 1],
                        1.0 / scales[k : k + 1],
                        K[k : k + 1],
                    )
        return cls(K, scales, specs=specs, X_train=X)

    @classmethod
    def from_matrices(cls, K, normalize=None, check=True, max_memory=None, dtype=None):
        """Wrap kernel matrices the user already has.

        Parameters
        ----------
        K : array-like of shape (n_kernels, n_samples, n_samples) or list of (n, n)
            Base kernel matrices. A C-contiguous float64/float32 3-D array is
            used without a copy when ``normalize`` is None (do not modify it
            afterwards); anything else is copied into a new array.
        normalize : {None, "trace"}, default=None
            None keeps the matrices as given; ``"trace"`` scales each to unit
            trace (on a copy).
        check : bool, default=True
            Verify symmetry (``max|K - K'| <= 1e-8 max|K|``) and positive
            semi-definiteness (``lambda_min >= -1e-8 trace``, tested by a
            Cholesky factorisation of ``K + 1e-8 trace I``, about
            ``n^3 / 3`` flops per kernel). Finiteness is always checked.
        max_memory : float or None, default=None
            Byte limit for a copy; None means 80% of the available memory.
        dtype : {None, np.float64, np.float32}, default=None
            Storage type; None keeps float32 input as float32 and stores
            everything else as float64.

        Returns
        -------
        KernelBank
            With ``specs`` and ``X_train`` set to None: predicting needs
            cross-kernel matrices, see :meth:`combine_cross_matrices`.

        Raises
        ------
        ValueError
            On a wrong shape, NaN/inf, or (with ``check``) a non-symmetric or
            indefinite matrix; the message names the kernel index and, for
            an indefinite one, its most negative eigenvalue.
        TypeError
            If ``K`` does not hold real numbers.
        MemoryError
            If a needed copy would exceed the memory limit.
        """
        check_choice(normalize, "normalize", ("trace", None))
        if not isinstance(check, (bool, np.bool_)):
            raise TypeError(f"check must be True or False, got {check!r}")
        if isinstance(K, np.ndarray):
            if K.ndim == 2:
                raise ValueError(
                    "K must be 3-D (n_kernels, n_samples, n_samples) or a list of n x n "
                    "matrices; for a single matrix pass [K] or K[None]"
                )
            if K.ndim != 3:
                raise ValueError(
                    f"K must be 3-D (n_kernels, n_samples, n_samples), got shape {K.shape}"
                )
            if K.dtype.kind not in "fiu" or K.dtype.kind == "b":
                raise TypeError(f"K must hold real numbers, got dtype {K.dtype}")
            mats, shape = None, K.shape
            src_dtype = K.dtype
        elif isinstance(K, (list, tuple)):
            if not K:
                raise ValueError("K is an empty list; give at least one kernel matrix")
            mats = []
            for k, Kk in enumerate(K):
                a = np.asarray(Kk)
                if a.ndim != 2:
                    raise ValueError(f"K[{k}] must be a 2-D matrix, got shape {a.shape}")
                if a.dtype.kind not in "fiu" or a.dtype.kind == "b":
                    raise TypeError(f"K[{k}] must hold real numbers, got dtype {a.dtype}")
                if mats and a.shape != mats[0].shape:
                    raise ValueError(
                        f"K[{k}] has shape {a.shape} but K[0] has shape {mats[0].shape}; "
                        "all kernels must be n_samples x n_samples on the same samples"
                    )
                mats.append(a)
            shape = (len(mats),) + mats[0].shape
            src_dtype = np.result_type(*[a.dtype for a in mats])
        else:
            raise TypeError(
                f"K must be an (n_kernels, n, n) array or a list of n x n arrays, "
                f"got {type(K).__name__}"
            )
        m, n1, n2 = shape
        if m < 1:
            raise ValueError("K holds no kernels (n_kernels = 0)")
        if n1 != n2:
            raise ValueError(f"kernel matrices must be square, got {n1} x {n2}")
        if n1 < 1:
            raise ValueError("kernel matrices are empty (n_samples = 0)")
        if dtype is None:
            dt = np.dtype(np.float32) if src_dtype == np.float32 else np.dtype(np.float64)
        else:
            dt = _check_dtype(dtype)

        reuse = mats is None and normalize is None and K.dtype == dt and K.flags.c_contiguous
        if reuse:
            arr = K
        else:
            _check_memory(
                m * n1 * n1 * dt.itemsize,
                max_memory,
                f"A copy of {m} kernels on {n1} samples ({dt.name})",
                "Pass a C-contiguous float64 (or float32) array with normalize=None to "
                "avoid the copy, use fewer kernels or a subsample, or pass "
                "max_memory=<bytes>.",
            )
            arr = np.empty((m, n1, n1), dtype=dt)
            for k in range(m):
                arr[k] = K[k] if mats is None else mats[k]

        for k in range(m):
            if not np.all(np.isfinite(arr[k])):
                raise ValueError(f"K[{k}] contains NaN or infinity")
        if check:
            for k in range(m):
                _check_kernel(arr[k], k)

        scales = np.ones(m)
        if normalize == "trace":
            for k in range(m):
                tr = float(np.trace(arr[k], dtype=np.float64))
                if tr < 0.0:
                    raise ValueError(f"K[{k}] has negative trace {tr:.3g}; it is not a kernel")
                if tr > 0.0:
                    scales[k] = tr
                    arr[k] *= 1.0 / tr
        return cls(arr, scales)

    # --------------------------------------------------------------- oracles
    def combine(self, w, out=None):
        """Combined kernel ``sum_k w[k] K[k]`` (kernels with zero weight are skipped).

        Parameters
        ----------
        w : array-like of shape (n_kernels,)
            Non-negative finite weights, not all zero.
        out : ndarray of shape (n_samples, n_samples), optional
            C-contiguous float64 array to write into (avoids an allocation
            per oracle call).

        Returns
        -------
        ndarray of shape (n_samples, n_samples), float64
        """
        w = check_weights(w, self.n_kernels, "w")
        n = self.n_samples
        if out is None:
            out = np.empty((n, n))
        elif (
            not isinstance(out, np.ndarray)
            or out.shape != (n, n)
            or out.dtype != np.float64
            or not out.flags.c_contiguous
        ):
            raise ValueError(f"out must be a C-contiguous float64 array of shape ({n}, {n})")
        m = self.n_kernels
        if self.K.dtype == np.float64 and np.count_nonzero(w) * 2 >= m and m >= 8:
            # Mostly non-zero weights: one BLAS matrix-vector product over the
            # whole bank reads it at full memory bandwidth (about 2x the jitted
            # loop on two cores). Sparse weights take the loop, which reads
            # only the selected kernels.
            np.dot(w, self.K.reshape(m, n * n), out=out.reshape(n * n))
            return out
        return _combine.combine_kernels(self.K, w, out)

    def quad_forms(self, v, support=None):
        """Per-kernel quadratic forms ``q[k] = v_S' K[k][S, S] v_S``.

        Parameters
        ----------
        v : array-like of shape (n_samples,)
            In the oracle ``v = alpha * y``.
        support : array-like of int, optional
            Distinct indices ``S`` of the support vectors; entries of ``v``
            outside ``S`` are ignored. Default: the non-zeros of ``v``.

        Returns
        -------
        q : ndarray of shape (n_kernels,), float64
            Non-negative up to rounding for PSD kernels.
        """
        v = check_vector(v, "v", size=self.n_samples)
        if support is None:
            S = np.flatnonzero(v).astype(np.int64)
        else:
            S = np.sort(_check_indices(support, "support", self.n_samples, allow_empty=True))
            if S.size > 1 and np.any(S[1:] == S[:-1]):
                raise ValueError("support must not hold repeated indices")
        q = np.empty(self.n_kernels)
        n, m = self.n_samples, self.n_kernels
        if self.K.dtype == np.float64 and S.size * 5 >= n * 2:
            # A large support: one BLAS pass over the whole bank, q = (K v) v,
            # is faster than the gathered S x S reads (same result to rounding).
            vs = np.zeros(n)
            vs[S] = v[S]
            np.dot(np.dot(self.K.reshape(m * n, n), vs).reshape(m, n), vs, out=q)
            return q
        return _combine.quad_forms(self.K, v, S, q)

    def blocks(self, kernels, rows, cols=None):
        """Blocks of single kernels: ``out[j] = K[kernels[j]][rows][:, cols]``.

        What consumers that need individual kernels read (the weak SVMs of
        boosting, an exact solve restricted to active kernels and support
        vectors).

        Parameters
        ----------
        kernels : array-like of int
            Kernel indices (repeats allowed).
        rows : array-like of int
            Training indices (repeats allowed, e.g. a bootstrap sample).
        cols : array-like of int, optional
            Training indices; default ``rows``.

        Returns
        -------
        ndarray of shape (len(kernels), len(rows), len(cols)), float64
        """
        ks = _check_indices(kernels, "kernels", self.n_kernels)
        r = _check_indices(rows, "rows", self.n_samples, allow_empty=True)
        c = r if cols is None else _check_indices(cols, "cols", self.n_samples, allow_empty=True)
        out = np.empty((ks.size, r.size, c.size))
        for j, k in enumerate(ks.tolist()):
            out[j] = self.K[k][np.ix_(r, c)]
        return out

    # ------------------------------------------------------------ prediction
    def _need_specs(self, what):
        if self.specs is None:
            raise ValueError(
                f"{what} needs kernel specs, but this bank was built from matrices; "
                "build it with KernelBank.from_specs, or compute the cross-kernel "
                "matrices yourself and use combine_cross_matrices"
            )

    def _check_new(self, X_new):
        X_new = check_matrix(X_new, "X_new")
        d = self.X_train.shape[1]
        if X_new.shape[1] != d:
            raise ValueError(f"X_new has {X_new.shape[1]} features but the bank was built on {d}")
        return X_new

    def cross(self, X_new, kernels=None, max_memory=None):
        """Kernel values between new points and the training points.

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)
        kernels : array-like of int, optional
            Which kernels (default: all), in the order wanted.
        max_memory : float or None, default=None
            Byte limit for the result (default: 80% of available memory).

        Returns
        -------
        ndarray of shape (len(kernels), n_new, n_samples), float64
            ``raw_k(X_new, X_train) / scales[k]``; on ``X_new = X_train`` it
            reproduces ``K[kernels]`` exactly (for a float64 bank).

        Raises
        ------
        ValueError
            For a bank built from matrices (no specs), or bad input.
        """
        self._need_specs("cross()")
        X_new = self._check_new(X_new)
        if kernels is None:
            kernels = np.arange(self.n_kernels, dtype=np.int64)
        else:
            kernels = _check_indices(kernels, "kernels", self.n_kernels)
        n_new, n = X_new.shape[0], self.n_samples
        _check_memory(
            kernels.size * n_new * n * 8 + n_new * n * 8,
            max_memory,
            f"Cross kernels ({kernels.size} kernels, {n_new} x {n})",
            "Ask for fewer kernels or fewer points at a time, or use combine_cross.",
        )
        out = np.empty((kernels.size, n_new, n))
        pos = {}
        for j, k in enumerate(kernels.tolist()):
            pos.setdefault(k, []).append(j)
        work = np.empty((n_new, n))
        inv = 1.0 / self.scales
        for g in self._groups:
            want_rbf = [(j, k) for j, k in enumerate(g.rbf_idx.tolist()) if k in pos]
            want_gram = [(j, k) for j, k in enumerate(g.gram_idx.tolist()) if k in pos]
            if not (want_rbf or want_gram):
                continue
            Xn, Xt = g.columns(X_new), g.columns(self.X_train)
            if want_rbf:
                _kern.sq_dists(Xn, Xt, work)
                for j, k in want_rbf:
                    p = pos[k][0]
                    _kern.rbf_from_sq_dists(
                        work, g.sigmas[j : j + 1], inv[k : k + 1], out[p : p + 1]
                    )
            if want_gram:
                _kern.gram(Xn, Xt, work)
                for j, k in want_gram:
                    p = pos[k][0]
                    _kern.poly_from_gram(
                        work,
                        g.degrees[j : j + 1],
                        g.offsets[j : j + 1],
                        inv[k : k + 1],
                        out[p : p + 1],
                    )
            for _, k in want_rbf + want_gram:
                for p in pos[k][1:]:
                    out[p] = out[pos[k][0]]
        return out

    def combine_cross(self, X_new, w, columns=None):
        """Combined kernel between new points and (some) training points.

        ``out[i, j] = sum_k w[k] K_k(X_new[i], X_train[columns[j]])`` with the
        training normalisation. Only kernels with ``w[k] > 0`` and only the
        requested training columns are evaluated, and no per-kernel matrix is
        stored: this is what prediction uses (the support vectors and the
        selected kernels only).

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)
        w : array-like of shape (n_kernels,)
            Non-negative kernel weights, not all zero.
        columns : array-like of int, optional
            Training indices (e.g. the support); default all.

        Returns
        -------
        ndarray of shape (n_new, len(columns)), float64
        """
        self._need_specs("combine_cross()")
        X_new = self._check_new(X_new)
        w = check_weights(w, self.n_kernels, "w")
        Xt_all = self.X_train
        if columns is not None:
            columns = _check_indices(columns, "columns", self.n_samples, allow_empty=True)
            Xt_all = np.ascontiguousarray(self.X_train[columns])
        out = np.zeros((X_new.shape[0], Xt_all.shape[0]))
        if out.size == 0:
            return out
        wk = w / self.scales
        work = np.empty_like(out)
        for g in self._groups:
            wr = wk[g.rbf_idx]
            wg = wk[g.gram_idx]
            if not (np.any(wr > 0) or np.any(wg > 0)):
                continue
            Xn, Xt = g.columns(X_new), g.columns(Xt_all)
            if np.any(wr > 0):
                _kern.sq_dists(Xn, Xt, work)
                _kern.rbf_accumulate(work, g.sigmas, wr, out)
            if np.any(wg > 0):
                _kern.gram(Xn, Xt, work)
                _kern.poly_accumulate(work, g.degrees, g.offsets, wg, out)
        return out

    def combine_cross_matrices(self, K_cross, w, columns=None):
        """Combine precomputed raw cross-kernel matrices with this bank's scales.

        For banks built from matrices: ``K_cross[k]`` holds the raw kernel
        ``k`` between new points and all training points (computed the same
        way as the matrices given to :meth:`from_matrices`).

        Parameters
        ----------
        K_cross : array-like of shape (n_kernels, n_new, n_samples)
        w : array-like of shape (n_kernels,)
        columns : array-like of int, optional
            Training indices to keep; default all.

        Returns
        -------
        ndarray of shape (n_new, len(columns)), float64
            ``sum_k w[k] K_cross[k][:, columns] / scales[k]``.
        """
        w = check_weights(w, self.n_kernels, "w")
        Kc = np.asarray(K_cross)
        if Kc.ndim != 3 or Kc.shape[0] != self.n_kernels or Kc.shape[2] != self.n_samples:
            raise ValueError(
                f"K_cross must have shape ({self.n_kernels}, n_new, {self.n_samples}), "
                f"got {Kc.shape}"
            )
        cols = (
            np.arange(self.n_samples, dtype=np.int64)
            if columns is None
            else _check_indices(columns, "columns", self.n_samples, allow_empty=True)
        )
        out = np.zeros((Kc.shape[1], cols.size))
        for k in np.flatnonzero(w):
            blk = np.asarray(Kc[k][:, cols], dtype=np.float64)
            if not np.all(np.isfinite(blk)):
                raise ValueError(f"K_cross[{k}] contains NaN or infinity")
            out += (w[k] / self.scales[k]) * blk
        return out

    # ------------------------------------------------------------ sub-banks
    def subset(self, kernels):
        """A new bank with only the given kernels (copied), scales and specs kept."""
        idx = _check_indices(kernels, "kernels", self.n_kernels)
        specs = None if self.specs is None else tuple(self.specs[i] for i in idx.tolist())
        return KernelBank(
            np.ascontiguousarray(self.K[idx]), self.scales[idx], specs=specs, X_train=self.X_train
        )

    def take(self, rows):
        """A new bank on the training rows ``rows`` (repeats allowed), scales kept.

        The scales stay those of the full training set, so ``cross`` on the
        new bank agrees with the original one.
        """
        idx = _check_indices(rows, "rows", self.n_samples)
        K = np.ascontiguousarray(self.K[:, idx][:, :, idx])
        X = None if self.X_train is None else self.X_train[idx]
        return KernelBank(K, self.scales.copy(), specs=self.specs, X_train=X)

    def submatrix(self, kernel, rows, cols=None):
        """``K[kernel][rows][:, cols]`` as a new float64 array (repeats allowed).

        For boosting: ``bank.submatrix(k, idx)`` is the kernel on a bootstrap
        sample, ``bank.submatrix(k, np.arange(n), idx)`` its values between
        all training points and the sample.
        """
        if isinstance(kernel, bool) or not isinstance(kernel, numbers.Integral):
            raise TypeError(f"kernel must be an integer index, got {kernel!r}")
        if not 0 <= kernel < self.n_kernels:
            raise ValueError(f"kernel must be in [0, {self.n_kernels}), got {kernel}")
        r = _check_indices(rows, "rows", self.n_samples)
        c = r if cols is None else _check_indices(cols, "cols", self.n_samples)
        return np.asarray(self.K[int(kernel)][np.ix_(r, c)], dtype=np.float64)

    def combine_block(self, w, rows, cols=None):
        """``sum_k w[k] K[k][rows][:, cols]`` without forming the full combination.

        Rows and columns may repeat (bootstrap samples); zero weights are skipped.

        Returns
        -------
        ndarray of shape (len(rows), len(cols)), float64
        """
        w = check_weights(w, self.n_kernels, "w")
        r = _check_indices(rows, "rows", self.n_samples)
        c = r if cols is None else _check_indices(cols, "cols", self.n_samples)
        return _combine.combine_block(self.K, w, r, c, np.empty((r.size, c.size)))

    # ------------------------------------------------------------------ misc
    @property
    def nbytes(self):
        """Bytes held by ``K``."""
        return int(self.K.nbytes)

    def __repr__(self):
        src = "specs" if self.specs is not None else "matrices"
        return (
            f"KernelBank(n_kernels={self.n_kernels}, n_samples={self.n_samples}, "
            f"dtype={self.K.dtype.name}, from={src})"
        )


def _check_kernel(Kk, k):
    """Symmetry and PSD test of one kernel matrix (raises ValueError naming ``k``)."""
    A = np.asarray(Kk, dtype=np.float64)
    amax = float(np.max(np.abs(A)))
    asym = float(np.max(np.abs(A - A.T)))
    if asym > _SYM_RTOL * amax:
        raise ValueError(
            f"K[{k}] is not symmetric: max |K - K'| = {asym:.3g} (max |K| = {amax:.3g}); "
            "symmetrise it with (K + K.T) / 2 if this is rounding"
        )
    tr = float(np.trace(A))
    if amax == 0.0:
        return  # the zero matrix is PSD
    if tr > 0.0:
        shifted = A + (_PSD_RTOL * tr) * np.eye(A.shape[0])
        try:
            np.linalg.cholesky(shifted)
            return
        except np.linalg.LinAlgError:
            pass
    lam = float(np.linalg.eigvalsh(A)[0])
    if lam >= -_PSD_RTOL * abs(tr):
        return  # the factorisation failed only by rounding
    raise ValueError(
        f"K[{k}] is not positive semi-definite: its most negative eigenvalue is "
        f"{lam:.3g} (trace {tr:.3g}; tolerance {_PSD_RTOL:g} x trace). Fix the kernel "
        "(e.g. clip negative eigenvalues) or pass check=False to skip this test"
    )


def as_bank(bank):
    """Return ``bank`` if it is a :class:`KernelBank`; wrap raw matrices in one.

    Parameters
    ----------
    bank : KernelBank or array-like of shape (n_kernels, n_samples, n_samples)
        A bank, or kernel matrices (checked by :meth:`KernelBank.from_matrices`).

    Raises
    ------
    TypeError
        For anything else.
    """
    if isinstance(bank, KernelBank) or (hasattr(bank, "K") and hasattr(bank, "n_kernels")):
        return bank  # a KernelBank, or an object that quacks like one
    if isinstance(bank, (np.ndarray, list, tuple)):
        return KernelBank.from_matrices(bank)
    raise TypeError(
        "bank must be a mklopt.KernelBank or an (n_kernels, n_samples, n_samples) array "
        f"of kernel matrices, got {type(bank).__name__}"
    )
