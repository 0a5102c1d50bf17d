"""Readable kernel names and the table of fitted kernel weights.

A fitted estimator's ``kernel_specs_`` and ``weights_`` say which kernels
carry the decision, but as specs and bare arrays. Here each spec gets a
short name (``"rbf(2)[all]"``, ``"poly(2)[f3]"``, ``"linear[f0,f2]"``,
``"precomputed[1]"``), its *view* (the feature set it reads: ``"all"``,
``"f3"``, ...) and its *family*, and :func:`weights_table` lays the
weights out per kernel, grouped by view and family, averaged over the
one-vs-one pairs.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

import numpy as np

from .._optional import optional
from ..kernels.families import family_of
from ..kernels.stack import PrecomputedKernel

__all__ = [
    "kernel_name",
    "kernel_view",
    "kernel_family",
    "kernel_names",
    "weights_table",
    "estimator_views",
    "estimator_kernel_names",
    "NamedKernels",
]


#: Views of more columns than this are named by their first and last column.
_LIST_MAX = 3


def _columns_label(labels):
    labels = [str(c) for c in labels]
    if len(labels) <= _LIST_MAX:
        return ",".join(labels)
    return f"{labels[0]}..{labels[-1]} ({len(labels)})"


def kernel_view(spec, feature_names=None):
    """The feature set a spec reads: ``"all"``, ``"f3"``, ``"f0,f2"`` (``"precomputed"``).

    With ``feature_names`` (a fitted estimator's ``feature_names_in_``)
    the columns are named by their names. More than three columns are
    named by the first and the last with their count (``"f0..f99 (100)"``).
    """
    if isinstance(spec, PrecomputedKernel):
        return "precomputed"
    feats = getattr(spec, "features", None)
    if feats is None:
        return "all"
    feats = list(feats)
    if feats and isinstance(feats[0], (numbers.Integral, np.integer)):
        if feature_names is not None and len(feature_names) > max(feats):
            return _columns_label([feature_names[int(f)] for f in feats])
        return _columns_label([f"f{int(f)}" for f in feats])
    return _columns_label(feats)  # names, or a slice not resolved yet


def _family(spec):
    if isinstance(spec, PrecomputedKernel):
        return None
    return family_of(spec)


def kernel_family(spec):
    """The registered family's name (``"rbf"``, ...), ``"precomputed"``, or the class name."""
    if isinstance(spec, PrecomputedKernel):
        return "precomputed"
    fam = _family(spec)
    return type(spec).__name__.lower() if fam is None else fam.name


def _parameter(spec):
    """The family's parameter (Gaussian width, degree, stack index), NaN for none.

    For a family with several parameters, the first one when it is a number.
    """
    if isinstance(spec, PrecomputedKernel):
        return float(spec.index)
    fam = _family(spec)
    if fam is None or not fam.params:
        return math.nan
    value = getattr(spec, fam.params[0])
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return math.nan
    return float(value)


def kernel_name(spec, view=None, feature_names=None):
    """A short readable name for a kernel spec.

    ``family(parameter)[view]`` for a family with one numeric parameter,
    ``family[view]`` for one without parameters, the spec's repr otherwise.
    ``view`` overrides :func:`kernel_view` (a view's name, ``"lipid"``).

    Examples
    --------
    >>> from mklopt.kernels import rbf, poly, linear
    >>> kernel_name(rbf(2.0)), kernel_name(poly(2, features=[3]))
    ('rbf(2)[all]', 'poly(2)[f3]')
    >>> kernel_name(linear(features=[0, 2])), kernel_name(rbf(0.125))
    ('linear[f0,f2]', 'rbf(0.125)[all]')
    >>> kernel_name(rbf(1.0, features=[0, 1]), view="lipid")
    'rbf(1)[lipid]'
    """
    family = kernel_family(spec)
    if family == "precomputed":
        return f"precomputed[{int(spec.index)}]" if view is None else str(view)
    fam = _family(spec)
    if fam is None:
        return repr(spec)
    if view is None:
        view = kernel_view(spec, feature_names)
    param = _parameter(spec)
    if len(fam.params) == 1 and not math.isnan(param):
        return f"{family}({param:g})[{view}]"
    if not fam.params:
        return f"{family}[{view}]"
    return repr(spec)


def kernel_names(specs, views=None, feature_names=None):
    """One :func:`kernel_name` per spec, as a list (``views``: one view name per spec)."""
    specs = list(specs)
    views = [None] * len(specs) if views is None else list(views)
    return [kernel_name(s, v, feature_names) for s, v in zip(specs, views, strict=True)]


def estimator_views(est, feature_names=None):
    """The view of each kernel of a fitted estimator's ``kernel_specs_``.

    The dict key of ``kernels={view: specs}``; the name given in
    ``kernel_names=`` for precomputed kernels; else the columns the kernel
    reads, named by ``feature_names_in_`` when the estimator was fitted on
    a DataFrame (:func:`kernel_view`), or by ``feature_names`` when given
    (the column names of a CSV file the command line read).
    """
    specs = list(est.kernel_specs_)
    given = getattr(est, "kernel_names", None)
    if given is not None and all(isinstance(s, PrecomputedKernel) for s in specs):
        given = list(given)
        if len(given) == len(specs):
            return [str(g) for g in given]
    kernels = getattr(est, "kernels", None)
    if isinstance(kernels, Mapping):
        views = [name for name, group in kernels.items()
                 for _ in (group if isinstance(group, (list, tuple)) else [group])]
        if len(views) == len(specs):
            return views
    names = getattr(est, "feature_names_in_", None) if feature_names is None else feature_names
    return [kernel_view(s, names) for s in specs]


def estimator_kernel_names(est, feature_names=None):
    """``kernel_names_`` of a fitted estimator: one name per kernel, with its view's name."""
    return kernel_names(est.kernel_specs_, _named_views(est, feature_names))


def _named_views(est, feature_names=None):
    specs = est.kernel_specs_
    views = estimator_views(est, feature_names)
    # Precomputed kernels without given names keep "precomputed[k]".
    return [None if isinstance(s, PrecomputedKernel) and v == "precomputed" else v
            for s, v in zip(specs, views, strict=True)]


class NamedKernels:
    """``kernel_names_``, ``kernel_views_`` and ``kernel_weights_`` of a fitted MKL estimator."""

    @property
    def kernel_names_(self):
        """list of str: a readable name per kernel of ``kernel_specs_`` (``"rbf(2)[all]"``).

        The view in brackets is the key of ``kernels={view: specs}``, the
        column names of a DataFrame the estimator was fitted on, or the
        column indices (``"f3"``); precomputed kernels take the names given
        in ``kernel_names=``.
        """
        return estimator_kernel_names(self)

    @property
    def kernel_views_(self):
        """list of str: the view (named column group, or columns) each kernel reads."""
        return estimator_views(self)

    @property
    def kernel_weights_(self):
        """The kernel weights as a table: per kernel, grouped by view and family.

        A pandas DataFrame when pandas is installed, else a record array;
        columns ``kernel``, ``view``, ``family``, ``parameter``, ``index``,
        ``weight`` (mean over the one-vs-one pairs), ``weight_min`` and
        ``weight_max``. See :func:`mklopt.estimators._names.weights_table`.
        """
        return weights_table(self.kernel_specs_, self.weights_, views=estimator_views(self),
                             names=estimator_kernel_names(self))


def weights_table(specs, weights, views=None, names=None):
    """The kernel weights per kernel, grouped by view and family, averaged over pairs.

    Parameters
    ----------
    specs : sequence of kernel specs
    weights : ndarray of shape (n_kernels,) or (n_pairs, n_kernels)
    views : sequence of str, optional
        The view of each kernel (default :func:`kernel_view`).
    names : sequence of str, optional
        The name of each kernel (default :func:`kernel_name`).

    Returns
    -------
    pandas.DataFrame or numpy.recarray
        One row per kernel, sorted by view (``"all"`` first, then single
        columns by index, then the other views in the order of their first
        kernel), family and parameter, with columns ``kernel`` (the
        name), ``view``, ``family``, ``parameter`` (width, degree or NaN),
        ``index`` (position in ``kernel_specs_``), ``weight`` (mean over
        the pairs), ``weight_min`` and ``weight_max`` (over the pairs). A
        DataFrame when pandas is installed, else a record array with the
        same fields.
    """
    W = np.atleast_2d(np.asarray(weights, dtype=np.float64))
    specs = list(specs)
    if W.shape[1] != len(specs):
        raise ValueError(f"weights have {W.shape[1]} kernels but there are {len(specs)} specs")
    views = [kernel_view(s) for s in specs] if views is None else [str(v) for v in views]
    names = kernel_names(specs) if names is None else [str(v) for v in names]
    if len(views) != len(specs) or len(names) != len(specs):
        raise ValueError("views and names need one entry per spec")
    first = {}
    for k, v in enumerate(views):
        first.setdefault(v, k)
    fams = [kernel_family(s) for s in specs]
    params = [_parameter(s) for s in specs]

    def view_key(v):
        # "all" first, then single features in numeric order, then the rest.
        if v == "all":
            return (0, ())
        parts = v.split(",")
        if all(p.startswith("f") and p[1:].isdigit() for p in parts):
            return (1, tuple(int(p[1:]) for p in parts))
        return (2, (first[v],))

    order = sorted(range(len(specs)),
                   key=lambda k: (view_key(views[k]), fams[k],
                                  -math.inf if math.isnan(params[k]) else params[k], k))
    columns = {
        "kernel": [names[k] for k in order],
        "view": [views[k] for k in order],
        "family": [fams[k] for k in order],
        "parameter": np.array([params[k] for k in order]),
        "index": np.array(order, dtype=np.int64),
        "weight": W.mean(axis=0)[order],
        "weight_min": W.min(axis=0)[order],
        "weight_max": W.max(axis=0)[order],
    }
    pd = optional("pandas")
    if pd is not None:
        return pd.DataFrame(columns)
    return np.rec.fromarrays(
        [np.asarray(v) for v in columns.values()], names=list(columns)
    )
