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

import numpy as np

from .._optional import optional
from ..kernels.families import family_of
from ..kernels.stack import PrecomputedKernel

__all__ = ["kernel_name", "kernel_view", "kernel_family", "kernel_names", "weights_table"]


def kernel_view(spec):
    """The feature set a spec reads: ``"all"``, ``"f3"``, ``"f0,f2"`` (``"precomputed"``)."""
    if isinstance(spec, PrecomputedKernel):
        return "precomputed"
    feats = getattr(spec, "features", None)
    if feats is None:
        return "all"
    return ",".join(f"f{int(f)}" for f in np.atleast_1d(feats))


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


def kernel_name(spec):
    """A short readable name for a kernel spec.

    ``family(parameter)[view]`` for a family with one numeric parameter,
    ``family[view]`` for one without parameters, the spec's repr otherwise.

    Examples
    --------
    >>> from mklopt.kernels import rbf, poly, linear
    >>> kernel_name(rbf(2.0)), kernel_name(poly(2, features=[3]))
    ('rbf(2)[all]', 'poly(2)[f3]')
    >>> kernel_name(linear(features=[0, 2])), kernel_name(rbf(0.125))
    ('linear[f0,f2]', 'rbf(0.125)[all]')
    """
    family = kernel_family(spec)
    if family == "precomputed":
        return f"precomputed[{int(spec.index)}]"
    fam = _family(spec)
    if fam is None:
        return repr(spec)
    view = kernel_view(spec)
    param = _parameter(spec)
    if len(fam.params) == 1 and not math.isnan(param):
        return f"{family}({param:g})[{view}]"
    if not fam.params:
        return f"{family}[{view}]"
    return repr(spec)


def kernel_names(specs):
    """One :func:`kernel_name` per spec, as a list."""
    return [kernel_name(s) for s in specs]


def weights_table(specs, weights):
    """The kernel weights per kernel, grouped by view and family, averaged over pairs.

    Parameters
    ----------
    specs : sequence of kernel specs
    weights : ndarray of shape (n_kernels,) or (n_pairs, n_kernels)

    Returns
    -------
    pandas.DataFrame or numpy.recarray
        One row per kernel, sorted by view (``"all"`` first, then by
        feature), family and parameter, with columns ``kernel`` (the
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
    views = [kernel_view(s) for s in specs]
    fams = [kernel_family(s) for s in specs]
    params = [_parameter(s) for s in specs]

    def view_key(v):
        # "all" first, then single features in numeric order, then the rest.
        if v == "all":
            return (0, ())
        parts = v.split(",")
        if all(p.startswith("f") and p[1:].isdigit() for p in parts):
            return (1, tuple(int(p[1:]) for p in parts))
        return (2, (v,))

    order = sorted(range(len(specs)),
                   key=lambda k: (view_key(views[k]), fams[k],
                                  -math.inf if math.isnan(params[k]) else params[k], k))
    columns = {
        "kernel": [kernel_name(specs[k]) for k in order],
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
