"""The estimators' shared parameters: the ``kernels`` constraint and what the values stand for.

The values are checked by each estimator's constraint table (see
``_core.py``) when ``fit`` begins; the functions here turn checked values
into what a fit uses (kernel specs, whether to standardise), and check the
one rule that ties two parameters (``client`` without ``n_jobs``).
"""

from __future__ import annotations

from collections.abc import Mapping

from .. import kernels as _kernels
from .._constraints import Constraint
from ..kernels.columns import flatten_views, resolve_specs

__all__ = [
    "KERNEL_GRIDS",
    "KernelSpecs",
    "resolve_kernel_specs",
    "resolve_standardize",
    "check_estimator_client",
]

#: The names an estimator's ``kernels`` parameter accepts besides a list of specs.
KERNEL_GRIDS = ("all_features", "grid")


def resolve_kernel_specs(kernels, n_features, protocol, feature_names=None):
    """The kernel specs an estimator's ``kernels`` parameter stands for.

    Parameters
    ----------
    kernels : "grid", "all_features", list of kernel specs or dict of views
        As checked by :class:`KernelSpecs`. ``"grid"`` is
        :func:`mklopt.kernels.grid` under ``protocol``; ``"all_features"``
        is the grid of the MKBoost paper (``protocol="mkboost2013"``: 17
        Gaussian and polynomial kernels, all on every feature). A dict
        ``{view: specs}`` gives the views' specs in its order
        (:func:`mklopt.kernels.feature_views`).
    n_features : int
        Number of features of the training data.
    protocol : {"level2008", "mkboost2013"}
        The grid of the estimator's paper.
    feature_names : array-like of str, optional
        The training data's column names (``feature_names_in_``): specs
        that name their columns are resolved against them, slices against
        ``n_features``.
    """
    if isinstance(kernels, str):
        if kernels == "all_features":
            protocol = "mkboost2013"
        return list(_kernels.grid(n_features, protocol=protocol))
    if isinstance(kernels, Mapping):
        kernels, _ = flatten_views(kernels)
    return resolve_specs(kernels, n_features, feature_names)


class KernelSpecs(Constraint):
    """An estimator's ``kernels``: a grid name, or a non-empty list of kernel specs.

    Parameters
    ----------
    names : tuple of str
        The grid names the estimator takes (:data:`KERNEL_GRIDS`).
    extra : dict, optional
        Further names and what they mean (``{"precomputed": "kernel
        matrices"}``), named after the grids and the list in messages.
    """

    def __init__(self, names=KERNEL_GRIDS, extra=None):
        self.names = tuple(names)
        self.extra = dict(extra or {})

    def owns(self, value):
        return True

    def accepts(self, value):
        if isinstance(value, str):
            return value in self.names or value in self.extra
        if isinstance(value, Mapping):
            try:
                flatten_views(value)
            except (TypeError, ValueError):
                return False
            return True
        return isinstance(value, (list, tuple)) and len(value) > 0

    def _also(self):
        if not self.extra:
            return ""
        return " (or " + ", ".join(f"{k!r}: {v}" for k, v in self.extra.items()) + ")"

    def error(self, name, value):
        grids = ", ".join(repr(n) for n in self.names)
        if isinstance(value, str):
            return ValueError(
                f"{name} must be {grids} or a list of kernel specs{self._also()}, got the "
                f"string {value!r}"
            )
        if isinstance(value, Mapping):
            try:
                flatten_views(value, name)
            except (TypeError, ValueError) as exc:
                return type(exc)(
                    f"{exc}; {name} as a dict maps view names to lists of kernel specs "
                    "(see mklopt.kernels.feature_views)"
                )
        if isinstance(value, (list, tuple)):
            return ValueError(f"{name} is an empty list; give at least one kernel spec")
        return TypeError(
            f"{name} must be {grids} or a list of kernel specs (e.g. [rbf(1.0), poly(2)])"
            f"{self._also()}, got {type(value).__name__}"
        )

    def __str__(self):
        grids = ", ".join(repr(n) for n in self.names)
        return (f"{grids}, a non-empty list of kernel specs or a dict {{view: specs}}"
                f"{self._also()}")


def resolve_standardize(value, kernels):
    """Whether to standardise: ``"auto"`` means yes for the named grids, no for a list of specs.

    ``value`` is an estimator's ``standardize``, already checked by its
    constraint table (``"auto"``, True or False).
    """
    if isinstance(value, str) and value == "auto":
        return isinstance(kernels, str)  # a list or a dict of views: the features as given
    return bool(value)


def check_estimator_client(client, n_jobs):
    """Check that an estimator's ``client`` and ``n_jobs`` go together; None passes.

    A client shards each binary problem's kernels (or sends the weak SVMs of
    a boosting round) over the cluster, one problem at a time; ``n_jobs``
    runs whole problems in parallel instead. The two do not combine. (The
    client itself is checked by the estimator's constraint table.)
    """
    if client is None:
        return
    if n_jobs not in (None, 1):
        raise ValueError(
            f"client and n_jobs={n_jobs!r} cannot be combined: client spreads the work of "
            "each problem over the cluster, n_jobs runs several problems at once. Pass one of "
            "them (for pairs as Dask tasks, use n_jobs inside joblib.parallel_backend('dask'))"
        )
