"""Portable model files for fitted MKL models (:class:`~mklopt.MKLClassifier`,
:class:`~mklopt.MKLRegressor`, :class:`~mklopt.MKLOneClass`).

A model file is one ``.npz`` archive (``numpy.savez``) of plain numeric or
string arrays plus one JSON metadata string. It holds exactly what
prediction needs: the support vectors' training rows, the selected kernels
with their training normalisation constants and weights, the dual
coefficients and biases of every one-vs-one problem, and the classes. A
model trained on feature maps (``storage=nystroem(...)``,
``random_fourier(...)`` or ``"feature_map"``) also keeps its maps: the
Nyström landmarks and eigenvector maps, the Fourier frequencies, so that
the loaded model predicts with the very kernels it was trained on.

A model fitted with ``kernels="precomputed"`` has no feature rows: it
keeps, per binary problem, the indices of its support vectors among the
training samples (``sv_index``), which are the columns of the test kernels
that prediction reads, and its kernel weights with each kernel's
normalisation folded in (``kernel_weight``; ``kernel_scale`` is then 1).
``sv_X`` has no columns, and ``n_features`` is the number of training
samples, as the estimator's ``n_features_in_``.

Format versions: 1 (models on kernel functions), 2 (adds the
feature-map arrays ``map_*`` and ``landmark_*``, and a ``storage`` parameter
that may be a feature-map object, saved as JSON) and 3 (adds models on
precomputed kernels: kernel specs of kind ``"precomputed"``). All are read.
A file is written in the lowest version that can hold the model, so models
without feature maps stay readable by an mklopt that knows only version 1.

:func:`load_model` reads it with ``numpy.load(path, allow_pickle=False)``:
a model file never contains, and loading never runs, Python code. Every
array and every metadata field is checked before a classifier is built;
anything unexpected raises :class:`ModelFormatError` with one sentence
saying what is wrong.

Examples
--------
>>> import os, tempfile
>>> from mklopt import MKLClassifier, datasets
>>> from mklopt.kernels import rbf, linear
>>> from mklopt.persist import save_model, load_model
>>> X, y = datasets.load("sonar")
>>> X_train, X_test, y_train, y_test = datasets.split(X, y, seed=0)
>>> clf = MKLClassifier(kernels=[rbf(4.0), linear()], C=10.0).fit(X_train, y_train)
>>> path = os.path.join(tempfile.mkdtemp(), "sonar.npz")
>>> save_model(clf, path, label="label")
>>> clf2, meta = load_model(path)
>>> bool((clf2.predict(X_test) == clf.predict(X_test)).all())
True
>>> meta["label"]
'label'
"""

from __future__ import annotations

import json
import math
import numbers
import os
import tempfile
import zipfile

import numpy as np

from . import __version__
from .estimators import MKBoostClassifier, MKLClassifier, MKLOneClass, MKLRegressor
from .estimators._ovo import pair_values, set_pair_attributes
from .estimators._precomputed import (
    PrecomputedExpansion,
    PrecomputedKernel,
    is_precomputed,
)
from .estimators._progress import check_verbose
from .estimators.mkl import _BinaryMKL
from .kernels import (
    FeatureMap,
    FeatureMapFunctions,
    KernelExpansion,
    KernelFunctions,
)
from .kernels.families import family_of, get_kernel_family
from .methods import METHODS, method_names
from .tasks import estimator_entry

__all__ = ["save_model", "load_model", "ModelFormatError", "FORMAT_NAME", "FORMAT_VERSION"]

#: Value of the ``format`` field of the metadata.
FORMAT_NAME = "mklopt-model"
#: Newest layout: :func:`load_model` reads every version up to this one, and
#: :func:`save_model` writes it for models that need it (feature maps),
#: version 1 otherwise.
FORMAT_VERSION = 3
#: The first version that holds models fitted on precomputed kernels.
_PRECOMPUTED_VERSION = 3

_META_KEY = "metadata"

# Parameters of MKLClassifier kept in the file. ``callback`` is not data and
# is not saved; ``method`` is saved by its registry name.
_PARAMS = (
    "kernels",
    "method",
    "C",
    "loss",
    "p",
    "groups",
    "elastic_net",
    "tol",
    "max_iter",
    "inner_tol",
    "normalize",
    "standardize",
    "weight_threshold",
    "time_limit",
    "storage",
    "cache_size",
    "max_memory",
    "multiclass",
    "verbose",
)

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
# x_mean/x_scale: a standardisation the caller applied before fit (given to
# save_model); scaler_mean/scaler_scale: the classifier's own (its
# scaler_mean_/scaler_scale_), absent in files written before it had one.
_OPTIONAL_ARRAYS = {
    "x_mean": ("f", 1),
    "x_scale": ("f", 1),
    "scaler_mean": ("f", 1),
    "scaler_scale": ("f", 1),
}
# Feature maps (version 2), all present or all absent. Per selected kernel:
# its map kind ("function" for plain kernel functions), the number of
# columns of its stored matrix and where the matrix sits in map_data;
# per pair: its rows of landmark_X (the Nyström landmarks).
_MAP_ARRAYS = {
    "map_kind": ("U", 1),
    "map_cols": ("i", 1),
    "map_offsets": ("i", 1),
    "map_data": ("f", 1),
    "landmark_offsets": ("i", 1),
    "landmark_X": ("f", 2),
}
_MAP_KINDS = ("function", "exact", "nystroem", "fourier")

# The regression and one-class estimators are stored as one "pair" of two
# placeholder classes (-1, +1), with their own parameters and, under the
# metadata key "fitted", their training standardisation (and the target's
# for regression). Files of these estimators are format version 2 at least.
_TASK_ESTIMATORS = {"MKLRegressor": MKLRegressor, "MKLOneClass": MKLOneClass}


def _format_of(cls):
    """The file layout of an estimator class: the built-in estimator it derives from.

    A registered subclass (:func:`mklopt.tasks.register_estimator`) is saved
    in its base's layout under its own registered name.
    """
    for name, base in (*_TASK_ESTIMATORS.items(), ("MKLClassifier", MKLClassifier)):
        if issubclass(cls, base):
            return name
    return None
_TASK_PARAMS = {
    "MKLRegressor": tuple(p for p in _PARAMS if p not in ("standardize", "multiclass"))
    + ("epsilon", "standardize"),
    "MKLOneClass": tuple(p for p in _PARAMS if p not in ("C", "loss", "standardize", "multiclass"))
    + ("nu", "standardize"),
}
# Fitted attributes that a shared-weight multiclass model holds once for all
# pairs (one joint run); the file keeps one row per pair, repeated.
_SHARED_RUN = ("weights_", "n_iter_", "n_oracle_calls_", "gap_", "converged_")


def _is_shared(clf):
    """Whether ``clf`` learnt one weight vector for several pairs (``multiclass="shared"``)."""
    return getattr(clf, "multiclass", "ovo") == "shared" and len(clf.models_) > 1


def _per_pair(clf, name):
    """Attribute ``name`` with one entry per pair, as the file stores it."""
    if _is_shared(clf) and name in _SHARED_RUN:
        return [getattr(clf, name)] * len(clf.models_)
    return pair_values(clf, name)


class ModelFormatError(ValueError):
    """A model file is missing, truncated, corrupt, foreign or inconsistent."""


# --------------------------------------------------------------------------
# kernel specs <-> JSON
# --------------------------------------------------------------------------
def _spec_to_json(spec):
    if isinstance(spec, PrecomputedKernel):
        return {"kind": "precomputed", "index": int(spec.index)}
    family = family_of(spec)
    if family is None:
        raise TypeError(f"cannot save a kernel spec of type {type(spec).__name__}")
    feats = None if spec.features is None else [int(f) for f in spec.features]
    # {"kind": name, <the family's parameters>, "features": [...]}: for the
    # built-in families exactly the fields of every earlier version.
    return {"kind": family.name, **family.to_json(family.values(spec)), "features": feats}


def _spec_from_json(obj, k):
    if not isinstance(obj, dict) or "kind" not in obj:
        raise ModelFormatError(f"kernel spec {k} is not a JSON object with a 'kind' field")
    kind = obj["kind"]
    if kind == "precomputed":
        if set(obj) != {"kind", "index"}:
            raise ModelFormatError(
                f"kernel spec {k} (precomputed) has fields {sorted(obj)}, expected "
                f"{sorted({'kind', 'index'})}"
            )
        # Kernel k of the stack the model was fitted on, in order.
        if obj["index"] != k or isinstance(obj["index"], bool):
            raise ModelFormatError(f"kernel spec {k} is precomputed kernel {obj['index']!r}, "
                                   f"expected index {k}")
        return PrecomputedKernel(k)
    try:
        family = get_kernel_family(kind)
    except ValueError as exc:
        raise ModelFormatError(f"kernel spec {k} has unknown kind {kind!r} ({exc})") from None
    if "features" not in obj:
        raise ModelFormatError(
            f"kernel spec {k} ({kind}) has fields {sorted(obj)}, expected a 'features' field"
        )
    params = {key: v for key, v in obj.items() if key not in ("kind", "features")}
    try:
        values = family.from_json(params)
        if not isinstance(values, dict) or set(values) != set(family.params):
            raise ModelFormatError(
                f"kernel spec {k} ({kind}) has fields {sorted(obj)}, expected "
                f"{sorted({'kind', 'features', *family.params})}"
            )
        return family.spec(**values, features=obj["features"])
    except (TypeError, ValueError, KeyError) as exc:
        if isinstance(exc, ModelFormatError):
            raise
        raise ModelFormatError(f"kernel spec {k} is invalid: {exc}") from None


def _storage_to_json(options):
    return {
        "feature_map": {
            "approximation": options.approximation,
            "n_components": options.n_components,
            "random_state": options.random_state,
            "rcond": options.rcond,
        }
    }


def _is_feature_map(storage):
    """Whether a ``storage`` parameter asks for feature maps (format 2)."""
    return isinstance(storage, FeatureMap) or (
        isinstance(storage, str) and storage == "feature_map"
    )


def _storage_from_json(value):
    """A saved ``storage`` parameter: a name, or a feature-map object (ValueError if not)."""
    if isinstance(value, str):
        return value
    fields = {"approximation", "n_components", "random_state", "rcond"}
    if (
        not isinstance(value, dict)
        or set(value) != {"feature_map"}
        or not isinstance(value["feature_map"], dict)
        or set(value["feature_map"]) != fields
    ):
        raise ValueError(f"storage {value!r} is neither a storage name nor a feature map")
    return FeatureMap(**value["feature_map"])


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


# --------------------------------------------------------------------------
# save
# --------------------------------------------------------------------------
def _is_inf(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and value == math.inf


def _jsonable(value, name):
    """A parameter value as JSON data (numbers, strings, None, nested lists)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"parameter {name}={value!r} is not finite and cannot be saved")
        return v
    if isinstance(value, (list, tuple, np.ndarray)):
        return [
            _jsonable(v, name) for v in (value.tolist() if isinstance(value, np.ndarray) else value)
        ]
    raise TypeError(f"parameter {name} of type {type(value).__name__} cannot be saved")


def _method_name(method):
    if isinstance(method, str):
        return method
    # An outer-method instance: keep its registry name (the instance's own
    # hyper-parameters do not matter for prediction).
    for name, cls in METHODS.items():
        if type(method) is cls and getattr(cls, "name", name) == name:
            return name
    return None


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


def save_model(clf, path, feature_names=None, label=None, standardize=None):
    """Save a fitted :class:`~mklopt.MKLClassifier` to a portable ``.npz`` file.

    Parameters
    ----------
    clf : MKLClassifier
        A fitted classifier (binary or multiclass).
    path : str or os.PathLike
        Where to write; the name is used as given (no ``.npz`` is appended).
        The file is written to a temporary name first and then renamed, so an
        interrupted save never leaves a half-written model behind.
    feature_names : sequence of str, optional
        One name per feature, stored in the metadata. Default: the
        estimator's ``feature_names_in_`` when it was fitted on a table with
        string column names (a pandas DataFrame).
    label : str, optional
        Name of the label column, stored in the metadata.
    standardize : tuple of two array-likes of shape (n_features,), optional
        ``(mean, scale)`` of a standardisation applied to the features before
        ``fit``; stored so that the same transform can be applied before
        ``predict`` (returned by :func:`load_model` as ``meta["standardize"]``).

    Raises
    ------
    TypeError
        If ``clf`` is not an ``MKLClassifier`` (MKBoost ensembles cannot be
        saved yet), or a parameter cannot be represented without pickle.
    ValueError
        If ``clf`` is not fitted or the extra arguments are inconsistent.

    Notes
    -----
    Saved: the fitted attributes used by ``predict`` and
    ``decision_function`` (``classes_``, ``pairs_``, ``weights_``,
    ``support_``, ``dual_coef_``, ``intercept_``, ``kernel_specs_``), the
    per-pair summaries ``n_iter_``, ``n_oracle_calls_``, ``gap_`` and
    ``converged_``, and the constructor parameters except ``callback``.
    Not saved: ``history_`` and ``result_`` (the run records).
    """
    if isinstance(clf, MKBoostClassifier):
        raise TypeError(
            "only MKLClassifier models can be saved; MKBoostClassifier ensembles are not "
            "supported by the model format"
        )
    try:
        entry = estimator_entry(clf)
    except ValueError:
        entry = None
    if entry is None or _format_of(entry.cls) is None:
        raise TypeError(
            "clf must be a fitted MKLClassifier, MKLRegressor or MKLOneClass (or a subclass), "
            f"got {type(clf).__name__}"
        )
    task = _format_of(entry.cls)
    task = None if task == "MKLClassifier" else task
    if not hasattr(clf, "models_"):
        raise ValueError("clf is not fitted; call fit before save_model")
    precomputed = is_precomputed(getattr(clf, "kernels", None))
    if precomputed and (standardize is not None or feature_names is not None):
        raise ValueError(
            "a model fitted with kernels='precomputed' has no features: standardize and "
            "feature_names do not apply to it"
        )

    d = int(clf.n_features_in_)
    specs = list(clf.kernel_specs_)
    m = len(specs)
    fitted_names = getattr(clf, "feature_names_in_", None)
    if feature_names is None and fitted_names is not None:
        feature_names = fitted_names
    if feature_names is not None:
        feature_names = [str(f) for f in feature_names]
        if len(feature_names) != d:
            raise ValueError(f"feature_names has {len(feature_names)} names for {d} features")
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a string or None, got {type(label).__name__}")

    sv_X, sv_index, sv_pair, coef, sv_off = [], [], [], [], [0]
    k_idx, k_w, k_scale, k_off = [], [], [], [0]
    m_kind, m_cols, m_data, m_off, lm_X, lm_off = [], [], [], [0], [], [0]
    supports = pair_values(clf, "support_")
    spec_index = {s: k for k, s in enumerate(specs)}
    for model, support in zip(clf.models_, supports, strict=True):
        pred = model.predictor
        fn = getattr(pred, "functions", None)
        n_landmarks = 0
        if precomputed:
            # The columns of the test kernels it reads, and the weights
            # with the normalisation folded in (see the module notes).
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
            raise ValueError("clf is inconsistent: support vectors and dual coefficients differ")
        sv_index.append(np.asarray(support, dtype=np.int64))
        sv_pair.append(np.asarray(model.support, dtype=np.int64))
        coef.append(np.asarray(pred.coef, dtype=np.float64))
        sv_off.append(sv_off[-1] + n_sv)
        k_off.append(len(k_idx))

    n_pairs = len(clf.models_)
    classes = np.array([-1, 1]) if task else clf.classes_
    arrays = {
        "classes": _classes_array(classes),
        "pairs": np.asarray([[0, 1]] if task else clf.pairs_, dtype=np.int64).reshape(
            n_pairs, 2
        ),
        "weights": np.asarray(_per_pair(clf, "weights_"), dtype=np.float64).reshape(n_pairs, m),
        "intercept": np.array([mdl.bias for mdl in clf.models_], dtype=np.float64),
        "n_iter": np.asarray(_per_pair(clf, "n_iter_"), dtype=np.int64),
        "n_oracle_calls": np.asarray(_per_pair(clf, "n_oracle_calls_"), dtype=np.int64),
        "gap": np.asarray(_per_pair(clf, "gap_"), dtype=np.float64),
        "converged": np.asarray(_per_pair(clf, "converged_"), dtype=bool),
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
    uses_maps = any(kind != "function" for kind in m_kind)
    if uses_maps:
        arrays.update(
            map_kind=np.array(m_kind, dtype=str).reshape(len(m_kind)),
            map_cols=np.asarray(m_cols, dtype=np.int64),
            map_offsets=np.asarray(m_off, dtype=np.int64),
            map_data=(np.concatenate(m_data) if m_data else np.zeros(0)).astype(np.float64),
            landmark_offsets=np.asarray(lm_off, dtype=np.int64),
            landmark_X=(np.concatenate(lm_X, axis=0) if lm_X else np.empty((0, d))).astype(
                np.float64
            ),
        )
    if standardize is not None:
        mean, scale = (np.asarray(a, dtype=np.float64) for a in standardize)
        if mean.shape != (d,) or scale.shape != (d,):
            raise ValueError(f"standardize must be (mean, scale), each of shape ({d},)")
        if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(scale)) and np.all(scale > 0)):
            raise ValueError("standardize needs finite means and finite positive scales")
        arrays["x_mean"], arrays["x_scale"] = mean, scale

    if getattr(clf, "scaler_mean_", None) is not None:
        arrays["scaler_mean"] = np.asarray(clf.scaler_mean_, dtype=np.float64)
        arrays["scaler_scale"] = np.asarray(clf.scaler_scale_, dtype=np.float64)

    params = clf.get_params(deep=False)
    saved = {}
    for name in _TASK_PARAMS[task] if task else _PARAMS:
        value = params.get(name)
        if name == "kernels":
            saved[name] = value if isinstance(value, str) else None  # the specs are saved below
        elif name == "method":
            saved[name] = _method_name(value)
        elif name == "storage" and isinstance(value, FeatureMap):
            saved[name] = _storage_to_json(value)
        elif name == "p" and _is_inf(value):
            saved[name] = "inf"  # p = inf (the sum kernel); JSON has no infinity
        elif name == "elastic_net":
            # Written only when set, so that other files stay readable by
            # versions that do not know the parameter (as multiclass below).
            if value is not None:
                saved[name] = _jsonable(value, name)
        elif name == "multiclass":
            # Written only when shared, so that one-vs-one files stay readable
            # by versions that do not know the parameter.
            if value == "shared":
                saved[name] = value
        elif name == "verbose":
            # Written only when set, as elastic_net: files of silent models
            # stay readable by versions without the parameter, and files
            # written before it existed load with the default 0.
            if value:
                saved[name] = check_verbose(value)
        else:
            saved[name] = _jsonable(value, name)
    meta = {
        "format": FORMAT_NAME,
        "format_version": (
            _PRECOMPUTED_VERSION if precomputed
            else 2 if task or uses_maps or _is_feature_map(params.get("storage")) else 1
        ),
        "mklopt_version": __version__,
        # the registered name (a registered subclass loads as itself)
        "estimator": entry.name,
        "n_features": d,
        "n_kernels": m,
        "n_pairs": n_pairs,
        "kernel_specs": [_spec_to_json(s) for s in specs],
        "params": saved,
        "feature_names": feature_names,
        # Present only for a model fitted on a table: load_model restores
        # feature_names_in_, so prediction checks the columns again.
        **({"feature_names_in": [str(f) for f in fitted_names]} if fitted_names is not None
           else {}),
        "label": label,
    }
    if task:
        meta["fitted"] = _task_fitted(clf)
    arrays[_META_KEY] = np.array(json.dumps(meta, allow_nan=False))

    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".mklopt-model-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _task_fitted(clf):
    """The regression / one-class estimator's own fitted numbers, as JSON."""
    out = {"x_mean": None, "x_scale": None}
    if getattr(clf, "x_mean_", None) is not None:
        out["x_mean"] = np.asarray(clf.x_mean_, dtype=np.float64).tolist()
        out["x_scale"] = np.asarray(clf.x_scale_, dtype=np.float64).tolist()
    if isinstance(clf, MKLRegressor):
        out["y_mean"], out["y_scale"] = float(clf.y_mean_), float(clf.y_scale_)
    return out


def _read_task_fitted(path, meta):
    f = meta.get("fitted")
    d = meta["n_features"]
    if not isinstance(f, dict):
        _fail(path, "is corrupt (metadata field 'fitted' is missing)")
    out = {}
    for key in ("x_mean", "x_scale"):
        v = f.get(key)
        if v is None:
            out[key] = None
            continue
        a = np.asarray(v, dtype=np.float64) if isinstance(v, list) else None
        if a is None or a.shape != (d,) or not np.all(np.isfinite(a)):
            _fail(path, f"is corrupt (fitted {key} must be {d} finite numbers)")
        out[key] = a
    if (out["x_mean"] is None) != (out["x_scale"] is None) or (
        out["x_scale"] is not None and np.any(out["x_scale"] <= 0)
    ):
        _fail(path, "is corrupt (fitted x_mean and x_scale go together, scales positive)")
    if meta["_format"] == "MKLRegressor":
        for key in ("y_mean", "y_scale"):
            v = f.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                _fail(path, f"is corrupt (fitted {key} must be a finite number)")
            out[key] = float(v)
        if out["y_scale"] <= 0:
            _fail(path, "is corrupt (fitted y_scale must be positive)")
    return out


# --------------------------------------------------------------------------
# load
# --------------------------------------------------------------------------
def _fail(path, what):
    raise ModelFormatError(f"{path} {what}")


def _read_arrays(path):
    """All arrays of the archive, read eagerly, without pickle."""
    try:
        with open(path, "rb") as fh:
            magic = fh.read(6)
        if magic[:4] != b"PK\x03\x04":
            what = "a single .npy array" if magic == b"\x93NUMPY" else "not an .npz archive"
            if not magic:
                what = "the file is empty"
            _fail(path, f"is not an mklopt model file ({what})")
        archive = np.load(path, allow_pickle=False)
    except ModelFormatError:
        raise
    except FileNotFoundError:
        _fail(path, "does not exist")
    except IsADirectoryError:
        _fail(path, "is a directory, not a model file")
    except PermissionError:
        _fail(path, "cannot be read (permission denied)")
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        _fail(path, f"is truncated or corrupt (not a readable .npz archive: {exc})")
    if not isinstance(archive, np.lib.npyio.NpzFile):
        _fail(path, "is not an mklopt model file (a single .npy array, not an .npz archive)")
    out = {}
    with archive:
        for key in archive.files:
            try:
                out[key] = archive[key]
            except ValueError as exc:
                if "pickle" in str(exc) or "Object arrays" in str(exc):
                    _fail(path, f"holds pickled Python objects (array {key!r}), which are refused")
                _fail(path, f"is corrupt (array {key!r}: {exc})")
            except (OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
                _fail(path, f"is truncated or corrupt (array {key!r}: {exc})")
            except Exception as exc:  # zlib.error and friends from damaged members
                _fail(path, f"is truncated or corrupt (array {key!r}: {exc})")
    return out


def _read_meta(path, arrays):
    if _META_KEY not in arrays:
        _fail(path, "is not an mklopt model file (no metadata in the archive)")
    raw = arrays.pop(_META_KEY)
    if raw.dtype.kind != "U" or raw.shape != ():
        _fail(path, "is not an mklopt model file (the metadata is not a JSON string)")
    try:
        meta = json.loads(str(raw))
    except ValueError:
        _fail(path, "is corrupt (the metadata is not valid JSON)")
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        _fail(path, f"is not an mklopt model file (format is not {FORMAT_NAME!r})")
    version = meta.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        _fail(path, "is corrupt (bad format_version)")
    if version > FORMAT_VERSION:
        _fail(
            path,
            f"was written in model format {version} by mklopt {meta.get('mklopt_version')}; "
            f"this mklopt reads format {FORMAT_VERSION} or older, so upgrade mklopt",
        )
    try:
        entry = estimator_entry(meta.get("estimator"))
    except ValueError:
        entry = None
    if entry is None or _format_of(entry.cls) is None:
        _fail(path, f"holds an unsupported estimator {meta.get('estimator')!r} (register its "
              "class with mklopt.tasks.register_estimator before loading)")
    meta["_cls"], meta["_format"] = entry.cls, _format_of(entry.cls)
    for key in ("n_features", "n_kernels", "n_pairs"):
        v = meta.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            _fail(path, f"is corrupt (metadata field {key!r} must be a positive integer)")
    for key in ("kernel_specs", "params"):
        if key not in meta:
            _fail(path, f"is corrupt (metadata field {key!r} is missing)")
    if not isinstance(meta["params"], dict):
        _fail(path, "is corrupt (metadata field 'params' is not an object)")
    for key in ("feature_names", "feature_names_in"):
        names = meta.get(key)
        if names is not None and (
            not isinstance(names, list)
            or len(names) != meta["n_features"]
            or not all(isinstance(s, str) for s in names)
        ):
            _fail(path, f"is corrupt ({key} must be one string per feature)")
    if meta.get("label") is not None and not isinstance(meta["label"], str):
        _fail(path, "is corrupt (label must be a string)")
    return meta


def _check_params(path, params, estimator="MKLClassifier"):
    """Types of the saved constructor parameters (their values are checked by ``fit``)."""
    unknown = sorted(set(params) - set(_TASK_PARAMS.get(estimator, _PARAMS)))
    if unknown:
        _fail(path, f"is corrupt (unknown parameters {', '.join(unknown)})")

    def number(v):
        return v is None or (
            not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
        )

    ok = {
        "kernels": lambda v: v in (None, "grid", "all_features", "precomputed"),
        "method": lambda v: v is None or isinstance(v, str),
        "groups": lambda v: (
            v in (None, "features")
            or (
                isinstance(v, list)
                and all(
                    isinstance(g, list)
                    and all(isinstance(i, int) and not isinstance(i, bool) for i in g)
                    for g in v
                )
            )
        ),
        "normalize": lambda v: v in (None, "trace", "diagonal"),
        "p": lambda v: v == "inf" or number(v),
        # files written before the parameter existed have no "loss" (the default)
        "loss": lambda v: isinstance(v, str),
        "standardize": lambda v: v in ("auto", True, False),
        "multiclass": lambda v: v in ("ovo", "shared"),
        "verbose": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
        # A name, or a feature map as JSON (checked when the classifier is built).
        # Any name: a user's registered storage need not be registered in the
        # process that loads the model (prediction does not read the storage).
        "storage": lambda v: (isinstance(v, str) and bool(v)) or isinstance(v, dict),
    }
    for name, value in params.items():
        if not ok.get(name, number)(value):
            _fail(path, f"is corrupt (parameter {name}={value!r} has the wrong type)")


def _check_arrays(path, a, meta):
    d, m, P = meta["n_features"], meta["n_kernels"], meta["n_pairs"]
    missing = sorted(set(_ARRAYS) - set(a))
    if missing:
        _fail(path, f"is corrupt or incomplete (missing arrays: {', '.join(missing)})")
    for key, (kinds, ndim) in {**_ARRAYS, **_OPTIONAL_ARRAYS, **_MAP_ARRAYS}.items():
        if key not in a:
            continue
        arr = a[key]
        if arr.dtype.kind not in kinds or arr.ndim != ndim:
            _fail(
                path,
                f"is corrupt (array {key!r} has dtype {arr.dtype} and {arr.ndim} dimension(s))",
            )
        if arr.dtype.kind == "f" and key != "gap" and not np.all(np.isfinite(arr)):
            _fail(path, f"is corrupt (array {key!r} holds NaN or infinity)")
    for mean, scale in (("x_mean", "x_scale"), ("scaler_mean", "scaler_scale")):
        if (mean in a) != (scale in a):
            _fail(path, f"is corrupt ({mean} and {scale} go together)")
    if "scaler_scale" in a and not np.all(a["scaler_scale"] > 0):
        _fail(path, "is corrupt (scaler_scale must be positive)")

    c = a["classes"].shape[0]
    n_sv, n_sel = a["sv_offsets"], a["kernel_offsets"]
    shapes = {
        "pairs": (P, 2),
        "weights": (P, m),
        "intercept": (P,),
        "n_iter": (P,),
        "n_oracle_calls": (P,),
        "gap": (P,),
        "converged": (P,),
        "sv_offsets": (P + 1,),
        "kernel_offsets": (P + 1,),
        "x_mean": (d,),
        "x_scale": (d,),
        "scaler_mean": (d,),
        "scaler_scale": (d,),
    }
    for key, shape in shapes.items():
        if key in a and a[key].shape != shape:
            _fail(path, f"is corrupt (array {key!r} has shape {a[key].shape}, expected {shape})")
    if c < 2 or P != c * (c - 1) // 2 or len(np.unique(a["classes"])) != c:
        _fail(path, f"is corrupt ({c} classes do not match {P} one-vs-one pairs)")
    expected_pairs = [(i, j) for i in range(c) for j in range(i + 1, c)]
    if a["pairs"].tolist() != [list(p) for p in expected_pairs]:
        _fail(path, "is corrupt (the one-vs-one pairs are not in the expected order)")
    for key, off in (("sv_offsets", n_sv), ("kernel_offsets", n_sel)):
        if off[0] != 0 or np.any(np.diff(off) < 0):
            _fail(path, f"is corrupt (array {key!r} is not a non-decreasing offset table)")
    total_sv, total_sel = int(n_sv[-1]), int(n_sel[-1])
    precomputed = is_precomputed(meta["params"].get("kernels"))
    if precomputed and meta["format_version"] < _PRECOMPUTED_VERSION:
        _fail(path, f"is corrupt (a precomputed model in a format {meta['format_version']} file)")
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
            _fail(path, f"is corrupt (array {key!r} has shape {a[key].shape}, expected {shape})")
    if np.any(a["sv_index"] < 0) or np.any(a["sv_pair_index"] < 0):
        _fail(path, "is corrupt (negative support vector indices)")
    if precomputed and np.any(a["sv_index"] >= d):
        _fail(path, f"is corrupt (support vector indices outside the {d} training samples)")
    if np.any(a["kernel_index"] < 0) or np.any(a["kernel_index"] >= m):
        _fail(path, f"is corrupt (kernel indices outside [0, {m}))")
    if np.any(a["weights"] < 0) or np.any(a["kernel_weight"] <= 0):
        _fail(path, "is corrupt (negative kernel weights)")
    if np.any(a["kernel_scale"] <= 0):
        _fail(path, "is corrupt (kernel scales must be positive)")
    if "x_scale" in a and np.any(a["x_scale"] <= 0):
        _fail(path, "is corrupt (x_scale must be positive)")
    for k in range(P):
        sel = a["kernel_index"][n_sel[k] : n_sel[k + 1]]
        if n_sv[k + 1] > n_sv[k] and sel.size == 0:
            _fail(path, f"is corrupt (pair {k} has support vectors but no selected kernel)")
    _check_map_arrays(path, a, meta, total_sel)


def _check_map_arrays(path, a, meta, total_sel):
    """The optional feature-map arrays: all or none, consistent offsets, known kinds."""
    present = sorted(key for key in _MAP_ARRAYS if key in a)
    if not present:
        return
    if meta["format_version"] < 2:
        _fail(path, "is corrupt (feature-map arrays in a format 1 file)")
    if len(present) != len(_MAP_ARRAYS):
        missing = sorted(set(_MAP_ARRAYS) - set(present))
        _fail(path, f"is corrupt (feature-map arrays missing: {', '.join(missing)})")
    P, d = meta["n_pairs"], meta["n_features"]
    for key, shape in (
        ("map_kind", (total_sel,)),
        ("map_cols", (total_sel,)),
        ("map_offsets", (total_sel + 1,)),
        ("landmark_offsets", (P + 1,)),
    ):
        if a[key].shape != shape:
            _fail(path, f"is corrupt (array {key!r} has shape {a[key].shape}, expected {shape})")
    for key, end in (("map_offsets", a["map_data"].size),
                     ("landmark_offsets", a["landmark_X"].shape[0])):
        off = a[key]
        if off[0] != 0 or np.any(np.diff(off) < 0) or off[-1] != end:
            _fail(path, f"is corrupt (array {key!r} is not an offset table of its data)")
    if a["landmark_X"].shape[1] != d:
        _fail(path, f"is corrupt (landmark_X has {a['landmark_X'].shape[1]} columns, not {d})")
    bad = sorted(set(a["map_kind"].tolist()) - set(_MAP_KINDS))
    if bad:
        _fail(path, f"is corrupt (unknown feature-map kinds {bad})")
    if np.any(a["map_cols"] < 0):
        _fail(path, "is corrupt (negative feature-map column counts)")


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


def _build(a, meta, specs):
    params = dict(meta["params"])
    precomputed = is_precomputed(params.get("kernels"))
    if precomputed:
        if not all(isinstance(s, PrecomputedKernel) for s in specs):
            raise ValueError("a precomputed model's kernel specs are all of kind 'precomputed'")
    elif any(isinstance(s, PrecomputedKernel) for s in specs):
        raise ValueError("kernel specs of kind 'precomputed' need kernels='precomputed'")
    elif params.get("kernels") not in ("grid", "all_features"):
        params["kernels"] = list(specs)
    # registered names, plugins' included (a method from an entry point loads by name)
    if params.get("method") not in (None, "auto") and params["method"] not in method_names():
        params["method"] = None
    if isinstance(params.get("groups"), list):
        params["groups"] = [list(g) for g in params["groups"]]
    if params.get("p") == "inf":
        params["p"] = math.inf
    if "storage" in params:
        params["storage"] = _storage_from_json(params["storage"])
    if meta["_format"] in _TASK_ESTIMATORS:
        clf = meta["_cls"](**params)
    else:
        # Files from before the estimator standardised say nothing about it:
        # those models were trained on the features as given.
        params.setdefault("standardize", "scaler_mean" in a)
        clf = meta["_cls"](**params)

    P = meta["n_pairs"]
    sv_off, k_off = a["sv_offsets"], a["kernel_offsets"]
    models, supports, coefs = [], [], []
    for k in range(P):
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
        models.append(
            _BinaryMKL(
                predictor=pred,
                weights=np.ascontiguousarray(a["weights"][k]),
                support=np.ascontiguousarray(a["sv_pair_index"][s0:s1]),
                dual_coef=coef,
                bias=bias,
                result=None,
            )
        )
        supports.append(np.ascontiguousarray(a["sv_index"][s0:s1]))
        coefs.append(coef)

    clf.n_features_in_ = meta["n_features"]
    if meta.get("feature_names_in") is not None:
        clf.feature_names_in_ = np.asarray(meta["feature_names_in"], dtype=object)
    clf.models_ = models
    clf.kernel_specs_ = list(specs)
    clf.n_kernels_ = len(specs)
    clf.intercept_ = np.ascontiguousarray(a["intercept"])
    run = {
        "weights_": np.ascontiguousarray(a["weights"]),
        "n_iter_": a["n_iter"],
        "n_oracle_calls_": a["n_oracle_calls"],
        "gap_": a["gap"],
        "converged_": a["converged"],
    }
    if params.get("multiclass") == "shared" and P > 1:
        if not np.all(a["weights"] == a["weights"][0]):
            raise ValueError("a shared-weight model has the same weights for every pair")
        # One joint run: its values once, as the fitted estimator has them.
        run = {k: v[:1] for k, v in run.items()}
        set_pair_attributes(clf, **run)
        clf.support_, clf.dual_coef_ = supports, coefs
    else:
        set_pair_attributes(clf, **run, support_=supports, dual_coef_=coefs)
    if meta["_format"] in _TASK_ESTIMATORS:
        fitted = meta["_fitted"]
        clf.x_mean_, clf.x_scale_ = fitted["x_mean"], fitted["x_scale"]
        if isinstance(clf, MKLRegressor):
            clf.y_mean_, clf.y_scale_ = fitted["y_mean"], fitted["y_scale"]
        else:
            clf.offset_ = -float(clf.intercept_[0])
        return clf
    clf.classes_ = a["classes"]
    if "scaler_mean" in a:
        clf.scaler_mean_ = np.ascontiguousarray(a["scaler_mean"])
        clf.scaler_scale_ = np.ascontiguousarray(a["scaler_scale"])
    else:
        clf.scaler_mean_ = clf.scaler_scale_ = None
    clf.pairs_ = np.ascontiguousarray(a["pairs"])
    return clf


def load_model(path):
    """Load a model saved by :func:`save_model`.

    Parameters
    ----------
    path : str or os.PathLike
        The model file.

    Returns
    -------
    clf : MKLClassifier
        A fitted classifier whose ``predict`` and ``decision_function`` give
        the same values as the saved one (``history_`` and ``result_`` are
        not restored).
    meta : dict
        The metadata: ``format``, ``format_version``, ``mklopt_version``,
        ``estimator``, ``n_features``, ``n_kernels``, ``n_pairs``,
        ``kernel_specs`` (JSON form), ``params``, ``feature_names`` (or
        None), ``label`` (or None), ``standardize``: ``(mean, scale)``
        arrays given to :func:`save_model`, or None, and, for a model
        fitted on a table with string column names, ``feature_names_in``
        (restored as the estimator's ``feature_names_in_``).

    Raises
    ------
    ModelFormatError
        If the file is missing, unreadable, truncated, corrupt, not an
        mklopt model, written by a newer format version, contains pickled
        objects, or holds inconsistent arrays (wrong shapes or dtypes,
        non-finite values, indices out of range).
    """
    path = os.fspath(path)
    arrays = _read_arrays(path)
    meta = _read_meta(path, arrays)
    specs_json = meta["kernel_specs"]
    if not isinstance(specs_json, list) or len(specs_json) != meta["n_kernels"]:
        _fail(path, "is corrupt (kernel_specs must list n_kernels specs)")
    specs = [_spec_from_json(s, k) for k, s in enumerate(specs_json)]
    for s in specs:
        if s.features is not None and max(s.features) >= meta["n_features"]:
            _fail(path, f"is corrupt (kernel spec {s!r} uses a feature >= n_features)")
    _check_params(path, meta["params"], meta["_format"])
    _check_arrays(path, arrays, meta)
    if meta["_format"] in _TASK_ESTIMATORS:
        if meta["n_pairs"] != 1 or arrays["classes"].tolist() != [-1, 1]:
            _fail(path, f"is corrupt (a {meta['estimator']} file holds one problem)")
        meta["_fitted"] = _read_task_fitted(path, meta)
    try:
        clf = _build(arrays, meta, specs)
    except (TypeError, ValueError) as exc:
        _fail(path, f"is corrupt ({exc})")
    meta = dict(meta)
    for key in ("_fitted", "_cls", "_format"):
        meta.pop(key, None)
    meta["standardize"] = (arrays["x_mean"], arrays["x_scale"]) if "x_mean" in arrays else None
    return clf, meta
