"""Kernels on named column groups (views) and on the channels of a multichannel series.

Multi-view data come as groups of columns: the lipid and the gene
measurements of the same samples, the three axes of an accelerometer.
Multiple kernel learning then gives each view its own kernels and learns
how much each view counts. This module builds those kernels:

* a spec's ``features=`` takes column indices, column names (resolved
  against the ``feature_names_in_`` of the DataFrame an estimator is
  fitted on) or a slice (resolved against the number of columns);
* :func:`feature_views` gives every view of a dict ``{name: columns}`` the
  same kernels, as the dict ``{name: specs}`` that the estimators'
  ``kernels=`` accepts: the view names then name the kernels in
  ``kernel_names_``, ``kernel_weights_``, saved models and plots;
* :func:`channel_views` and :func:`flatten_channels` do the same for an
  ``(n_samples, n_channels, n_times)`` array: the estimators take 2-D
  input, so the channels are laid side by side as column groups
  (``X.reshape(n, n_channels * n_times)``) and each channel is a view.

Examples
--------
>>> import numpy as np
>>> from mklopt.kernels import rbf, linear
>>> from mklopt.kernels.columns import feature_views, resolve_specs
>>> kernels = feature_views({"lipid": ["l1", "l2"], "gene": slice(2, 5)},
...                         [rbf(1.0), linear()])
>>> list(kernels), kernels["gene"][1]
(['lipid', 'gene'], linear(features=[2, 3, 4]))
>>> resolve_specs(kernels["lipid"], 5, np.array(["l1", "l2", "g1", "g2", "g3"]))[0]
rbf(sigma=1.0, features=[0, 1])
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from .families import KernelSpec, family_of
from .specs import ColumnSlice, _check_features

__all__ = [
    "feature_views",
    "channel_views",
    "flatten_channels",
    "with_features",
    "resolve_features",
    "resolve_specs",
    "flatten_views",
]


def with_features(spec, features):
    """The same kernel on other columns (a new spec; specs are immutable)."""
    if isinstance(spec, KernelSpec):
        return KernelSpec(spec.family, spec.values, features)
    if dataclasses.is_dataclass(spec) and family_of(spec) is not None:
        return dataclasses.replace(spec, features=features)
    raise TypeError(f"{spec!r} is not a kernel spec (made by rbf(), poly(), linear() or kernel())")


def resolve_features(features, n_features, feature_names=None, where="features"):
    """Column indices of a spec's ``features`` on data with ``n_features`` columns.

    Parameters
    ----------
    features : tuple or None
        A spec's checked features: indices, names, or a :class:`ColumnSlice`.
    n_features : int
        Columns of the training data.
    feature_names : array-like of str, optional
        The training data's column names (an estimator's
        ``feature_names_in_``); needed for names.
    where : str
        What to name in errors (e.g. ``"kernels[3]"``).

    Returns
    -------
    tuple of int or None

    Raises
    ------
    ValueError
        A name that is not a column, names without column names, an empty
        slice, an index out of range.
    """
    if features is None:
        return None
    if isinstance(features[0], ColumnSlice):
        out = features[0].indices(n_features)
        if not out:
            raise ValueError(f"{where}: {features[0]!r} selects no column of {n_features}")
        return out
    if isinstance(features[0], str):
        if feature_names is None:
            raise ValueError(
                f"{where} names columns ({list(features)[:3]!r}...) but the data have no "
                "column names: fit on a pandas DataFrame with these columns, or give "
                "integer column indices"
            )
        index = {str(name): k for k, name in enumerate(feature_names)}
        missing = [f for f in features if f not in index]
        if missing:
            raise ValueError(
                f"{where} names columns that are not in the data: {missing[:5]!r}"
                f"{' ...' if len(missing) > 5 else ''} (the data's columns are "
                f"{list(index)[:5]!r}{' ...' if len(index) > 5 else ''})"
            )
        return tuple(index[f] for f in features)
    top = max(features)
    if top >= n_features:
        raise ValueError(
            f"{where} uses column {top} but the data have only {n_features} columns"
        )
    return features


def resolve_specs(specs, n_features, feature_names=None, where="kernels"):
    """The specs with their columns as indices (names and slices resolved); a list.

    A spec whose features are already indices is returned as it is.
    """
    out = []
    for k, spec in enumerate(specs):
        feats = getattr(spec, "features", None)
        if feats is None or type(feats[0]) is int:
            out.append(spec)
            continue
        out.append(with_features(
            spec, resolve_features(feats, n_features, feature_names, f"{where}[{k}]")))
    return out


def _check_view_name(name, where):
    if not isinstance(name, str) or not name:
        raise TypeError(f"{where} must be keyed by non-empty strings (view names), got {name!r}")
    return name


def _spec_list(specs, where):
    if family_of(specs) is not None:
        specs = [specs]
    if isinstance(specs, (str, bytes)) or not isinstance(specs, Sequence) or not specs:
        raise TypeError(f"{where} must be a non-empty list of kernel specs, got {specs!r}")
    for k, s in enumerate(specs):
        if family_of(s) is None:
            raise TypeError(
                f"{where}[{k}] must be a kernel spec (rbf(), poly(), linear(), kernel()), "
                f"got {type(s).__name__}"
            )
    return list(specs)


def feature_views(groups, specs):
    """The same kernels on every view (group of columns), as ``{view: specs}``.

    Parameters
    ----------
    groups : dict of str to columns
        Each view's columns: indices, column names (resolved against the
        DataFrame the estimator is fitted on) or a slice.
    specs : sequence of kernel specs
        The kernels every view gets; their own ``features`` are replaced
        by the view's columns.

    Returns
    -------
    dict of str to list of specs
        In the order of ``groups``; pass it as an estimator's ``kernels=``.
        The kernels are the views' specs in that order, and each kernel's
        name ends in its view's name (``"rbf(1)[lipid]"``).

    Examples
    --------
    >>> from mklopt.kernels import rbf
    >>> feature_views({"a": [0, 1], "b": [2]}, [rbf(1.0), rbf(4.0)])["b"]
    [rbf(sigma=1.0, features=[2]), rbf(sigma=4.0, features=[2])]
    """
    if not isinstance(groups, Mapping) or not groups:
        raise TypeError(
            "groups must be a non-empty dict {view name: columns}, got "
            f"{type(groups).__name__}"
        )
    specs = _spec_list(specs, "specs")
    out = {}
    for name, cols in groups.items():
        _check_view_name(name, "groups")
        if cols is None:
            raise ValueError(f"groups[{name!r}] is None; give the view's columns")
        feats = _check_features(cols, f"groups[{name!r}]")
        out[name] = [with_features(s, feats) for s in specs]
    return out


def channel_views(n_channels, n_times, specs, names=None):
    """Per-channel kernels for a series flattened by :func:`flatten_channels`.

    Channel ``c`` of an ``(n_samples, n_channels, n_times)`` array occupies
    the columns ``c * n_times, ..., (c + 1) * n_times - 1`` of its
    flattened form, and gets the kernels ``specs`` on those columns.

    Parameters
    ----------
    n_channels, n_times : int
        The array's second and third dimensions (or pass ``X.shape[1:]``
        via :func:`flatten_channels`, which returns the views too).
    specs : sequence of kernel specs
    names : sequence of str, optional
        One name per channel; default ``"ch0"``, ``"ch1"``, ...

    Returns
    -------
    dict of str to list of specs
        As :func:`feature_views`.
    """
    for v, what in ((n_channels, "n_channels"), (n_times, "n_times")):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{what} must be an integer >= 1, got {v!r}")
    if names is None:
        names = [f"ch{c}" for c in range(n_channels)]
    names = list(names)
    if len(names) != n_channels or len(set(names)) != len(names):
        raise ValueError(f"names must be {n_channels} distinct channel names, got {names!r}")
    return feature_views(
        {_check_view_name(nm, "names"): slice(c * n_times, (c + 1) * n_times)
         for c, nm in enumerate(names)},
        specs,
    )


def flatten_channels(X, specs=None, names=None):
    """An ``(n_samples, n_channels, n_times)`` series as the 2-D input the estimators take.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_channels, n_times)
    specs : sequence of kernel specs, optional
        With specs, the per-channel kernels are returned too
        (:func:`channel_views`).
    names : sequence of str, optional
        Channel names for the views.

    Returns
    -------
    X2 : ndarray of shape (n_samples, n_channels * n_times)
        ``X.reshape(n_samples, -1)``: the channels side by side. Flatten
        test series the same way.
    kernels : dict of str to list of specs
        Only when ``specs`` is given.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import rbf
    >>> X2, kernels = flatten_channels(np.zeros((5, 3, 4)), [rbf(1.0)], names=["x", "y", "z"])
    >>> X2.shape, kernels["z"][0].features
    ((5, 12), (8, 9, 10, 11))
    """
    a = np.asarray(X)
    if a.ndim != 3:
        raise ValueError(
            f"X must be 3-D (n_samples, n_channels, n_times), got shape {a.shape}"
        )
    X2 = np.ascontiguousarray(a.reshape(a.shape[0], a.shape[1] * a.shape[2]))
    if specs is None:
        return X2
    return X2, channel_views(int(a.shape[1]), int(a.shape[2]), specs, names)


def flatten_views(kernels, where="kernels"):
    """``(specs, views)`` of an estimator's ``kernels={view: specs}``: one list each.

    ``views[k]`` is the name of the view kernel ``k`` belongs to; the
    kernels are the views' specs in the dict's order.
    """
    specs, views = [], []
    for name, group in kernels.items():
        _check_view_name(name, where)
        group = _spec_list(group, f"{where}[{name!r}]")
        specs.extend(group)
        views.extend([name] * len(group))
    if not specs:
        raise ValueError(f"{where} holds no kernels")
    return specs, views
