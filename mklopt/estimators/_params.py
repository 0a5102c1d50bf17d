"""Checks of the estimators' shared hyper-parameters: kernels, storage, seeds, scaling.

Each is called from ``fit`` before any work, so a bad value fails fast with
a message naming the parameter.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import kernels as _kernels
from .._memory import check_max_memory
from .._validation import check_int
from ..kernels.bank import _check_cache_size, check_storage
from ..kernels.sharded import check_client

__all__ = [
    "KERNEL_GRIDS",
    "resolve_kernel_specs",
    "check_storage_params",
    "check_seed",
    "check_standardize",
]

#: The names an estimator's ``kernels`` parameter accepts besides a list of specs.
KERNEL_GRIDS = ("all_features", "grid")


def resolve_kernel_specs(kernels, n_features, protocol):
    """The kernel specs an estimator's ``kernels`` parameter stands for.

    Parameters
    ----------
    kernels : "grid", "all_features" or list of kernel specs
        ``"grid"`` is :func:`mklopt.kernels.grid` under ``protocol``;
        ``"all_features"`` is the grid of the MKBoost paper (``protocol=
        "mkboost2013"``: 17 Gaussian and polynomial kernels, all on every
        feature).
    n_features : int
        Number of features of the training data.
    protocol : {"level2008", "mkboost2013"}
        The grid of the estimator's paper.

    Raises
    ------
    ValueError, TypeError
        Naming ``kernels``.
    """
    if isinstance(kernels, str):
        if kernels not in KERNEL_GRIDS:
            raise ValueError(
                "kernels must be 'all_features', 'grid' or a list of kernel specs, got the "
                f"string {kernels!r}"
            )
        if kernels == "all_features":
            protocol = "mkboost2013"
        return list(_kernels.grid(n_features, protocol=protocol))
    if not isinstance(kernels, (list, tuple)):
        raise TypeError(
            "kernels must be 'all_features', 'grid' or a list of kernel specs "
            f"(e.g. [rbf(1.0), poly(2)]), got {type(kernels).__name__}"
        )
    if len(kernels) == 0:
        raise ValueError("kernels is an empty list; give at least one kernel spec")
    return list(kernels)


def check_storage_params(storage, cache_size, max_memory):
    """Validate the estimators' kernel-storage parameters (TypeError/ValueError naming them)."""
    check_storage(storage)
    _check_cache_size(cache_size)
    check_max_memory(max_memory)


def check_seed(value, name="random_state"):
    """Validate a seed: None, an int >= 0 or a ``numpy.random.Generator``."""
    if value is None or isinstance(value, np.random.Generator):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return check_int(value, name, low=0)
    raise TypeError(
        f"{name} must be None, a non-negative int or a numpy.random.Generator, got "
        f"{type(value).__name__}"
    )


def check_standardize(value, kernels):
    """Whether to standardise: ``"auto"`` means yes for the named grids, no for a list of specs."""
    if value == "auto":
        return isinstance(kernels, str)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"standardize must be 'auto', True or False, got {value!r}")


def check_estimator_client(client, n_jobs):
    """Check an estimator's ``client`` against its ``n_jobs``; None passes.

    A client shards each binary problem's kernels (or sends the weak SVMs of
    a boosting round) over the cluster, one problem at a time; ``n_jobs``
    runs whole problems in parallel instead. The two do not combine.
    """
    if client is None:
        return
    check_client(client, "client")
    if n_jobs not in (None, 1):
        raise ValueError(
            f"client and n_jobs={n_jobs!r} cannot be combined: client spreads the work of "
            "each problem over the cluster, n_jobs runs several problems at once. Pass one of "
            "them (for pairs as Dask tasks, use n_jobs inside joblib.parallel_backend('dask'))"
        )
