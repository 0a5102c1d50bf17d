"""The codec every saved estimator builds on: parameters, kernel specs, features.

:class:`EstimatorCodec` saves what every estimator shares: its constructor
parameters, read from ``get_params()`` (so that a subclass's own parameters
are saved too), its kernel specs, each saved by its family, and the
features it was fitted on. The layouts of the fitted models build on it:
:mod:`._mkl` (the MKL estimators, one binary problem after another) and
:mod:`._boost` (MKBoost ensembles). The feature-map arrays, which both
layouts use for kernels trained on feature maps, are written, read and
checked here too.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping

import numpy as np

from ..estimators._names import estimator_kernel_names
from ..estimators._precomputed import is_precomputed
from ..kernels import FeatureMapFunctions, KernelFunctions
from ..kernels.stack import PrecomputedKernel
from ._json import (
    check_param_types,
    is_default,
    param_from_json,
    param_to_json,
    spec_from_json,
    spec_to_json,
)
from ._protocol import Codec

__all__ = ["EstimatorCodec", "classifier_to_arrays", "classifier_from_arrays"]

# Feature maps (format 2), all present or all absent. Per selected kernel:
# its map kind ("function" for plain kernel functions), the number of
# columns of its stored matrix and where the matrix sits in map_data; per
# pair: its rows of landmark_X (the Nyström landmarks).
_MAP_ARRAYS = {
    "map_kind": ("U", 1),
    "map_cols": ("i", 1),
    "map_offsets": ("i", 1),
    "map_data": ("f", 1),
    "landmark_offsets": ("i", 1),
    "landmark_X": ("f", 2),
}
_MAP_KINDS = ("function", "exact", "nystroem", "fourier")
#: The first format that holds models fitted on precomputed kernels.
_PRECOMPUTED_VERSION = 3


def _classes_array(classes):
    c = np.asarray(classes)
    if c.dtype.kind == "O":
        if all(isinstance(v, str) for v in c.tolist()):
            return c.astype(str)
        raise TypeError(
            "classes_ mixes Python objects that are not strings; only numeric or string "
            "labels can be saved"
        )
    if c.dtype.kind in "SU":
        return c.astype(str)
    if c.dtype.kind not in "biuf":
        raise TypeError(f"classes_ of dtype {c.dtype} cannot be saved")
    if c.dtype.kind in "iu":
        return c.astype(np.int64)
    if c.dtype.kind == "f":
        return c.astype(np.float64)
    return c


# --------------------------------------------------------------------------
# the pairs' predictors <-> flat arrays
# --------------------------------------------------------------------------
def _collect_maps(fn, kinds, cols, data, offsets, landmarks):
    """Append one predictor's kernel maps to the flat arrays; returns its landmark count."""
    if not isinstance(fn, FeatureMapFunctions):
        for _ in range(fn.n_kernels):
            kinds.append("function")
            cols.append(0)
            offsets.append(offsets[-1])
        return 0
    for kind, M in zip(fn.kinds, fn.maps, strict=True):
        kinds.append(kind)
        cols.append(0 if M is None else M.shape[1])
        if M is not None:
            data.append(M.ravel())
        offsets.append(offsets[-1] + (0 if M is None else M.size))
    if fn.landmarks is None:
        return 0
    landmarks.append(fn.landmarks)
    return int(fn.landmarks.shape[0])


def _map_arrays(kinds, cols, data, offsets, landmark_offsets, landmarks, d):
    """The flat feature-map arrays gathered by :func:`_collect_maps` (none if all are functions)."""
    if all(kind == "function" for kind in kinds):
        return {}
    return dict(
        map_kind=np.array(kinds, dtype=str).reshape(len(kinds)),
        map_cols=np.asarray(cols, dtype=np.int64),
        map_offsets=np.asarray(offsets, dtype=np.int64),
        map_data=(np.concatenate(data) if data else np.zeros(0)).astype(np.float64),
        landmark_offsets=np.asarray(landmark_offsets, dtype=np.int64),
        landmark_X=(np.concatenate(landmarks, axis=0) if landmarks
                    else np.empty((0, d))).astype(np.float64),
    )


def _functions(a, specs, sel, k0, k1, s0, s1, k):
    """Kernel functions of pair ``k``: plain, or feature maps (format 2)."""
    scales = np.ascontiguousarray(a["kernel_scale"][k0:k1])
    X = np.ascontiguousarray(a["sv_X"][s0:s1])
    chosen = [specs[i] for i in sel.tolist()]
    kinds = a["map_kind"][k0:k1].tolist() if "map_kind" in a else ["function"] * (k1 - k0)
    if all(kind == "function" for kind in kinds):
        return KernelFunctions(chosen, scales, X)
    if "function" in kinds:
        raise ValueError(f"pair {k} mixes plain kernel functions with feature maps")
    lo, hi = int(a["landmark_offsets"][k]), int(a["landmark_offsets"][k + 1])
    landmarks = np.ascontiguousarray(a["landmark_X"][lo:hi]) if hi > lo else None
    maps = []
    for j, kind in enumerate(kinds):
        i = k0 + j
        flat = a["map_data"][int(a["map_offsets"][i]) : int(a["map_offsets"][i + 1])]
        cols = int(a["map_cols"][i])
        if kind == "exact":
            if flat.size or cols:
                raise ValueError(f"exact map {i} carries data")
            maps.append(None)
            continue
        if cols < 1 or flat.size % cols:
            raise ValueError(f"map {i} has {flat.size} numbers for {cols} columns")
        maps.append(np.ascontiguousarray(flat.reshape(flat.size // cols, cols)))
    return FeatureMapFunctions(chosen, scales, X, kinds, maps, landmarks)


def _positive_int(header, key):
    v = header.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"metadata field {key!r} must be a positive integer")
    return v



def _check_classes(a, n_pairs):
    """``classes`` and ``pairs``: one-vs-one pairs of distinct classes, in order."""
    c = a["classes"].shape[0]
    if a["pairs"].shape != (n_pairs, 2):
        raise ValueError(f"array 'pairs' has shape {a['pairs'].shape}, expected {(n_pairs, 2)}")
    if c < 2 or n_pairs != c * (c - 1) // 2 or len(np.unique(a["classes"])) != c:
        raise ValueError(f"{c} classes do not match {n_pairs} one-vs-one pairs")
    expected_pairs = [[i, j] for i in range(c) for j in range(i + 1, c)]
    if a["pairs"].tolist() != expected_pairs:
        raise ValueError("the one-vs-one pairs are not in the expected order")


def _check_dtypes(a, table):
    """Every array of ``table`` present in ``a``: its dtype kind and ndim, floats finite."""
    for key, (kinds, ndim) in table.items():
        if key not in a:
            continue
        arr = a[key]
        if arr.dtype.kind not in kinds or arr.ndim != ndim:
            raise ValueError(f"array {key!r} has dtype {arr.dtype} and {arr.ndim} dimension(s)")
        if arr.dtype.kind == "f" and key != "gap" and not np.all(np.isfinite(arr)):
            raise ValueError(f"array {key!r} holds NaN or infinity")


def _check_offsets(a, key, end=None):
    """``a[key]`` is a non-decreasing offset table from 0 (ending at ``end`` if given)."""
    off = a[key]
    if off.size == 0 or off[0] != 0 or np.any(np.diff(off) < 0) or (
            end is not None and off[-1] != end):
        raise ValueError(f"array {key!r} is not a non-decreasing offset table"
                         + ("" if end is None else " of its data"))


def _check_map_arrays(a, header, total_sel, n_units):
    """The optional feature-map arrays: all or none, consistent offsets, known kinds.

    ``total_sel`` kernels in all, in ``n_units`` groups that each have their
    own landmarks (a pair of classes, or one kernel of a boosted pair).
    """
    present = sorted(key for key in _MAP_ARRAYS if key in a)
    if not present:
        return
    if header["format_version"] < 2:
        raise ValueError("feature-map arrays in a format 1 file")
    if len(present) != len(_MAP_ARRAYS):
        missing = sorted(set(_MAP_ARRAYS) - set(present))
        raise ValueError(f"feature-map arrays missing: {', '.join(missing)}")
    d = header["n_features"]
    for key, shape in (
        ("map_kind", (total_sel,)),
        ("map_cols", (total_sel,)),
        ("map_offsets", (total_sel + 1,)),
        ("landmark_offsets", (n_units + 1,)),
    ):
        if a[key].shape != shape:
            raise ValueError(f"array {key!r} has shape {a[key].shape}, expected {shape}")
    for key, end in (("map_offsets", a["map_data"].size),
                     ("landmark_offsets", a["landmark_X"].shape[0])):
        off = a[key]
        if off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] != end:
            raise ValueError(f"array {key!r} is not an offset table of its data")
    if a["landmark_X"].shape[1] != d:
        raise ValueError(f"landmark_X has {a['landmark_X'].shape[1]} columns, not {d}")
    bad = sorted(set(a["map_kind"].tolist()) - set(_MAP_KINDS))
    if bad:
        raise ValueError(f"unknown feature-map kinds {bad}")
    if np.any(a["map_cols"] < 0):
        raise ValueError("negative feature-map column counts")


def _finite_vector(value, what, d):
    a = np.asarray(value, dtype=np.float64) if isinstance(value, list) else None
    if a is None or a.shape != (d,) or not np.all(np.isfinite(a)):
        raise ValueError(f"fitted {what} must be {d} finite numbers")
    return a


def _finite_number(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"fitted {what} must be a finite number")
    return float(value)



# --------------------------------------------------------------------------
# the codec every estimator's builds on
# --------------------------------------------------------------------------
class EstimatorCodec(Codec):
    """What every saved estimator writes: parameters, kernel specs, features.

    A user's subclass of an estimator needs nothing of its own: its
    constructor parameters are saved with the others (as JSON data), and
    the class is found again by name when the file is loaded.
    """

    #: Parameters that are not part of a model: run-time resources and hooks.
    skip = ("callback", "client", "n_jobs")
    #: Parameters newer than format 1, written only when set, so that files
    #: of models that do not use them stay readable by older mklopt.
    if_set = ("elastic_net", "multiclass", "verbose", "kernel_names", "kernel_axis", "psd")

    def has_features(self, est):
        """Whether the model sees features (False for ``kernels="precomputed"``)."""
        return not is_precomputed(getattr(est, "kernels", None))

    def params(self, cls):
        """The constructor parameters of ``cls`` that a file keeps."""
        return [n for n in cls._get_param_names() if n not in self.skip]

    def legacy_params(self, cls, params, arrays):
        """Parameters a file of an older layout leaves out, filled in as that layout meant."""
        return params

    def common_to_arrays(self, est):
        """Parameters, kernel specs and features of a fitted estimator, as JSON."""
        values = est.get_params(deep=False)
        defaults = inspect.signature(type(est).__init__).parameters
        params = {}
        for name in self.params(type(est)):
            value = values[name]
            if name == "kernels":
                if isinstance(value, Mapping):
                    # the views' names and sizes; their specs are kernel_specs below
                    params[name] = {"views": [[str(v), len(g) if isinstance(g, (list, tuple))
                                               else 1] for v, g in value.items()]}
                else:
                    params[name] = value if isinstance(value, str) else None  # specs: below
            elif name not in self.if_set or not is_default(value, defaults[name]):
                params[name] = param_to_json(name, value)
        specs = list(est.kernel_specs_)
        out = {
            "n_features": int(est.n_features_in_),
            "n_kernels": len(specs),
            "kernel_specs": [spec_to_json(s) for s in specs],
            "params": params,
        }
        # The kernels' readable names (views, column names): metadata for people,
        # not read back (load computes them again from the parameters).
        out["kernel_names"] = estimator_kernel_names(est)
        fitted_names = getattr(est, "feature_names_in_", None)
        if fitted_names is not None:
            # load restores feature_names_in_, so prediction checks the columns again
            out["feature_names_in"] = [str(f) for f in fitted_names]
        return out

    def common_from_arrays(self, cls, arrays, counts=()):
        """``(arrays, header, specs)`` of :meth:`to_arrays` output, the header checked.

        ``counts`` names further header fields that must be positive integers.
        """
        a = {k: v for k, v in arrays.items() if isinstance(v, np.ndarray)}
        header = {k: v for k, v in arrays.items() if not isinstance(v, np.ndarray)}
        header.setdefault("format_version", 1)
        for key in ("n_features", "n_kernels", *counts):
            _positive_int(header, key)
        for key in ("kernel_specs", "params"):
            if key not in header:
                raise ValueError(f"metadata field {key!r} is missing")
        if not isinstance(header["params"], dict):
            raise ValueError("metadata field 'params' is not an object")
        names = header.get("feature_names_in")
        if names is not None and (not isinstance(names, list)
                                  or len(names) != header["n_features"]
                                  or not all(isinstance(s, str) for s in names)):
            raise ValueError("feature_names_in must be one string per feature")
        specs_json = header["kernel_specs"]
        if not isinstance(specs_json, list) or len(specs_json) != header["n_kernels"]:
            raise ValueError("kernel_specs must list n_kernels specs")
        specs = [spec_from_json(s, k) for k, s in enumerate(specs_json)]
        for s in specs:
            if s.features is not None and max(s.features) >= header["n_features"]:
                raise ValueError(f"kernel spec {s!r} uses a feature >= n_features")
        unknown = sorted(set(header["params"]) - set(self.params(cls)))
        if unknown:
            raise ValueError(f"unknown parameters {', '.join(unknown)} for {cls.__name__}")
        check_param_types(header["params"])
        return a, header, specs

    def new_from_params(self, cls, saved, specs, a):
        """The unfitted estimator with the saved parameters (specs as ``kernels``)."""
        params = {name: param_from_json(name, value) for name, value in saved.items()}
        if is_precomputed(params.get("kernels")):
            if not all(isinstance(s, PrecomputedKernel) for s in specs):
                raise ValueError("a precomputed model's kernel specs are all of kind "
                                 "'precomputed'")
            if [s.index for s in specs] != list(range(len(specs))):
                bad = next(k for k, s in enumerate(specs) if s.index != k)
                raise ValueError(f"kernel spec {bad} is precomputed kernel {specs[bad].index!r}, "
                                 f"expected index {bad}")
        elif any(isinstance(s, PrecomputedKernel) for s in specs):
            raise ValueError("kernel specs of kind 'precomputed' need kernels='precomputed'")
        elif isinstance(params.get("kernels"), dict):
            views = params["kernels"]["views"]
            if sum(n for _, n in views) != len(specs):
                raise ValueError("the views of kernels do not add up to the kernel specs")
            out, k = {}, 0
            for name, n in views:
                out[name] = list(specs[k:k + n])
                k += n
            params["kernels"] = out
        elif params.get("kernels") not in ("grid", "all_features"):
            params["kernels"] = list(specs)
        return cls(**self.legacy_params(cls, params, a))

    @staticmethod
    def restore_common(est, header, specs):
        """Set the fitted attributes every estimator shares (features, specs)."""
        est.n_features_in_ = header["n_features"]
        if header.get("feature_names_in") is not None:
            est.feature_names_in_ = np.asarray(header["feature_names_in"], dtype=object)
        est.kernel_specs_ = list(specs)
        est.n_kernels_ = len(specs)


def classifier_to_arrays(est):
    """A fitted classifier's classes, one-vs-one pairs and scaler."""
    out = {"classes": _classes_array(est.classes_),
           "pairs": np.asarray(est.pairs_, dtype=np.int64).reshape(len(est.models_), 2)}
    if getattr(est, "scaler_mean_", None) is not None:
        out["scaler_mean"] = np.asarray(est.scaler_mean_, dtype=np.float64)
        out["scaler_scale"] = np.asarray(est.scaler_scale_, dtype=np.float64)
    return out


def classifier_from_arrays(est, a):
    """Set what :func:`classifier_to_arrays` saved (no scaler arrays: no scaler)."""
    est.classes_ = a["classes"]
    if "scaler_mean" in a:
        est.scaler_mean_ = np.ascontiguousarray(a["scaler_mean"])
        est.scaler_scale_ = np.ascontiguousarray(a["scaler_scale"])
    else:
        est.scaler_mean_ = est.scaler_scale_ = None
    est.pairs_ = np.ascontiguousarray(a["pairs"])


def legacy_standardize(codec, cls, params, a):
    """Files from before the classifiers standardised say nothing about it: those
    models were trained on the features as given."""
    if "standardize" in codec.params(cls):
        params.setdefault("standardize", "scaler_mean" in a)
    return params
