"""KernelBank: a bank's kernel functions and the storage its oracles read.

A bank has two parts (see docs/large.md):

* its **kernel functions** (:class:`~mklopt.kernels.KernelFunctions`): specs,
  normalisation constants computed on the training set, and the training
  points. They evaluate kernels between new points and training points;
  prediction and saved models need nothing else;
* its **storage** (:mod:`mklopt.kernels.storage`): where the training kernels
  live for the solvers, behind a few verbs (rows of the combined kernel, its
  diagonal, the quadratic forms ``q``, single-kernel blocks). A dense array,
  the features themselves (computed on the fly), or feature maps.

Consumers (the oracles, the weak learners, prediction) use only those verbs,
so every storage serves every oracle and method.
"""

from __future__ import annotations

import numbers

import numpy as np

from .._interrupt import check as check_stop
from .._memory import check_max_memory, check_memory, fits, memory_limit
from .._validation import check_choice, check_matrix, check_vector, check_weights
from .factory import (
    STORAGES,
    auto_storage,
    check_storage,
    dense_bytes,
    exact_functions,
    get_storage,
)
from .feature_maps import FeatureMap
from .functions import KernelFunctions, _check_indices, _check_specs
from .psd import (
    _EXACT_N,
    PSD_OPTIONS,
    check_symmetric,
    indefinite_error,
    psd_test,
    repair_kernel,
    scan_kernel,
)
from .sharded import ShardedStorage
from .storage import DenseStorage

__all__ = ["KernelBank", "STORAGES", "check_storage"]

# Largest |K - K'| allowed, relative to max |K|.
_SYM_RTOL = 1e-8
# Default budget of the solvers' row cache: this many MB, or a quarter of
# the memory limit if that is smaller.
_CACHE_MB = 2048


def _check_dtype(dtype, name="dtype"):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"{name} must be np.float64 or np.float32, got {dtype!r}") from None
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"{name} must be np.float64 or np.float32, got {dt}")
    return dt


def _check_cache_size(cache_size):
    if cache_size is None:
        return None
    if isinstance(cache_size, bool) or not isinstance(cache_size, numbers.Real):
        raise TypeError(f"cache_size must be a number of MB or None, got {cache_size!r}")
    if not cache_size >= 0:
        raise ValueError(f"cache_size must be >= 0 MB, got {cache_size!r}")
    return float(cache_size)


def _distinct(idx, name, size):
    """Checked indices in the order given, refusing repeats."""
    S = _check_indices(idx, name, size, allow_empty=True)
    if S.size > 1 and np.unique(S).size < S.size:
        raise ValueError(f"{name} must not hold repeated indices")
    return S


def _unique_sorted(idx, name, size):
    S = np.sort(_check_indices(idx, name, size, allow_empty=True))
    if S.size > 1 and np.any(S[1:] == S[:-1]):
        raise ValueError(f"{name} must not hold repeated indices")
    return S


class KernelBank:
    """The m base kernels of a training set, ready for the MKL oracles.

    Build one with :meth:`from_specs` (kernels evaluated from data, which
    can then be evaluated on new points) or :meth:`from_matrices` (matrices
    you already have, in memory or memory-mapped). The constructor only
    wires validated parts together.

    Parameters
    ----------
    storage : storage object
        Any object with the members of :class:`~mklopt.kernels.Storage`
        (the built-in ones are in :mod:`mklopt.kernels.storage`).
    functions : KernelFunctions or FeatureMapFunctions, optional
        The kernels as functions (None for user matrices).
    scales : array-like of shape (n_kernels,), optional
        Normalisation constants when there are no functions (user
        matrices); default ones.
    cache_size : float, optional
        Megabytes the SMO solver may keep in its cache of combined-kernel
        rows (libsvm's ``cache_size``). Default: 2048 or a quarter of the
        memory limit, whichever is smaller.

    Attributes
    ----------
    n_kernels, n_samples : int
    storage : storage object
        ``storage.name`` is ``"dense"``, ``"on_the_fly"``,
        ``"feature_map"``, ``"sharded"``, ``"view"`` or the name of a
        registered storage.
    functions : KernelFunctions, FeatureMapFunctions or None
    specs : tuple of specs or None
    scales : ndarray of shape (n_kernels,)
        Normalisation constants computed on the training set (the trace of
        each raw kernel for ``normalize="trace"``, else ones).
    X_train : ndarray of shape (n_samples, n_features) or None
    cache_size : float or None
    psd_maps : tuple of PSDMap or None
        Per kernel, how :meth:`from_matrices` with ``psd="clip"`` or
        ``"shift"`` repaired it and maps its test kernels
        (:class:`~mklopt.kernels.psd.PSDMap`); None for kernels used as given.

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
    >>> bank.storage.name, bank.K.shape
    ('dense', (3, 20, 20))
    >>> round(float(np.trace(bank.K[2])), 12)
    1.0
    >>> fly = KernelBank.from_specs(X, [rbf(1.0), rbf(2.0), poly(2)], storage="on_the_fly")
    >>> w = [0.5, 0.5, 0.0]
    >>> bool(np.allclose(fly.combine(w), bank.combine(w), rtol=1e-12))
    True
    """

    def __init__(self, storage, functions=None, scales=None, cache_size=None):
        self.storage = storage
        self.n_kernels = int(storage.n_kernels)
        self.n_samples = int(storage.n_samples)
        self.functions = functions
        if functions is not None:
            if (functions.n_kernels, functions.n_samples) != (self.n_kernels, self.n_samples):
                raise ValueError("functions and storage disagree on the kernels or samples")
            self.scales = functions.scales
        else:
            self.scales = (
                np.ones(self.n_kernels)
                if scales is None
                else check_vector(scales, "scales", size=self.n_kernels)
            )
        self.cache_size = _check_cache_size(cache_size)
        # The registry entry, dtype and max_memory the storage was built with
        # (from_specs): a view of a user's storage is built again with them.
        self._built = None
        # Per kernel, how test kernels are mapped (from_matrices with psd=
        # "clip" or "shift"; None: used as given).
        self.psd_maps = (None,) * self.n_kernels

    # ------------------------------------------------------------------ build
    @classmethod
    def from_specs(
        cls,
        X,
        specs,
        storage="auto",
        normalize="trace",
        dtype=np.float64,
        cache_size=None,
        max_memory=None,
        client=None,
        n_shards=None,
    ):
        """Kernels from specs on training data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs; finite. Standardise them first (the papers'
            protocol); a constant feature then becomes all zeros, which gives
            valid, constant kernels and no NaN.
        specs : sequence of specs
            From :func:`rbf`, :func:`poly`, :func:`linear` or :func:`grid`.
            Specs on the same feature subset share one squared-distance
            evaluation (all widths) and one inner product (all degrees).
        storage : str or FeatureMap, default="auto"
            ``"auto"``, ``"dense"``, ``"on_the_fly"``, ``"products"``, ``"feature_map"`` or
            a name registered with :func:`~mklopt.kernels.register_storage`
            (built by its factory from the kernel functions normalised
            here). ``"dense"`` stores all ``m n^2`` entries (fastest for small
            ``n``); ``"on_the_fly"`` stores only ``X`` and computes rows,
            quadratic forms and blocks from it, skipping kernels with zero
            weight; ``"products"`` stores each feature group's squared
            distances and inner products and applies the kernels when they
            are read (the dense values bit for bit, in ``2 / m`` of the
            memory for ``m`` kernels on one group;
            :class:`~mklopt.kernels.products.ProductStorage`). ``"auto"``
            (:func:`~mklopt.kernels.auto_storage`) keeps
            dense when the bank and the solver's
            work matrix fit under ``max_memory`` and fewer than half of the
            kernels are on features with few distinct values (binary,
            ordinal: those are read from small tables on the fly, cheaper
            than from memory), else computes on the fly (it never
            approximates). A :class:`~mklopt.kernels.FeatureMap`
            stores each kernel as its feature map ``Phi_k`` (``n x r_k``):
            ``"feature_map"`` maps linear and polynomial kernels exactly;
            :func:`~mklopt.kernels.nystroem` and
            :func:`~mklopt.kernels.random_fourier` also approximate Gaussian
            kernels (see :mod:`mklopt.kernels.feature_maps`). Prediction
            then uses the same approximate kernels.
        normalize : {"trace", "diagonal", None}, default="trace"
            ``"trace"`` scales each kernel to unit trace on ``X``,
            ``"diagonal"`` to a unit mean diagonal (trace ``n_samples``); the
            same constants are used for new points.
        dtype : {np.float64, np.float32}, default=np.float64
            Storage type of a dense bank (the other storages hold float64).
            float32 halves memory and bandwidth; all arithmetic stays in
            float64.
        cache_size : float, optional
            Megabytes for the solver's cache of combined-kernel rows (see
            the class docstring).
        max_memory : float or None, default=None
            Byte limit for what the bank stores; None means 80% of the
            memory available now. With a ``client``: the limit of each
            shard on its worker.
        client : dask.distributed.Client, optional
            Shard the kernels over the client's workers
            (:class:`~mklopt.kernels.sharded.ShardedStorage`, needs
            ``pip install "mklopt[dask]"``): each worker builds and holds the
            ``storage`` of its shard, and only weights, dual vectors and
            ``n``-vectors travel. ``"auto"`` then decides per shard against
            the workers' memory limits.
        n_shards : int, optional
            Shards of a sharded bank; default one per worker. Only with
            ``client``.

        Returns
        -------
        KernelBank

        Raises
        ------
        ValueError, TypeError
            On NaN/inf or a non-2-D ``X``, an empty or invalid spec list, a
            feature index out of range, or a bad option; a ``client`` that is
            not a running ``distributed.Client`` with workers.
        MemoryError
            Before allocating, when the chosen storage does not fit; the
            message names the storage (or the ``n_components``) that would.
        """
        X = check_matrix(X, "X")
        specs = _check_specs(specs, X.shape[1])
        storage = check_storage(storage)
        check_choice(normalize, "normalize", ("trace", "diagonal", None))
        dt = _check_dtype(dtype)
        cache_size = _check_cache_size(cache_size)
        check_max_memory(max_memory)
        options = None
        if isinstance(storage, FeatureMap):
            storage, options = "feature_map", storage
        entry = None if storage == "auto" else get_storage(storage)
        if entry is not None and entry.functions is not None:
            # A storage with its own kernel functions (feature maps): built here.
            build = entry.functions
            kw = {} if options is None else {"options": options}
            functions = build(X, specs, normalize=normalize, max_memory=max_memory, **kw)
        else:
            # The normalisation constants are computed once, here; a sharded
            # bank's workers receive them with the specs.
            functions = exact_functions(X, specs, normalize=normalize)
            if client is not None:
                sharded = ShardedStorage(
                    client, functions, storage=storage, normalize=normalize, dtype=dt,
                    max_memory=max_memory, n_shards=n_shards,
                )
                return cls(sharded, functions, cache_size=cache_size)
            if n_shards is not None:
                raise ValueError("n_shards is only used with a client (a sharded bank)")
            if entry is None:
                m, n = functions.n_kernels, functions.n_samples
                name = auto_storage(functions, fits(dense_bytes(m, n, dt), max_memory))
                entry = get_storage(name)
        bank = cls(entry.make(functions, dtype=dt, max_memory=max_memory), functions,
                   cache_size=cache_size)
        bank._built = (entry, {"dtype": dt, "max_memory": max_memory})
        return bank

    @classmethod
    def from_matrices(
        cls, K, normalize=None, check=True, max_memory=None, dtype=None, cache_size=None,
        psd="check",
    ):
        """Wrap kernel matrices the user already has (in memory or on disk).

        Parameters
        ----------
        K : array-like of shape (n_kernels, n_samples, n_samples) or list of (n, n)
            Base kernel matrices. A C-contiguous float64/float32 3-D array,
            including a memory map (``np.load(path, mmap_mode="r")``), is used
            as it is, without a copy, whenever ``dtype`` does not ask for a
            conversion (do not modify it afterwards); anything else is copied.
        normalize : {None, "trace", "diagonal"}, default=None
            None keeps the matrices as given; ``"trace"`` scales each to unit
            trace, ``"diagonal"`` to a unit mean diagonal. For an array used
            without a copy the scales are applied when the kernels are read,
            so a file on disk is never rewritten.
        check : bool, default=True
            Verify symmetry (``max|K - K'| <= 1e-8 max|K|``) and apply
            ``psd``; False skips both. Finiteness is always checked, in
            chunks of rows.
        psd : {"check", "clip", "shift", "trust"}, default="check"
            What to do about kernels that are not positive semi-definite
            (``lambda_min < -1e-8 trace``), see :mod:`mklopt.kernels.psd`:
            ``"check"`` refuses them (a Lanczos estimate of the smallest
            eigenvalue, a few dozen products ``K v`` per kernel; exact up to
            500 samples); ``"clip"`` projects the training kernel on the PSD
            cone, ``K~ = V_+ diag(lam_+) V_+'``, and test kernels through the
            same projection, ``K~_test = K_test V_+ V_+'``; ``"shift"`` adds
            ``-lambda_min I`` (test kernels unchanged, the added term being
            zero between distinct points); ``"trust"`` skips the test. The
            maps of the repaired kernels are in ``psd_maps``; a repair
            works on a copy, never on the user's array.
        max_memory : float or None, default=None
            Byte limit for a copy; None means 80% of the available memory.
        dtype : {None, np.float64, np.float32}, default=None
            Storage type; None keeps float32 input as float32 and stores
            everything else as float64.
        cache_size : float, optional
            Megabytes for the solver's row cache (see the class docstring).

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
        check_choice(normalize, "normalize", ("trace", "diagonal", None))
        if not isinstance(check, (bool, np.bool_)):
            raise TypeError(f"check must be True or False, got {check!r}")
        check_choice(psd, "psd", PSD_OPTIONS)
        repair = bool(check) and psd in ("clip", "shift")
        cache_size = _check_cache_size(cache_size)
        check_max_memory(max_memory)
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

        # A repair writes the kernels: a copy, never the user's array.
        reuse = mats is None and K.dtype == dt and K.flags.c_contiguous and not repair
        if reuse:
            arr = K
        else:
            check_memory(
                m * n1 * n1 * dt.itemsize,
                max_memory,
                f"A copy of {m} kernels on {n1} samples ({dt.name})",
                "Pass a C-contiguous float64 (or float32) 3-D array, or a memory map "
                "from np.load(path, mmap_mode='r'), to use it without a copy; or use "
                "fewer kernels, a subsample, or max_memory=<bytes>.",
            )
            arr = np.empty((m, n1, n1), dtype=dt)
            for k in range(m):
                arr[k] = K[k] if mats is None else mats[k]

        # Finiteness of every kernel first, then symmetry and the PSD test:
        # one jitted pass per kernel gives both of the first two.
        scans = []
        for k in range(m):
            check_stop()
            scans.append(scan_kernel(arr[k], k))
        maps = [None] * m
        if check:
            # One scratch matrix for the exact PSD tests of all the kernels.
            scratch = np.empty((n1, n1)) if psd != "trust" and n1 <= _EXACT_N else None
            for k in range(m):
                # One kernel's test at a time: a fit's time limit or Ctrl-C
                # stops between two of them.
                check_stop()
                if repair:
                    check_symmetric(arr[k], k, _SYM_RTOL, scans[k])
                    maps[k] = repair_kernel(arr[k], psd, k, scratch, scans[k][1])
                elif psd == "check":
                    _check_kernel(arr[k], k, scans[k], scratch)
                else:
                    check_symmetric(arr[k], k, _SYM_RTOL, scans[k])

        scales = np.ones(m)
        factors = None
        if normalize is not None:
            ar = np.arange(n1)
            for k in range(m):
                tr = float(np.sum(arr[k][ar, ar], dtype=np.float64))
                if tr < 0.0:
                    raise ValueError(f"K[{k}] has negative trace {tr:.3g}; it is not a kernel")
                if tr > 0.0:
                    scales[k] = tr / n1 if normalize == "diagonal" else tr
            if reuse:
                factors = 1.0 / scales  # the user's array (or file) is never written
            else:
                for k in range(m):
                    arr[k] *= 1.0 / scales[k]
        bank = cls(DenseStorage(arr, factors), None, scales=scales, cache_size=cache_size)
        bank.psd_maps = tuple(maps)
        return bank

    # ------------------------------------------------------------ attributes
    @property
    def specs(self):
        """The kernel specs, or None for user matrices."""
        return None if self.functions is None else self.functions.specs

    @property
    def X_train(self):
        """The training inputs, or None for user matrices."""
        return None if self.functions is None else self.functions.X

    @property
    def K(self):
        """The stored ``(n_kernels, n_samples, n_samples)`` array of a dense bank (read-only).

        Raises
        ------
        AttributeError
            For a bank whose kernels are not stored (on the fly, feature
            maps), or user matrices kept raw on disk with their scales apart.
        """
        st = self.storage
        if not isinstance(st, DenseStorage):
            raise AttributeError(
                f"this bank stores no kernel matrices (storage={st.name!r}); read kernels "
                "through rows(), combine(), quad_forms() or blocks()"
            )
        if st.factors is not None:
            raise AttributeError(
                "this bank keeps the user's matrices unchanged and applies the scales when "
                "reading them; the normalised kernel k is storage.K[k] / scales[k]"
            )
        return st.K

    @property
    def dtype(self):
        """Storage type of a dense bank (float64 for the other storages)."""
        return self.storage.K.dtype if isinstance(self.storage, DenseStorage) else np.dtype("f8")

    @property
    def nbytes(self):
        """Bytes held by the storage."""
        return int(self.storage.nbytes)

    def cache_bytes(self, max_memory=None):
        """The byte budget of the solvers' row cache (from ``cache_size``)."""
        if self.cache_size is not None:
            return int(self.cache_size * 2**20)
        limit, _ = memory_limit(max_memory)
        budget = _CACHE_MB * 2**20
        if limit is not None:
            budget = min(budget, 0.25 * limit)
        return int(budget)

    # ------------------------------------------------------------ views
    def view(self, rows, normalize=None):
        """The bank of the points ``rows``, read from this one without copying.

        What a multiclass fit (one binary problem per pair of classes) or a
        cross-validation fold uses: the kernels are evaluated once on all
        points, and each problem reads its index block of them. The view
        has its own normalisation, computed on its points alone, so it
        gives the kernels of ``KernelBank.from_specs(X[rows], specs,
        normalize=normalize)`` (up to the rounding of one product).

        Parameters
        ----------
        rows : array-like of int
            Distinct training indices, in the order the view's points take
            (the view's point ``i`` is the bank's point ``rows[i]``).
            Ascending rows read the bank's rows in order.
        normalize : {"trace", "diagonal", None}, default=None
            Normalisation of the view's kernels on its own points, as for
            :meth:`from_specs`.

        Returns
        -------
        KernelBank
            A bank whose storage is the storage's own ``view(idx, factors,
            functions, normalize)``: on a dense bank, a
            :class:`~mklopt.kernels.views.ViewStorage` of this one (it keeps
            this bank's array alive); on stored products
            (``storage="products"``), the products read at the view's points
            (:meth:`~mklopt.kernels.products.ProductStorage.view`); on a bank
            computed on the fly, a bank
            computed on the fly from ``X[rows]``; on feature maps, the rows
            of the maps, which were fitted once on all points
            (:meth:`FeatureMapFunctions.view`). A storage registered with
            :func:`~mklopt.kernels.register_storage` that has no ``view`` (or
            whose ``view`` returns None) is built by its factory on
            ``X[rows]``.

        Raises
        ------
        ValueError
            For storages that have no views (sharded banks, user matrices
            kept raw on disk with factors).

        Examples
        --------
        >>> import numpy as np
        >>> from mklopt.kernels import KernelBank, rbf, poly
        >>> X = np.random.default_rng(0).standard_normal((30, 3))
        >>> bank = KernelBank.from_specs(X, [rbf(1.0), poly(2)], normalize=None)
        >>> rows = np.arange(0, 30, 2)
        >>> sub = bank.view(rows, normalize="trace")
        >>> own = KernelBank.from_specs(X[rows], [rbf(1.0), poly(2)], normalize="trace")
        >>> bool(np.allclose(sub.combine([0.3, 0.7]), own.combine([0.3, 0.7]), rtol=1e-13))
        True
        """
        idx = _distinct(rows, "rows", self.n_samples)
        check_choice(normalize, "normalize", ("trace", "diagonal", None))
        st = self.storage
        fn = None
        if isinstance(self.functions, KernelFunctions):
            # The constants a bank built on X[rows] would have, computed the same way.
            fn = KernelFunctions.from_data(self.functions.X[idx], self.functions.specs,
                                           normalize=normalize, _plan=self.functions.plan)
            scales = fn.scales
        elif hasattr(st, "view_scales"):
            scales = st.view_scales(idx, self.scales, normalize)
        else:
            scales = np.ones(self.n_kernels)
        # The storage's own verb (None: it has no views of its own).
        verb = getattr(st, "view", None)
        storage = None if verb is None else verb(idx, self.scales / scales, functions=fn,
                                                  normalize=normalize)
        if storage is not None:
            fn = getattr(storage, "functions", fn)  # feature maps: the view's own functions
        elif fn is not None and self._built is not None and self._built[0].functions is None:
            # A user's storage: the same storage, built through its factory
            # on the view's points (the kernels of from_specs(X[rows])).
            entry, options = self._built
            storage = entry.make(fn, **options)
        else:
            raise ValueError(
                f"a bank with storage={st.name!r} has no views; build the bank of the "
                "points you need with KernelBank.from_specs(X[rows], ...)"
            )
        return type(self)(storage, fn, scales=None if fn is not None else scales,
                          cache_size=self.cache_size)

    # ------------------------------------------------------------ the verbs
    def _weights(self, w):
        return np.array(check_weights(w, self.n_kernels, "w"), dtype=np.float64)

    def combine(self, w, out=None):
        """Combined kernel ``sum_k w[k] K[k]`` (kernels with zero weight are skipped).

        Parameters
        ----------
        w : array-like of shape (n_kernels,)
            Non-negative finite weights, not all zero.
        out : ndarray of shape (n_samples, n_samples), optional
            C-contiguous float64 array to write into.

        Returns
        -------
        ndarray of shape (n_samples, n_samples), float64
        """
        w = self._weights(w)
        n = self.n_samples
        if out is None:
            check_memory(
                n * n * 8, None, f"The combined kernel on {n} samples",
                "Read rows of it with rows() instead.",
            )
            out = np.empty((n, n))
        elif (
            not isinstance(out, np.ndarray)
            or out.shape != (n, n)
            or out.dtype != np.float64
            or not out.flags.c_contiguous
        ):
            raise ValueError(f"out must be a C-contiguous float64 array of shape ({n}, {n})")
        return self.storage.combine(w, out)

    def rows(self, w, rows):
        """Rows of the combined kernel, ``sum_k w[k] K[k][rows, :]``.

        Parameters
        ----------
        w : array-like of shape (n_kernels,)
        rows : array-like of int
            Training indices (repeats allowed).

        Returns
        -------
        ndarray of shape (len(rows), n_samples), float64
        """
        w = self._weights(w)
        idx = _check_indices(rows, "rows", self.n_samples, allow_empty=True)
        return self.storage.rows(w, idx, np.empty((idx.size, self.n_samples)))

    def diag(self, w):
        """Diagonal of the combined kernel, shape (n_samples,)."""
        return self.storage.diag(self._weights(w))

    def quad_forms(self, v, support=None, kernels=None):
        """Per-kernel quadratic forms ``q[k] = v_S' K[k][S, S] v_S``.

        Parameters
        ----------
        v : array-like of shape (n_samples,)
            In the oracle ``v = alpha * y``.
        support : array-like of int, optional
            Distinct indices ``S`` of the support vectors; entries of ``v``
            outside ``S`` are ignored. Default: the non-zeros of ``v``.
        kernels : array-like of int, optional
            Only these kernels (default: all), in that order.

        Returns
        -------
        q : ndarray of shape (n_kernels,) or (len(kernels),), float64
            Non-negative up to rounding for PSD kernels.
        """
        v = check_vector(v, "v", size=self.n_samples)
        if support is None:
            S = np.flatnonzero(v).astype(np.int64)
        else:
            S = _unique_sorted(support, "support", self.n_samples)
        ks = None if kernels is None else _check_indices(kernels, "kernels", self.n_kernels)
        return self.storage.quad_forms(v, S, ks)

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
        check_memory(
            ks.size * r.size * c.size * 8, None,
            f"Kernel blocks ({ks.size} x {r.size} x {c.size})",
            "Ask for fewer kernels or smaller blocks at a time.",
        )
        return self.storage.blocks(ks, r, c)

    # ------------------------------------------------------------ prediction
    def _need_functions(self, what):
        if self.functions is None:
            raise ValueError(
                f"{what} needs kernel specs, but this bank was built from matrices; "
                "build it with KernelBank.from_specs, or compute the cross-kernel "
                "matrices yourself and use combine_cross_matrices"
            )
        return self.functions

    def cross(self, X_new, kernels=None, max_memory=None):
        """Single kernels between new points and the training points.

        See :meth:`KernelFunctions.cross`; on ``X_new = X_train`` it
        reproduces the training kernels, exactly for groups summed directly
        and to about 1e-15 of each kernel's largest value for the wide
        groups taken through BLAS products (their rounding depends on the
        blocks of the product).
        """
        return self._need_functions("cross()").cross(X_new, kernels, max_memory=max_memory)

    def combine_cross(self, X_new, w, columns=None):
        """Combined kernel between new points and (some) training points.

        See :meth:`KernelFunctions.combine_cross`: only kernels with
        ``w[k] > 0`` and only the requested columns are evaluated.
        """
        return self._need_functions("combine_cross()").combine_cross(X_new, w, columns)

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
            ``sum_k w[k] K_cross[k][:, columns] / scales[k]``, each
            ``K_cross[k]`` first mapped as its training kernel was repaired
            (``psd_maps``, see :meth:`from_matrices`).
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
            pm = self.psd_maps[k]
            full = Kc[k] if pm is None else pm.apply(Kc[k])  # the training kernel's map
            blk = np.asarray(full[:, cols], dtype=np.float64)
            if not np.all(np.isfinite(blk)):
                raise ValueError(f"K_cross[{k}] contains NaN or infinity")
            out += (w[k] / self.scales[k]) * blk
        return out

    def __repr__(self):
        src = "specs" if self.functions is not None else "matrices"
        return (
            f"KernelBank(n_kernels={self.n_kernels}, n_samples={self.n_samples}, "
            f"storage={self.storage.name!r}, from={src})"
        )


def _check_kernel(Kk, k, scan=None, scratch=None):
    """Symmetry and PSD test of one kernel matrix (raises ValueError naming ``k``).

    The PSD test is :func:`mklopt.kernels.psd.psd_test`: exact up to 500
    samples, a Lanczos estimate of the smallest eigenvalue above (confirmed
    exactly before an error). ``scan`` and ``scratch`` as for
    :func:`~mklopt.kernels.psd.check_symmetric` and ``psd_test``.
    """
    A = np.asarray(Kk)
    check_symmetric(A, k, _SYM_RTOL, scan)
    ok, lam = psd_test(A, scratch, None if scan is None else scan[1])
    if not ok:
        raise indefinite_error(k, lam, float(np.trace(A)))


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
    if isinstance(bank, KernelBank):
        return bank
    if isinstance(bank, (np.ndarray, list, tuple)):
        return KernelBank.from_matrices(bank)
    raise TypeError(
        "bank must be a mklopt.KernelBank or an (n_kernels, n_samples, n_samples) array "
        f"of kernel matrices, got {type(bank).__name__}"
    )
