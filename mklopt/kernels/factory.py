"""The storage protocol, the registry of storages, and the one ``"auto"`` policy.

A *storage* is where a bank's training kernels live for the solvers: a
dense array, the features (kernels computed on the fly), feature maps, or a
user's own. Every consumer reads it through the few verbs of
:class:`Storage`, so a storage that has them serves every oracle, outer
method and estimator.

A storage is made available under a name with :func:`register_storage`::

    register_storage("my_storage", MyStorage)

after which ``KernelBank.from_specs(X, specs, storage="my_storage")``, the
estimators' ``storage="my_storage"`` and the workers of a sharded bank
build it through :func:`make_storage`. A package can register its storages
from a module named under the ``mklopt.storages`` entry point group (see
:mod:`mklopt.plugins`).

``storage="auto"`` is decided by :func:`auto_storage`, the one rule that
both an unsharded bank and a bank sharded over a Dask cluster apply.

This module imports neither :mod:`mklopt.kernels.bank` nor
:mod:`mklopt.kernels.sharded`; both import it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._memory import check_memory, fits, fmt_bytes
from .._registry import Registry
from .feature_maps import FeatureMap, FeatureMapFunctions, FeatureMapStorage
from .functions import KernelFunctions
from .products import ProductStorage, products_bytes, products_pay
from .storage import DenseStorage, OnTheFlyStorage, table_share

__all__ = [
    "Storage",
    "StorageEntry",
    "STORAGES",
    "AUTO_TABLE_SHARE",
    "register_storage",
    "get_storage",
    "storage_names",
    "make_storage",
    "check_storage",
    "auto_storage",
    "dense_bytes",
]


@runtime_checkable
class Storage(Protocol):
    """What a kernel storage must have: its sizes, its bytes and five verbs.

    ``K(w) = sum_k w[k] K_k`` is the combined kernel of the ``n_kernels``
    normalised training kernels ``K_k`` (``n_samples x n_samples``,
    symmetric positive semi-definite).

    A storage is trusted: its callers (the public methods of
    :class:`~mklopt.KernelBank`, the oracles, the weak learners) validate
    the arguments first, so ``w`` is a float64 array of length
    ``n_kernels`` with non-negative entries, ``v`` a float64 array of length
    ``n_samples``, and index arrays are int64 and in range. Every verb
    returns float64 arrays. Kernels with ``w[k] = 0`` must not contribute
    (the solvers rely on it to skip them).

    Attributes
    ----------
    name : str
        The name it is registered under (shown in ``repr(bank)``).
    n_kernels, n_samples : int
    nbytes : int
        Bytes it holds (for messages and progress lines).

    Notes
    -----
    Optional members, used when present:

    ``row_source(w)``
        ``(bank, weights, kernels, gidx)`` of a stored bank, so that the SMO
        solver combines the rows it reads and no others
        (:class:`~mklopt.kernels.views.ViewStorage`).
    ``combined_block(w, idx)`` and ``combined_matvec(w, idx, coef)``
        A storage that keeps rows where its kernels are (a sharded bank)
        answers the block solver's two reads itself.
    ``close()``
        Releases what the storage holds elsewhere (a sharded bank's workers).

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import KernelBank, Storage, rbf
    >>> bank = KernelBank.from_specs(np.eye(4), [rbf(1.0)])
    >>> isinstance(bank.storage, Storage)
    True
    """

    name: str
    n_kernels: int
    n_samples: int

    @property
    def nbytes(self) -> int: ...

    def diag(self, w):
        """The diagonal of ``K(w)``, shape ``(n_samples,)``."""

    def rows(self, w, idx, out):
        """Write rows ``K(w)[idx, :]`` into ``out`` (``(len(idx), n_samples)``) and return it."""

    def combine(self, w, out):
        """Write ``K(w)`` into the C-contiguous ``(n_samples, n_samples)`` ``out``; return it."""

    def quad_forms(self, v, support, kernels=None):
        """``q[j] = v_S' K_k[S, S] v_S`` for ``k = kernels[j]`` (all kernels if None).

        ``support`` holds the sorted, distinct indices ``S``; entries of
        ``v`` outside ``S`` are ignored.
        """

    def blocks(self, kernels, rows, cols):
        """Single kernels: ``out[j] = K_{kernels[j]}[rows][:, cols]``.

        Shape ``(len(kernels), len(rows), len(cols))``; repeats allowed.
        """


@dataclass(frozen=True)
class StorageEntry:
    """A registered storage: how to build it.

    Attributes
    ----------
    name : str
        The registry name (``storage=name``).
    factory : callable
        ``factory(functions, **options) -> storage``; ``functions`` holds the
        specs, the normalisation constants (computed once, on the training
        points) and the training points; ``options`` are those of
        ``dtype`` and ``max_memory`` that the factory takes (:attr:`options`).
    options : tuple of str
        The keywords passed to ``factory``.
    functions : callable or None
        For a storage that brings its own kernel functions (feature maps,
        which approximate the kernels and predict with the approximation):
        ``functions(X, specs, normalize=..., max_memory=...)``. None: the
        exact :class:`~mklopt.kernels.KernelFunctions`. Such storages are
        built on the client, never sharded.
    order_free : bool
        Whether the storage holds the exact kernels of its points whatever
        their order, so that a fit may give it the points in another order
        (the classifiers hold them class by class, for contiguous reads of
        each pair's block). True for the built-in exact storages; False by
        default for a user's, which may depend on the order (random
        landmarks, say).
    """

    name: str
    factory: Callable[..., Any]
    options: tuple = ()
    functions: Callable[..., Any] | None = None
    order_free: bool = False

    def make(self, functions, dtype=np.float64, max_memory=None):
        """The storage of ``functions``, given the bank's ``dtype`` and ``max_memory``."""
        given = {"dtype": np.dtype(dtype), "max_memory": max_memory}
        return self.factory(functions, **{k: given[k] for k in self.options})


#: The built-in storage names :meth:`~mklopt.KernelBank.from_specs` accepts
#: (``storage_names()`` lists the registered ones, users' included).
STORAGES = ("auto", "dense", "on_the_fly", "products", "feature_map")

#: ``"auto"`` computes on the fly when at least this share of the kernels is
#: read from tables (vote, breast: 94 % and 90 % of the level grid; letter:
#: 94 %); see benchmarks/README.md at commit 89ee8cc, "Storage chosen by
#: auto" and "Scale curves on letter".
AUTO_TABLE_SHARE = 0.5

#: Registered storages: name -> :class:`StorageEntry`; one entry per factory.
_REGISTRY: Registry[str, StorageEntry] = Registry(
    "storage", group="mklopt.storages", identity=lambda e: e.factory,
    unknown=lambda name, keys: _unknown("storage", name))
_OPTIONS = ("dtype", "max_memory")


def register_storage(name, factory=None, functions=None, replace=False, order_free=False):
    """Make a storage available as ``storage=name``; usable as a class decorator.

    Parameters
    ----------
    name : str
        The registry name; ``"auto"`` is reserved.
    factory : callable, optional
        ``factory(functions, **options)`` returning an object with the
        :class:`Storage` members, usually the storage class. It receives the
        bank's :class:`~mklopt.kernels.KernelFunctions` and, if its
        signature names them, ``dtype`` (a numpy dtype, float64 or float32)
        and ``max_memory`` (bytes or None; check it before allocating, with
        ``mklopt.kernels.functions`` helpers or your own ``MemoryError``).
        Omit it to use ``register_storage`` as a decorator.
    functions : callable, optional
        For storages that bring their own kernel functions (see
        :class:`StorageEntry`).
    replace : bool, default=False
        Let ``name`` be taken over by another factory (re-running a notebook
        cell).
    order_free : bool, default=False
        Declare that the storage's kernels do not depend on the order of the
        points (see :class:`StorageEntry`).

    Returns
    -------
    StorageEntry, or the decorator

    Raises
    ------
    TypeError
        If ``name`` is not a non-empty string or ``factory`` is not callable.
    ValueError
        If ``name`` is ``"auto"``, or taken by another factory and
        ``replace`` is false.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import KernelBank, rbf, register_storage
    >>> from mklopt.kernels.storage import DenseStorage
    >>> def half_precision(functions, max_memory=None):
    ...     return DenseStorage(functions.matrices(dtype=np.float32))
    >>> entry = register_storage("float32_doc", half_precision, replace=True)
    >>> bank = KernelBank.from_specs(np.eye(3), [rbf(1.0)], storage="float32_doc")
    >>> bank.storage.K.dtype
    dtype('float32')
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty string, got {name!r}")
    if name == "auto":
        raise ValueError("name 'auto' is reserved for the automatic choice of a storage")
    if factory is None:
        def deco(cls):
            register_storage(name, cls, functions, replace, order_free)
            return cls
        return deco
    if not callable(factory):
        raise TypeError(f"factory must be callable, got {type(factory).__name__}")
    if functions is not None and not callable(functions):
        raise TypeError(f"functions must be callable or None, got {type(functions).__name__}")
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        params = {}
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    options = tuple(o for o in _OPTIONS if var_kw or o in params)
    entry = StorageEntry(name, factory, options, functions, bool(order_free))
    return _REGISTRY.register(name, entry, replace)


def storage_traits(storage):
    """``(order_free, own_functions)`` of an estimator's ``storage`` (a name or a FeatureMap).

    ``"auto"`` chooses among the built-in exact storages: order free, with
    the exact kernel functions. A :class:`FeatureMap` brings its own
    (approximate) functions and depends on the points it is fitted on.
    """
    if isinstance(storage, FeatureMap):
        return False, True
    if storage == "auto":
        return True, False
    entry = get_storage(storage)
    return entry.order_free, entry.functions is not None


def storage_names():
    """Every accepted storage name: ``"auto"``, then the registered ones in order."""
    return ["auto", *_REGISTRY.names()]


def _accepted(name):
    known = ", ".join(repr(s) for s in storage_names())
    return (
        f"{name} must be one of {known} (the registered storages) or a FeatureMap "
        "(e.g. mklopt.kernels.nystroem(n_components=100))"
    )


def _unknown(name, value):
    return f"{_accepted(name)}; got {value!r}"


def get_storage(name):
    """The :class:`StorageEntry` registered as ``name`` (entry points included).

    Raises
    ------
    ValueError
        For an unknown name; the message lists the registered names.
    """
    return _REGISTRY.get(name)


def check_storage(storage, name="storage"):
    """Validate a ``storage`` argument: a registered name, ``"auto"`` or a :class:`FeatureMap`.

    Returns it unchanged, so estimators can pass their parameter through.

    Raises
    ------
    TypeError, ValueError
        Naming ``name`` and listing the registered storages.
    """
    if isinstance(storage, FeatureMap):
        return storage
    if not isinstance(storage, str):
        raise TypeError(f"{_accepted(name)}, got {type(storage).__name__}")
    if storage != "auto" and _REGISTRY.get(storage, None) is None:
        raise ValueError(_unknown(name, storage))
    return storage


def make_storage(storage, functions, dtype=np.float64, max_memory=None):
    """Build the storage registered as ``storage`` for ``functions``: the one factory.

    What :meth:`~mklopt.KernelBank.from_specs` and the shards of a sharded
    bank (on their workers) call. The kernels' normalisation constants are
    those of ``functions``: nothing is normalised again.

    Parameters
    ----------
    storage : str or StorageEntry
        A registered name (not ``"auto"``: decide it with
        :func:`auto_storage` first), or its entry.
    functions : KernelFunctions
    dtype : {np.float64, np.float32}, default=np.float64
    max_memory : float or None, default=None

    Returns
    -------
    storage
        An object with the :class:`Storage` members.
    """
    entry = storage if isinstance(storage, StorageEntry) else get_storage(storage)
    return entry.make(functions, dtype=dtype, max_memory=max_memory)


def dense_bytes(n_kernels, n_samples, dtype=np.float64):
    """Bytes of a dense bank: the ``m n^2`` stored entries plus one ``n x n`` work matrix."""
    return n_kernels * n_samples * n_samples * np.dtype(dtype).itemsize + n_samples**2 * 8


def auto_storage(functions, dense_fits):
    """The storage ``"auto"`` picks: ``"dense"`` or ``"on_the_fly"``; the one rule.

    ``"dense"`` when a dense bank fits where it will live and fewer than
    :data:`AUTO_TABLE_SHARE` (half) of the kernels are on features with few
    distinct values; else ``"on_the_fly"``. Kernels on such features
    (binary, ordinal) are read from small tables on the fly, ``O(1)`` per
    entry and ``O(|S|)`` per quadratic form, against 8 bytes per entry from
    memory when stored, so when they are most of the bank computing is the
    faster storage too. ``"auto"`` never approximates.

    An unsharded bank and a bank sharded over a Dask cluster apply this
    same rule; they differ only in where the dense bank must fit (under
    ``max_memory`` on this machine, or placed in shards under the workers'
    memory limits), which the caller decides and passes as ``dense_fits``.
    The decision holds for the whole bank: all shards of a sharded bank
    get the same storage.

    Parameters
    ----------
    functions : KernelFunctions
        The bank's kernels on the training points.
    dense_fits : bool
        Whether a dense bank fits where it would live.

    Returns
    -------
    {"dense", "on_the_fly"}

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import KernelFunctions, auto_storage, grid
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((80, 3))
    >>> auto_storage(KernelFunctions.from_data(X, grid(3)), dense_fits=True)
    'dense'
    >>> auto_storage(KernelFunctions.from_data(X, grid(3)), dense_fits=False)
    'on_the_fly'
    >>> coded = rng.integers(0, 3, size=(80, 3)).astype(float)  # ordinal features
    >>> auto_storage(KernelFunctions.from_data(coded, grid(3)), dense_fits=True)
    'on_the_fly'
    """
    if not dense_fits:
        return "on_the_fly"
    if table_share(functions) >= AUTO_TABLE_SHARE:
        return "on_the_fly"
    return "dense"


def shared_storage(storage, X, specs, max_memory=None, reads="few"):
    """The storage of one bank that several problems read through index views.

    One-vs-one pairs and cross-validation folds read one bank built on all
    points (:meth:`~mklopt.KernelBank.view`). With ``storage="auto"`` that
    bank may store the squared distances and inner products of its feature
    groups instead of the kernels (``"products"``,
    :class:`~mklopt.kernels.products.ProductStorage`): the same values bit
    for bit, from at most half the memory
    (:func:`~mklopt.kernels.products.products_pay`), but each entry read
    costs an exp or a few products more than a stored one.

    * ``reads="few"``, the pairs of one multiclass fit (a few calls each):
      products whenever they pay and fit under ``max_memory``. Writing a
      dense bank (and touching its fresh pages) costs more than the pairs'
      reads of the products (benchmarks/README.md at commit 89ee8cc, "One
      bank of distances and inner products").
    * ``reads="many"``, the paths over ``C`` of a cross-validation that
      scores every candidate on every fold (tens of calls per fold and
      pair): products only where a dense bank does not fit under
      ``max_memory`` and ``"auto"`` would compute every entry from the
      features, at a far higher cost per read. (Successive halving reads
      its bank on few folds per candidate and passes ``"few"``.)

    Either way not where ``"auto"`` computes on the fly for the kernels on
    features with few distinct values (small tables are cheaper still).
    For any other ``storage`` the argument is returned unchanged.

    Parameters
    ----------
    storage : str or FeatureMap
    X : ndarray of shape (n_samples, n_features)
        The checked training features the bank is built on.
    specs : sequence of specs
    max_memory : float or None
    reads : {"few", "many"}, default="few"

    Returns
    -------
    str or FeatureMap
    """
    if reads not in ("few", "many"):
        raise ValueError(f"reads must be 'few' or 'many', got {reads!r}")
    if not (isinstance(storage, str) and storage == "auto"):
        return storage
    functions = KernelFunctions.from_data(X, specs, normalize=None)
    if not products_pay(functions) or table_share(functions) >= AUTO_TABLE_SHARE:
        return storage
    if not fits(products_bytes(functions), max_memory):
        return storage
    if reads == "many" and fits(dense_bytes(functions.n_kernels, functions.n_samples),
                                max_memory):
        return storage
    return "products"


# ---------------------------------------------------------------- built-ins
def _fly_bytes(functions):
    return functions.X.nbytes * 3 + 64 * functions.n_samples * 8


def _dense(functions, dtype=np.float64, max_memory=None):
    """The ``(m, n, n)`` array of the normalised kernels (:class:`DenseStorage`)."""
    dt = np.dtype(dtype)
    m, n = functions.n_kernels, functions.n_samples
    check_memory(
        dense_bytes(m, n, dt),
        max_memory,
        f"A dense bank of {m} kernels on {n} samples ({dt.name})",
        "Use storage='on_the_fly' (stores only X, about "
        f"{fmt_bytes(_fly_bytes(functions))}), dtype=np.float32 (halves it), fewer kernels, "
        "or pass max_memory=<bytes> to raise the limit.",
    )
    return DenseStorage(functions.matrices(dtype=dt))


def _on_the_fly(functions, max_memory=None):
    """Kernels computed from the features when read (:class:`OnTheFlyStorage`)."""
    check_memory(
        _fly_bytes(functions),
        max_memory,
        f"Kernels on the fly for {functions.n_samples} samples and {functions.n_features} "
        "features",
        "Nothing smaller can hold the training data: use a subsample of the rows.",
    )
    return OnTheFlyStorage(functions)


def _feature_map_functions(X, specs, normalize="trace", max_memory=None, options=None):
    return FeatureMapFunctions.from_data(X, specs, options, normalize=normalize,
                                         max_memory=max_memory)


def _feature_map(functions):
    """Each kernel held as its feature map (:class:`FeatureMapStorage`)."""
    if not isinstance(functions, FeatureMapFunctions):
        raise TypeError(
            "storage 'feature_map' is built from FeatureMapFunctions (its own kernel "
            f"functions), got {type(functions).__name__}; a sharded bank cannot hold it"
        )
    return FeatureMapStorage(functions)


def _products(functions, dtype=np.float64, max_memory=None):
    """Squared distances and inner products per feature group (:class:`ProductStorage`)."""
    if np.dtype(dtype) != np.float64:
        raise ValueError(
            "storage='products' holds float64 distances and inner products; dtype=float32 "
            "is for storage='dense'"
        )
    return ProductStorage.build(functions, max_memory=max_memory)


register_storage("dense", _dense, order_free=True)
register_storage("on_the_fly", _on_the_fly, order_free=True)
register_storage("products", _products, order_free=True)
register_storage("feature_map", _feature_map, functions=_feature_map_functions)


def exact_functions(X, specs, normalize="trace", max_memory=None):
    """The exact kernel functions, normalised once on ``X`` (the default of an entry)."""
    return KernelFunctions.from_data(X, specs, normalize=normalize)
