"""How estimators save themselves: the parts every saved estimator shares.

:mod:`mklopt.persist` writes and reads the archive (an ``.npz`` of arrays
plus one JSON header) and checks it as a file; what goes into it is the
estimator's business (``to_arrays`` / ``from_arrays``, see
:class:`mklopt.persist.Persistent`). :class:`EstimatorPersist` is what every
saved estimator shares: its constructor parameters, read from
``get_params()`` (so that a subclass's own parameters are saved too), its
kernel specs, each saved by itself, and the features it was fitted on. The
layouts of the fitted models build on it: ``_persist_mkl`` (the MKL
estimators, one binary problem after another) and ``_persist_boost``
(MKBoost ensembles). The feature-map arrays, which both layouts use for
kernels trained on feature maps, are read and checked here too.
"""

from __future__ import annotations

import inspect
import math
import numbers

import numpy as np

from .._persistence import Persistent, kind_of, persistent_kind, to_json
from ..kernels import FeatureMap, FeatureMapFunctions, KernelFunctions
from ..kernels.families import family_of, get_kernel_family
from ..methods import METHODS, method_names
from ._precomputed import PrecomputedKernel, is_precomputed
from ._progress import check_verbose

__all__ = ["EstimatorPersist", "classifier_to_arrays", "classifier_from_arrays"]

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



def _number(v):
    return v is None or (not isinstance(v, bool) and isinstance(v, (int, float))
                         and math.isfinite(v))


def _int_list(g):
    return isinstance(g, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in g)


# Types of the saved values of the built-in parameters (their values are
# checked by fit); any other parameter (a subclass's) is JSON data.
_PARAM_TYPES = {
    "kernels": lambda v: v in (None, "grid", "all_features", "precomputed"),
    "method": lambda v: v is None or isinstance(v, str),
    "groups": lambda v: v in (None, "features") or (isinstance(v, list)
                                                    and all(_int_list(g) for g in v)),
    "normalize": lambda v: v in (None, "trace", "diagonal"),
    "p": lambda v: v == "inf" or _number(v),
    "loss": lambda v: isinstance(v, str),
    "standardize": lambda v: v in ("auto", True, False),
    "multiclass": lambda v: v in ("ovo", "shared"),
    "verbose": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
    # A name, or a feature map as {"feature_map": fields}. Any name: a user's
    # registered storage need not be registered in the process that loads
    # the model (prediction does not read the storage).
    "storage": lambda v: (isinstance(v, str) and bool(v)) or isinstance(v, dict),
    "C": _number, "epsilon": _number, "nu": _number, "tol": _number, "max_iter": _number,
    "inner_tol": _number, "weight_threshold": _number, "time_limit": _number,
    "cache_size": _number, "max_memory": _number, "elastic_net": _number,
    "variant": lambda v: isinstance(v, str), "n_rounds": _number, "sample_ratio": _number,
    "decay": _number,
    "random_state": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
}


def _method_name(method):
    if isinstance(method, str):
        return method
    # An outer-method instance: keep its registry name (the instance's own
    # hyper-parameters do not matter for prediction).
    for name, cls in METHODS.items():
        if type(method) is cls and getattr(cls, "name", name) == name:
            return name
    return None


def _is_default(value, parameter):
    default = parameter.default
    try:
        return value is default or bool(value == default)
    except (TypeError, ValueError):
        return False


def _is_inf(value):
    return (isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)
            and value == math.inf)


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
# parameter values <-> JSON
# --------------------------------------------------------------------------
def _param_to_json(name, value):
    if isinstance(value, Persistent):
        # an object parameter (a FeatureMap storage): {kind: its fields}
        return {kind_of(value): value.to_arrays()}
    if name == "method":
        return _method_name(value)
    if name == "p" and _is_inf(value):
        return "inf"  # p = inf (the sum kernel); JSON has no infinity
    if name == "verbose":
        return check_verbose(value)
    if name == "random_state" and not (value is None or isinstance(value, numbers.Integral)):
        # A generator's state is not data; the fitted model does not depend
        # on it (as for a method instance above), so it loads as None.
        return None
    return to_json(value, name)


def _param_from_json(name, value):
    if name == "p" and value == "inf":
        return math.inf
    if name == "groups" and isinstance(value, list):
        return [list(g) for g in value]
    if name == "storage" and isinstance(value, dict):
        cls = persistent_kind(next(iter(value))) if len(value) == 1 else None
        if cls is None or not issubclass(cls, FeatureMap):
            raise ValueError(f"storage {value!r} is neither a storage name nor a feature map")
        return cls.from_arrays(next(iter(value.values())))
    if name == "method" and value not in (None, "auto") and value not in method_names():
        # registered names, plugins' included; an unknown one falls back to the default
        return None
    return value


def _spec_to_json(spec):
    """A kernel spec as JSON: its family saves it (``{"kind": name, <parameters>, "features"}``)."""
    if isinstance(spec, PrecomputedKernel):
        return {"kind": "precomputed", "index": int(spec.index)}
    family = family_of(spec)
    if family is None:
        raise TypeError(f"cannot save a kernel spec of type {type(spec).__name__}")
    feats = None if spec.features is None else [int(f) for f in spec.features]
    # for the built-in families exactly the fields of every earlier version
    return {"kind": family.name, **family.to_json(family.values(spec)), "features": feats}


def _spec_from_json(obj, k):
    """Kernel spec ``k`` of a file, rebuilt by its family (``ValueError`` naming what is wrong)."""
    if not isinstance(obj, dict) or "kind" not in obj:
        raise ValueError(f"kernel spec {k} is not a JSON object with a 'kind' field")
    kind = obj["kind"]
    if kind == "precomputed":
        if set(obj) != {"kind", "index"}:
            raise ValueError(f"kernel spec {k} (precomputed) has fields {sorted(obj)}, "
                             f"expected {sorted({'kind', 'index'})}")
        # Kernel k of the stack the model was fitted on, in order.
        if obj["index"] != k or isinstance(obj["index"], bool):
            raise ValueError(f"kernel spec {k} is precomputed kernel {obj['index']!r}, "
                             f"expected index {k}")
        return PrecomputedKernel(k)
    try:
        family = get_kernel_family(kind)
    except ValueError as exc:
        raise ValueError(f"kernel spec {k} has unknown kind {kind!r} ({exc})") from None
    if "features" not in obj:
        raise ValueError(f"kernel spec {k} ({kind}) has fields {sorted(obj)}, expected a "
                         "'features' field")
    params = {key: v for key, v in obj.items() if key not in ("kind", "features")}
    try:
        values = family.from_json(params)
        if not isinstance(values, dict) or set(values) != set(family.params):
            raise LookupError
        return family.spec(**values, features=obj["features"])
    except LookupError:
        raise ValueError(f"kernel spec {k} ({kind}) has fields {sorted(obj)}, expected "
                         f"{sorted({'kind', 'features', *family.params})}") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"kernel spec {k} is invalid: {exc}") from None


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
# the base of the estimators' mixins
# --------------------------------------------------------------------------
class EstimatorPersist(Persistent):
    """What every saved estimator writes: parameters, kernel specs, features.

    A user's subclass of an estimator needs nothing of its own: its
    constructor parameters are saved with the others (as JSON data), and
    the class is found again by name when the file is loaded.
    """

    __slots__ = ()

    #: Parameters that are not part of a model: run-time resources and hooks.
    _persist_skip = ("callback", "client", "n_jobs")
    #: Parameters newer than format 1, written only when set, so that files
    #: of models that do not use them stay readable by older mklopt.
    _persist_if_set = ("elastic_net", "multiclass", "verbose")

    @property
    def _saves_features(self):
        """Whether the model sees features (False for ``kernels="precomputed"``)."""
        return not is_precomputed(getattr(self, "kernels", None))

    @classmethod
    def _persisted_params(cls):
        return [n for n in cls._get_param_names() if n not in cls._persist_skip]

    @classmethod
    def _legacy_params(cls, params, arrays):
        """Parameters a file of an older layout leaves out, filled in as that layout meant."""
        return params

    def _common_to_arrays(self):
        """Parameters, kernel specs and features of a fitted estimator, as JSON."""
        values = self.get_params(deep=False)
        defaults = inspect.signature(type(self).__init__).parameters
        params = {}
        for name in self._persisted_params():
            value = values[name]
            if name == "kernels":
                params[name] = value if isinstance(value, str) else None  # specs: below
            elif name not in self._persist_if_set or not _is_default(value, defaults[name]):
                params[name] = _param_to_json(name, value)
        specs = list(self.kernel_specs_)
        out = {
            "n_features": int(self.n_features_in_),
            "n_kernels": len(specs),
            "kernel_specs": [_spec_to_json(s) for s in specs],
            "params": params,
        }
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None:
            # load restores feature_names_in_, so prediction checks the columns again
            out["feature_names_in"] = [str(f) for f in fitted_names]
        return out

    @classmethod
    def _common_from_arrays(cls, arrays, counts=()):
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
        specs = [_spec_from_json(s, k) for k, s in enumerate(specs_json)]
        for s in specs:
            if s.features is not None and max(s.features) >= header["n_features"]:
                raise ValueError(f"kernel spec {s!r} uses a feature >= n_features")
        cls._check_params(header["params"])
        return a, header, specs

    @classmethod
    def _check_params(cls, params):
        """Types of the saved constructor parameters (their values are checked by ``fit``)."""
        unknown = sorted(set(params) - set(cls._persisted_params()))
        if unknown:
            raise ValueError(f"unknown parameters {', '.join(unknown)} for {cls.__name__}")
        for name, value in params.items():
            check = _PARAM_TYPES.get(name)
            if check is not None and not check(value):
                raise ValueError(f"parameter {name}={value!r} has the wrong type")

    @classmethod
    def _new_from_params(cls, saved, specs, a):
        """The unfitted estimator with the saved parameters (specs as ``kernels``)."""
        params = {name: _param_from_json(name, value) for name, value in saved.items()}
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
        elif params.get("kernels") not in ("grid", "all_features"):
            params["kernels"] = list(specs)
        return cls(**cls._legacy_params(params, a))

    def _restore_common(self, header, specs):
        self.n_features_in_ = header["n_features"]
        if header.get("feature_names_in") is not None:
            self.feature_names_in_ = np.asarray(header["feature_names_in"], dtype=object)
        self.kernel_specs_ = list(specs)
        self.n_kernels_ = len(specs)


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


def legacy_standardize(cls, params, a):
    """Files from before the classifiers standardised say nothing about it: those
    models were trained on the features as given."""
    if "standardize" in cls._persisted_params():
        params.setdefault("standardize", "scaler_mean" in a)
    return params
