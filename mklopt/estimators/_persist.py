"""How the MKL estimators save themselves: ``to_arrays`` / ``from_arrays``.

:mod:`mklopt.persist` writes and reads the archive (an ``.npz`` of arrays
plus one JSON header) and checks it as a file; what goes into it is the
estimator's business, and lives here, one mixin per estimator class:

- :class:`PairModelPersist`: what every MKL estimator keeps, one binary
  problem (*pair*) after another: the support vectors' rows (or, on
  precomputed kernels, their indices), the selected kernels with their
  normalisation and weights, the dual coefficients and biases, the run
  summaries; the kernel specs, each saved by itself
  (:class:`mklopt._persistence.Persistent`); the constructor parameters,
  read from ``get_params()``, so that a subclass's own parameters are saved
  too.
- :class:`ClassifierPersist` adds the classes, the one-vs-one pairs and the
  classifier's scaler; :class:`RegressorPersist` and
  :class:`OneClassPersist` their training standardisation (and the
  target's), as one problem of two placeholder classes.

The layout is the one model files have had since format 1 (see
:mod:`mklopt.persist` for the versions): per-pair arrays are concatenated,
with ``*_offsets`` tables marking where each pair starts.
"""

from __future__ import annotations

import inspect
import math

import numpy as np

from .._persistence import Persistent, kind_of, persistent_kind, to_json
from ..kernels import (
    FeatureMap,
    FeatureMapFunctions,
    KernelExpansion,
    KernelFunctions,
)
from ..methods import METHODS, method_names
from ._ovo import pair_values, set_pair_attributes
from ._precomputed import PrecomputedExpansion, PrecomputedKernel, is_precomputed
from ._progress import check_verbose

__all__ = ["PairModelPersist", "ClassifierPersist", "RegressorPersist", "OneClassPersist"]

# array name -> (allowed dtype kinds, ndim); shapes are checked together below.
_ARRAYS = {
    "classes": ("biufU", 1),
    "pairs": ("i", 2),
    "weights": ("f", 2),
    "intercept": ("f", 1),
    "n_iter": ("i", 1),
    "n_oracle_calls": ("i", 1),
    "gap": ("f", 1),
    "converged": ("b", 1),
    "sv_offsets": ("i", 1),
    "sv_X": ("f", 2),
    "sv_index": ("i", 1),
    "sv_pair_index": ("i", 1),
    "dual_coef": ("f", 1),
    "kernel_offsets": ("i", 1),
    "kernel_index": ("i", 1),
    "kernel_weight": ("f", 1),
    "kernel_scale": ("f", 1),
}
# x_mean/x_scale: a standardisation the caller applied before fit (written
# by mklopt.persist.save_model); scaler_mean/scaler_scale: the classifier's
# own (absent in files written before it had one).
_OPTIONAL_ARRAYS = {
    "x_mean": ("f", 1),
    "x_scale": ("f", 1),
    "scaler_mean": ("f", 1),
    "scaler_scale": ("f", 1),
}
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

# Fitted attributes that a shared-weight multiclass model holds once for all
# pairs (one joint run); the file keeps one row per pair, repeated.
_SHARED_RUN = ("weights_", "n_iter_", "n_oracle_calls_", "gap_", "converged_")


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
    return {"kind": kind_of(spec), **spec.to_arrays()}


def _spec_from_json(obj, k):
    if not isinstance(obj, dict) or "kind" not in obj:
        raise ValueError(f"kernel spec {k} is not a JSON object with a 'kind' field")
    cls = persistent_kind(obj["kind"])
    if cls is None or not hasattr(cls, "features"):  # kernel specs only
        raise ValueError(f"kernel spec {k} has unknown kind {obj['kind']!r}")
    fields = {key: v for key, v in obj.items() if key != "kind"}
    try:
        return cls.from_arrays(fields)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"kernel spec {k}: {exc}") from None


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


def _pack_pairs(est, precomputed):
    """The pairs' predictors of a fitted estimator as the flat arrays of the layout."""
    d = int(est.n_features_in_)
    specs = list(est.kernel_specs_)
    sv_X, sv_index, sv_pair, coef, sv_off = [], [], [], [], [0]
    k_idx, k_w, k_scale, k_off = [], [], [], [0]
    m_kind, m_cols, m_data, m_off, lm_X, lm_off = [], [], [], [0], [], [0]
    spec_index = {s: k for k, s in enumerate(specs)}
    for model, support in zip(est.models_, pair_values(est, "support_"), strict=True):
        pred = model.predictor
        fn = getattr(pred, "functions", None)
        n_landmarks = 0
        if precomputed:
            # The columns of the test kernels it reads, and the weights
            # with the normalisation folded in (kernel_scale is then 1).
            n_sv = int(pred.support.size)
            k_idx.extend(int(k) for k in pred.kernels)
            k_w.extend(pred.weights.tolist())
            k_scale.extend([1.0] * pred.kernels.size)
        elif fn is None:
            n_sv = 0
        else:
            n_sv = fn.n_samples
            sv_X.append(fn.X)
            k_idx.extend(spec_index[s] for s in fn.specs)
            k_w.extend(np.asarray(pred.weights, dtype=np.float64).tolist())
            k_scale.extend(np.asarray(fn.scales, dtype=np.float64).tolist())
            n_landmarks = _collect_maps(fn, m_kind, m_cols, m_data, m_off, lm_X)
        lm_off.append(lm_off[-1] + n_landmarks)
        if n_sv != len(support) or n_sv != len(pred.coef):
            raise ValueError("the model is inconsistent: support vectors and dual "
                             "coefficients differ")
        sv_index.append(np.asarray(support, dtype=np.int64))
        sv_pair.append(np.asarray(model.support, dtype=np.int64))
        coef.append(np.asarray(pred.coef, dtype=np.float64))
        sv_off.append(sv_off[-1] + n_sv)
        k_off.append(len(k_idx))
    out = {
        "sv_offsets": np.asarray(sv_off, dtype=np.int64),
        "sv_X": (np.concatenate(sv_X, axis=0) if sv_X
                 else np.empty((int(sv_off[-1]) if precomputed else 0, 0 if precomputed else d))
                 ).astype(np.float64),
        "sv_index": np.concatenate(sv_index).astype(np.int64),
        "sv_pair_index": np.concatenate(sv_pair).astype(np.int64),
        "dual_coef": np.concatenate(coef).astype(np.float64),
        "kernel_offsets": np.asarray(k_off, dtype=np.int64),
        "kernel_index": np.asarray(k_idx, dtype=np.int64),
        "kernel_weight": np.asarray(k_w, dtype=np.float64),
        "kernel_scale": np.asarray(k_scale, dtype=np.float64),
    }
    if any(kind != "function" for kind in m_kind):
        out.update(
            map_kind=np.array(m_kind, dtype=str).reshape(len(m_kind)),
            map_cols=np.asarray(m_cols, dtype=np.int64),
            map_offsets=np.asarray(m_off, dtype=np.int64),
            map_data=(np.concatenate(m_data) if m_data else np.zeros(0)).astype(np.float64),
            landmark_offsets=np.asarray(lm_off, dtype=np.int64),
            landmark_X=(np.concatenate(lm_X, axis=0) if lm_X else np.empty((0, d))).astype(
                np.float64),
        )
    return out


def _unpack_pairs(a, specs, n_pairs, precomputed):
    """The pairs' models (``_BinaryMKL``), supports and coefficients from the flat arrays."""
    from .mkl import _BinaryMKL  # the estimator module imports this one

    sv_off, k_off = a["sv_offsets"], a["kernel_offsets"]
    models, supports, coefs = [], [], []
    for k in range(n_pairs):
        s0, s1 = int(sv_off[k]), int(sv_off[k + 1])
        k0, k1 = int(k_off[k]), int(k_off[k + 1])
        coef = np.ascontiguousarray(a["dual_coef"][s0:s1])
        bias = float(a["intercept"][k])
        if precomputed:
            pred = PrecomputedExpansion(a["kernel_index"][k0:k1], a["kernel_weight"][k0:k1],
                                        a["sv_index"][s0:s1], coef, bias)
        elif s1 == s0:
            pred = KernelExpansion(None, [], [], bias)
        else:
            sel = a["kernel_index"][k0:k1]
            functions = _functions(a, specs, sel, k0, k1, s0, s1, k)
            pred = KernelExpansion(functions, a["kernel_weight"][k0:k1], coef, bias)
        models.append(_BinaryMKL(
            predictor=pred,
            weights=np.ascontiguousarray(a["weights"][k]),
            support=np.ascontiguousarray(a["sv_pair_index"][s0:s1]),
            dual_coef=coef,
            bias=bias,
            result=None,
        ))
        supports.append(np.ascontiguousarray(a["sv_index"][s0:s1]))
        coefs.append(coef)
    return models, supports, coefs


# --------------------------------------------------------------------------
# checks of what a file holds
# --------------------------------------------------------------------------
def _positive_int(header, key):
    v = header.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"metadata field {key!r} must be a positive integer")
    return v


def _check_arrays(a, header):
    d, m, P = header["n_features"], header["n_kernels"], header["n_pairs"]
    missing = sorted(set(_ARRAYS) - set(a))
    if missing:
        raise ValueError(f"missing arrays: {', '.join(missing)}")
    for key, (kinds, ndim) in {**_ARRAYS, **_OPTIONAL_ARRAYS, **_MAP_ARRAYS}.items():
        if key not in a:
            continue
        arr = a[key]
        if arr.dtype.kind not in kinds or arr.ndim != ndim:
            raise ValueError(f"array {key!r} has dtype {arr.dtype} and {arr.ndim} dimension(s)")
        if arr.dtype.kind == "f" and key != "gap" and not np.all(np.isfinite(arr)):
            raise ValueError(f"array {key!r} holds NaN or infinity")
    for mean, scale in (("x_mean", "x_scale"), ("scaler_mean", "scaler_scale")):
        if (mean in a) != (scale in a):
            raise ValueError(f"{mean} and {scale} go together")
    if "scaler_scale" in a and not np.all(a["scaler_scale"] > 0):
        raise ValueError("scaler_scale must be positive")

    c = a["classes"].shape[0]
    n_sv, n_sel = a["sv_offsets"], a["kernel_offsets"]
    shapes = {
        "pairs": (P, 2), "weights": (P, m), "intercept": (P,), "n_iter": (P,),
        "n_oracle_calls": (P,), "gap": (P,), "converged": (P,), "sv_offsets": (P + 1,),
        "kernel_offsets": (P + 1,), "x_mean": (d,), "x_scale": (d,), "scaler_mean": (d,),
        "scaler_scale": (d,),
    }
    for key, shape in shapes.items():
        if key in a and a[key].shape != shape:
            raise ValueError(f"array {key!r} has shape {a[key].shape}, expected {shape}")
    if c < 2 or P != c * (c - 1) // 2 or len(np.unique(a["classes"])) != c:
        raise ValueError(f"{c} classes do not match {P} one-vs-one pairs")
    expected_pairs = [[i, j] for i in range(c) for j in range(i + 1, c)]
    if a["pairs"].tolist() != expected_pairs:
        raise ValueError("the one-vs-one pairs are not in the expected order")
    for key, off in (("sv_offsets", n_sv), ("kernel_offsets", n_sel)):
        if off[0] != 0 or np.any(np.diff(off) < 0):
            raise ValueError(f"array {key!r} is not a non-decreasing offset table")
    total_sv, total_sel = int(n_sv[-1]), int(n_sel[-1])
    precomputed = is_precomputed(header["params"].get("kernels"))
    if precomputed and header["format_version"] < _PRECOMPUTED_VERSION:
        raise ValueError(f"a precomputed model in a format {header['format_version']} file")
    for key, shape in (
        # A precomputed model's support vectors are indices, not feature rows.
        ("sv_X", (total_sv, 0 if precomputed else d)),
        ("sv_index", (total_sv,)),
        ("sv_pair_index", (total_sv,)),
        ("dual_coef", (total_sv,)),
        ("kernel_index", (total_sel,)),
        ("kernel_weight", (total_sel,)),
        ("kernel_scale", (total_sel,)),
    ):
        if a[key].shape != shape:
            raise ValueError(f"array {key!r} has shape {a[key].shape}, expected {shape}")
    if np.any(a["sv_index"] < 0) or np.any(a["sv_pair_index"] < 0):
        raise ValueError("negative support vector indices")
    if precomputed and np.any(a["sv_index"] >= d):
        raise ValueError(f"support vector indices outside the {d} training samples")
    if np.any(a["kernel_index"] < 0) or np.any(a["kernel_index"] >= m):
        raise ValueError(f"kernel indices outside [0, {m})")
    if np.any(a["weights"] < 0) or np.any(a["kernel_weight"] <= 0):
        raise ValueError("negative kernel weights")
    if np.any(a["kernel_scale"] <= 0):
        raise ValueError("kernel scales must be positive")
    if "x_scale" in a and np.any(a["x_scale"] <= 0):
        raise ValueError("x_scale must be positive")
    for k in range(P):
        sel = a["kernel_index"][n_sel[k] : n_sel[k + 1]]
        if n_sv[k + 1] > n_sv[k] and sel.size == 0:
            raise ValueError(f"pair {k} has support vectors but no selected kernel")
    _check_map_arrays(a, header, total_sel)


def _check_map_arrays(a, header, total_sel):
    """The optional feature-map arrays: all or none, consistent offsets, known kinds."""
    present = sorted(key for key in _MAP_ARRAYS if key in a)
    if not present:
        return
    if header["format_version"] < 2:
        raise ValueError("feature-map arrays in a format 1 file")
    if len(present) != len(_MAP_ARRAYS):
        missing = sorted(set(_MAP_ARRAYS) - set(present))
        raise ValueError(f"feature-map arrays missing: {', '.join(missing)}")
    P, d = header["n_pairs"], header["n_features"]
    for key, shape in (
        ("map_kind", (total_sel,)),
        ("map_cols", (total_sel,)),
        ("map_offsets", (total_sel + 1,)),
        ("landmark_offsets", (P + 1,)),
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
# the mixins
# --------------------------------------------------------------------------
class PairModelPersist(Persistent):
    """``to_arrays`` / ``from_arrays`` of the MKL estimators (one or more binary problems).

    Subclasses say what their class adds (:meth:`_fitted_to_arrays`,
    :meth:`_fitted_from_arrays`). A user's subclass of an estimator needs
    nothing: its constructor parameters are saved with the others (as JSON
    data), and the class is found again by name when the file is loaded.
    """

    __slots__ = ()

    #: Parameters that are not part of a model: run-time resources and hooks.
    _persist_skip = ("callback", "client", "n_jobs")
    #: Parameters newer than format 1, written only when set, so that files
    #: of models that do not use them stay readable by older mklopt.
    _persist_if_set = ("elastic_net", "multiclass", "verbose")
    #: The lowest format that holds this class's models.
    _persist_min_version = 1

    # ---- hooks ---------------------------------------------------------------
    def _fitted_to_arrays(self):
        """The class's own fitted values: ``classes`` and ``pairs`` arrays, and more."""
        raise NotImplementedError

    def _fitted_from_arrays(self, arrays):
        """Set the class's own fitted attributes from :meth:`_fitted_to_arrays` output."""
        raise NotImplementedError

    @classmethod
    def _legacy_params(cls, params, arrays):
        """Parameters a file of an older layout leaves out, filled in as that layout meant."""
        return params

    @property
    def _saves_features(self):
        """Whether the model sees features (False for ``kernels="precomputed"``)."""
        return not is_precomputed(getattr(self, "kernels", None))

    @classmethod
    def _persisted_params(cls):
        names = cls._get_param_names()
        return [n for n in names if n not in cls._persist_skip]

    # ---- the protocol --------------------------------------------------------
    def to_arrays(self):
        """The fitted model as arrays and a JSON header (the model file's layout).

        Returns
        -------
        dict
            Arrays (``weights``, ``dual_coef``, ``sv_X``, ...) and JSON values
            (``format_version``: the lowest layout that holds the model;
            ``n_features``, ``n_kernels``, ``n_pairs``, ``kernel_specs``,
            ``params``, ...).

        Raises
        ------
        ValueError
            If the estimator is not fitted.
        TypeError
            If a parameter cannot be represented without pickle.
        """
        if not hasattr(self, "models_"):
            raise ValueError(f"{type(self).__name__} is not fitted; call fit before saving it")
        precomputed = is_precomputed(getattr(self, "kernels", None))
        specs = list(self.kernel_specs_)
        n_pairs = len(self.models_)
        out = _pack_pairs(self, precomputed)
        out.update(self._fitted_to_arrays())
        out.update(
            weights=np.asarray(self._per_pair("weights_"), dtype=np.float64).reshape(
                n_pairs, len(specs)),
            intercept=np.array([mdl.bias for mdl in self.models_], dtype=np.float64),
            n_iter=np.asarray(self._per_pair("n_iter_"), dtype=np.int64),
            n_oracle_calls=np.asarray(self._per_pair("n_oracle_calls_"), dtype=np.int64),
            gap=np.asarray(self._per_pair("gap_"), dtype=np.float64),
            converged=np.asarray(self._per_pair("converged_"), dtype=bool),
        )
        values = self.get_params(deep=False)
        defaults = inspect.signature(type(self).__init__).parameters
        params = {}
        for name in self._persisted_params():
            value = values[name]
            if name == "kernels":
                params[name] = value if isinstance(value, str) else None  # specs: below
            elif name not in self._persist_if_set or not _is_default(value, defaults[name]):
                params[name] = _param_to_json(name, value)
        storage = values.get("storage")
        version = max(
            self._persist_min_version,
            _PRECOMPUTED_VERSION if precomputed else 1,
            2 if "map_kind" in out or isinstance(storage, FeatureMap)
            or (isinstance(storage, str) and storage == "feature_map") else 1,
        )
        fitted_names = getattr(self, "feature_names_in_", None)
        out.update(
            format_version=version,
            n_features=int(self.n_features_in_),
            n_kernels=len(specs),
            n_pairs=n_pairs,
            kernel_specs=[_spec_to_json(s) for s in specs],
            params=params,
        )
        if fitted_names is not None:
            # load restores feature_names_in_, so prediction checks the columns again
            out["feature_names_in"] = [str(f) for f in fitted_names]
        return out

    @classmethod
    def from_arrays(cls, arrays):
        """A fitted estimator rebuilt from :meth:`to_arrays` output, every array checked.

        Raises
        ------
        ValueError
            Naming what is inconsistent (missing arrays, shapes, dtypes,
            non-finite values, indices out of range, unknown parameters).
        """
        a = {k: v for k, v in arrays.items() if isinstance(v, np.ndarray)}
        header = {k: v for k, v in arrays.items() if not isinstance(v, np.ndarray)}
        header.setdefault("format_version", 1)
        for key in ("n_features", "n_kernels", "n_pairs"):
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
        _check_arrays(a, header)
        est = cls(**cls._params_from_json(header["params"], specs, a))
        est._restore(a, header, specs)
        return est

    # ---- helpers ---------------------------------------------------------------
    def _is_shared(self):
        """Whether one weight vector was learnt for several pairs (``multiclass="shared"``)."""
        return getattr(self, "multiclass", "ovo") == "shared" and len(self.models_) > 1

    def _per_pair(self, name):
        """Attribute ``name`` with one entry per pair, as the file stores it."""
        if self._is_shared() and name in _SHARED_RUN:
            return [getattr(self, name)] * len(self.models_)
        return pair_values(self, name)

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
    def _params_from_json(cls, saved, specs, a):
        params = {name: _param_from_json(name, value) for name, value in saved.items()}
        precomputed = is_precomputed(params.get("kernels"))
        if precomputed:
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
        return cls._legacy_params(params, a)

    def _restore(self, a, header, specs):
        P = header["n_pairs"]
        precomputed = is_precomputed(getattr(self, "kernels", None))
        models, supports, coefs = _unpack_pairs(a, specs, P, precomputed)
        self.n_features_in_ = header["n_features"]
        if header.get("feature_names_in") is not None:
            self.feature_names_in_ = np.asarray(header["feature_names_in"], dtype=object)
        self.models_ = models
        self.kernel_specs_ = list(specs)
        self.n_kernels_ = len(specs)
        self.intercept_ = np.ascontiguousarray(a["intercept"])
        run = {
            "weights_": np.ascontiguousarray(a["weights"]),
            "n_iter_": a["n_iter"],
            "n_oracle_calls_": a["n_oracle_calls"],
            "gap_": a["gap"],
            "converged_": a["converged"],
        }
        if self._is_shared():
            if not np.all(a["weights"] == a["weights"][0]):
                raise ValueError("a shared-weight model has the same weights for every pair")
            # One joint run: its values once, as the fitted estimator has them.
            set_pair_attributes(self, **{k: v[:1] for k, v in run.items()})
            self.support_, self.dual_coef_ = supports, coefs
        else:
            set_pair_attributes(self, **run, support_=supports, dual_coef_=coefs)
        self._fitted_from_arrays({**a, **header})


class ClassifierPersist(PairModelPersist):
    """Saving of :class:`~mklopt.MKLClassifier`: its classes, pairs and scaler."""

    __slots__ = ()

    def _fitted_to_arrays(self):
        out = {"classes": _classes_array(self.classes_),
               "pairs": np.asarray(self.pairs_, dtype=np.int64).reshape(len(self.models_), 2)}
        if getattr(self, "scaler_mean_", None) is not None:
            out["scaler_mean"] = np.asarray(self.scaler_mean_, dtype=np.float64)
            out["scaler_scale"] = np.asarray(self.scaler_scale_, dtype=np.float64)
        return out

    def _fitted_from_arrays(self, arrays):
        self.classes_ = arrays["classes"]
        if "scaler_mean" in arrays:
            self.scaler_mean_ = np.ascontiguousarray(arrays["scaler_mean"])
            self.scaler_scale_ = np.ascontiguousarray(arrays["scaler_scale"])
        else:
            self.scaler_mean_ = self.scaler_scale_ = None
        self.pairs_ = np.ascontiguousarray(arrays["pairs"])

    @classmethod
    def _legacy_params(cls, params, arrays):
        # Files from before the classifier standardised say nothing about
        # it: those models were trained on the features as given.
        if "standardize" in cls._persisted_params():
            params.setdefault("standardize", "scaler_mean" in arrays)
        return params


class _TaskPersist(PairModelPersist):
    """Saving of a one-problem estimator: two placeholder classes and its standardisation.

    Its own fitted numbers go, as JSON, under the header key ``"fitted"``.
    """

    __slots__ = ()
    _persist_min_version = 2

    def _fitted_to_arrays(self):
        fitted = {"x_mean": None, "x_scale": None}
        if getattr(self, "x_mean_", None) is not None:
            fitted["x_mean"] = np.asarray(self.x_mean_, dtype=np.float64).tolist()
            fitted["x_scale"] = np.asarray(self.x_scale_, dtype=np.float64).tolist()
        return {"classes": np.array([-1, 1], dtype=np.int64),
                "pairs": np.array([[0, 1]], dtype=np.int64), "fitted": fitted}

    def _fitted_from_arrays(self, arrays):
        if arrays["n_pairs"] != 1 or arrays["classes"].tolist() != [-1, 1]:
            raise ValueError(f"a {type(self).__name__} file holds one problem")
        fitted = arrays.get("fitted")
        if not isinstance(fitted, dict):
            raise ValueError("metadata field 'fitted' is missing")
        d = arrays["n_features"]
        mean, scale = fitted.get("x_mean"), fitted.get("x_scale")
        if (mean is None) != (scale is None):
            raise ValueError("fitted x_mean and x_scale go together, scales positive")
        if mean is None:
            self.x_mean_ = self.x_scale_ = None
        else:
            self.x_mean_ = _finite_vector(mean, "x_mean", d)
            self.x_scale_ = _finite_vector(scale, "x_scale", d)
            if np.any(self.x_scale_ <= 0):
                raise ValueError("fitted x_mean and x_scale go together, scales positive")
        return fitted


class RegressorPersist(_TaskPersist):
    """Saving of :class:`~mklopt.MKLRegressor`: also the target's standardisation."""

    __slots__ = ()

    def _fitted_to_arrays(self):
        out = super()._fitted_to_arrays()
        out["fitted"].update(y_mean=float(self.y_mean_), y_scale=float(self.y_scale_))
        return out

    def _fitted_from_arrays(self, arrays):
        fitted = super()._fitted_from_arrays(arrays)
        self.y_mean_ = _finite_number(fitted.get("y_mean"), "y_mean")
        self.y_scale_ = _finite_number(fitted.get("y_scale"), "y_scale")
        if self.y_scale_ <= 0:
            raise ValueError("fitted y_scale must be positive")


class OneClassPersist(_TaskPersist):
    """Saving of :class:`~mklopt.MKLOneClass`: its offset is minus the bias."""

    __slots__ = ()

    def _fitted_from_arrays(self, arrays):
        super()._fitted_from_arrays(arrays)
        self.offset_ = -float(self.intercept_[0])
