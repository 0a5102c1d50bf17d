"""The codecs of the MKL estimators: one binary problem after another.

Every MKL estimator keeps, per binary problem (*pair*): the support vectors'
rows (or, on precomputed kernels, their indices), the selected kernels with
their normalisation and weights, the dual coefficients and the bias, and the
run's summary. The file concatenates them over the pairs, with ``*_offsets``
tables marking where each pair starts; this is the layout model files have
had since format 1. :class:`ClassifierCodec` adds the classes, the
one-vs-one pairs and the classifier's scaler; :class:`RegressorCodec` and
:class:`OneClassCodec` their training standardisation (and the target's),
as one problem of two placeholder classes.
"""

from __future__ import annotations

import numpy as np

from ..estimators._ovo import pair_values, set_pair_attributes
from ..estimators._precomputed import PrecomputedExpansion, is_precomputed
from ..estimators.mkl import _BinaryMKL
from ..kernels import FeatureMap, KernelExpansion
from ._estimator import (
    _MAP_ARRAYS,
    _PRECOMPUTED_VERSION,
    EstimatorCodec,
    _check_classes,
    _check_dtypes,
    _check_map_arrays,
    _check_offsets,
    _collect_maps,
    _finite_number,
    _finite_vector,
    _functions,
    _map_arrays,
    classifier_from_arrays,
    classifier_to_arrays,
    legacy_standardize,
)

__all__ = ["PairModelCodec", "ClassifierCodec", "RegressorCodec", "OneClassCodec"]

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
    # (A, B) of each pair's Platt sigmoid (probability=True)
    "prob_sigmoid": ("f", 2),
    "x_mean": ("f", 1),
    "x_scale": ("f", 1),
    "scaler_mean": ("f", 1),
    "scaler_scale": ("f", 1),
}
# Feature maps (format 2), all present or all absent. Per selected kernel:
# its map kind ("function" for plain kernel functions), the number of
# columns of its stored matrix and where the matrix sits in map_data; per
# pair: its rows of landmark_X (the Nyström landmarks).
# Fitted attributes that a shared-weight multiclass model holds once for all
# pairs (one joint run); the file keeps one row per pair, repeated.
_SHARED_RUN = ("weights_", "n_iter_", "n_oracle_calls_", "gap_", "converged_")


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
    out.update(_map_arrays(m_kind, m_cols, m_data, m_off, lm_off, lm_X, d))
    sigmoids = [getattr(model, "sigmoid", None) for model in est.models_]
    if all(sg is not None for sg in sigmoids):
        out["prob_sigmoid"] = np.asarray(sigmoids, dtype=np.float64).reshape(-1, 2)
    return out


def _unpack_pairs(a, specs, n_pairs, precomputed):
    """The pairs' models (``_BinaryMKL``), supports and coefficients from the flat arrays."""
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
            sigmoid=(tuple(float(v) for v in a["prob_sigmoid"][k])
                     if "prob_sigmoid" in a else None),
        ))
        supports.append(np.ascontiguousarray(a["sv_index"][s0:s1]))
        coefs.append(coef)
    return models, supports, coefs


def _check_arrays(a, header):
    d, m, P = header["n_features"], header["n_kernels"], header["n_pairs"]
    missing = sorted(set(_ARRAYS) - set(a))
    if missing:
        raise ValueError(f"missing arrays: {', '.join(missing)}")
    _check_dtypes(a, {**_ARRAYS, **_OPTIONAL_ARRAYS, **_MAP_ARRAYS})
    for mean, scale in (("x_mean", "x_scale"), ("scaler_mean", "scaler_scale")):
        if (mean in a) != (scale in a):
            raise ValueError(f"{mean} and {scale} go together")
    if "prob_sigmoid" in a and not np.all(np.isfinite(a["prob_sigmoid"])):
        raise ValueError("prob_sigmoid must be finite")
    if "scaler_scale" in a and not np.all(a["scaler_scale"] > 0):
        raise ValueError("scaler_scale must be positive")
    n_sv, n_sel = a["sv_offsets"], a["kernel_offsets"]
    shapes = {
        "weights": (P, m), "intercept": (P,), "n_iter": (P,),
        "n_oracle_calls": (P,), "gap": (P,), "converged": (P,), "sv_offsets": (P + 1,),
        "kernel_offsets": (P + 1,), "x_mean": (d,), "x_scale": (d,), "scaler_mean": (d,),
        "scaler_scale": (d,), "prob_sigmoid": (P, 2),
    }
    for key, shape in shapes.items():
        if key in a and a[key].shape != shape:
            raise ValueError(f"array {key!r} has shape {a[key].shape}, expected {shape}")
    _check_classes(a, P)
    _check_offsets(a, "sv_offsets")
    _check_offsets(a, "kernel_offsets")
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
    _check_map_arrays(a, header, total_sel, P)


def _is_shared(est):
    """Whether one weight vector was learnt for several pairs (``multiclass="shared"``)."""
    return getattr(est, "multiclass", "ovo") == "shared" and len(est.models_) > 1


def _per_pair(est, name):
    """Attribute ``name`` with one entry per pair, as the file stores it."""
    if _is_shared(est) and name in _SHARED_RUN:
        return [getattr(est, name)] * len(est.models_)
    return pair_values(est, name)


class PairModelCodec(EstimatorCodec):
    """The codec of the MKL estimators (one or more binary problems).

    Subclasses say what their estimator adds (:meth:`fitted_to_arrays`,
    :meth:`fitted_from_arrays`).
    """

    #: The lowest format that holds this kind's models.
    min_version = 1

    # ---- hooks ---------------------------------------------------------------
    def fitted_to_arrays(self, est):
        """The kind's own fitted values: ``classes`` and ``pairs`` arrays, and more."""
        raise NotImplementedError

    def fitted_from_arrays(self, est, arrays):
        """Set the kind's own fitted attributes from :meth:`fitted_to_arrays` output."""
        raise NotImplementedError

    # ---- the codec -----------------------------------------------------------
    def to_arrays(self, est):
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
        if not hasattr(est, "models_"):
            raise ValueError(f"{type(est).__name__} is not fitted; call fit before saving it")
        precomputed = is_precomputed(getattr(est, "kernels", None))
        n_pairs = len(est.models_)
        out = _pack_pairs(est, precomputed)
        out.update(self.fitted_to_arrays(est))
        out.update(
            weights=np.asarray(_per_pair(est, "weights_"), dtype=np.float64).reshape(
                n_pairs, len(est.kernel_specs_)),
            intercept=np.array([mdl.bias for mdl in est.models_], dtype=np.float64),
            n_iter=np.asarray(_per_pair(est, "n_iter_"), dtype=np.int64),
            n_oracle_calls=np.asarray(_per_pair(est, "n_oracle_calls_"), dtype=np.int64),
            gap=np.asarray(_per_pair(est, "gap_"), dtype=np.float64),
            converged=np.asarray(_per_pair(est, "converged_"), dtype=bool),
        )
        out.update(self.common_to_arrays(est))
        storage = est.get_params(deep=False).get("storage")
        out["format_version"] = max(
            self.min_version,
            _PRECOMPUTED_VERSION if precomputed else 1,
            2 if "map_kind" in out or isinstance(storage, FeatureMap)
            or (isinstance(storage, str) and storage == "feature_map") else 1,
        )
        out["n_pairs"] = n_pairs
        return out

    def from_arrays(self, cls, arrays):
        """A fitted ``cls`` rebuilt from :meth:`to_arrays` output, every array checked.

        Raises
        ------
        ValueError
            Naming what is inconsistent (missing arrays, shapes, dtypes,
            non-finite values, indices out of range, unknown parameters).
        """
        a, header, specs = self.common_from_arrays(cls, arrays, counts=("n_pairs",))
        _check_arrays(a, header)
        est = self.new_from_params(cls, header["params"], specs, a)
        self._restore(est, a, header, specs)
        return est

    def _restore(self, est, a, header, specs):
        P = header["n_pairs"]
        precomputed = is_precomputed(getattr(est, "kernels", None))
        models, supports, coefs = _unpack_pairs(a, specs, P, precomputed)
        self.restore_common(est, header, specs)
        est.models_ = models
        est.intercept_ = np.ascontiguousarray(a["intercept"])
        run = {
            "weights_": np.ascontiguousarray(a["weights"]),
            "n_iter_": a["n_iter"],
            "n_oracle_calls_": a["n_oracle_calls"],
            "gap_": a["gap"],
            "converged_": a["converged"],
        }
        if _is_shared(est):
            if not np.all(a["weights"] == a["weights"][0]):
                raise ValueError("a shared-weight model has the same weights for every pair")
            # One joint run: its values once, as the fitted estimator has them.
            set_pair_attributes(est, **{k: v[:1] for k, v in run.items()})
            est.support_, est.dual_coef_ = supports, coefs
        else:
            set_pair_attributes(est, **run, support_=supports, dual_coef_=coefs)
        self.fitted_from_arrays(est, {**a, **header})


class ClassifierCodec(PairModelCodec):
    """The codec of :class:`~mklopt.MKLClassifier`: its classes, pairs and scaler."""

    kind = "mkl_classifier"

    def fitted_to_arrays(self, est):
        return classifier_to_arrays(est)

    def fitted_from_arrays(self, est, arrays):
        classifier_from_arrays(est, arrays)

    def legacy_params(self, cls, params, arrays):
        return legacy_standardize(self, cls, params, arrays)


class _TaskCodec(PairModelCodec):
    """The codec of a one-problem estimator: two placeholder classes and its standardisation.

    Its own fitted numbers go, as JSON, under the header key ``"fitted"``.
    """

    min_version = 2

    def fitted_to_arrays(self, est):
        fitted = {"x_mean": None, "x_scale": None}
        # saved under the names of format 2 (the attributes are scaler_*)
        if getattr(est, "scaler_mean_", None) is not None:
            fitted["x_mean"] = np.asarray(est.scaler_mean_, dtype=np.float64).tolist()
            fitted["x_scale"] = np.asarray(est.scaler_scale_, dtype=np.float64).tolist()
        return {"classes": np.array([-1, 1], dtype=np.int64),
                "pairs": np.array([[0, 1]], dtype=np.int64), "fitted": fitted}

    def fitted_from_arrays(self, est, arrays):
        if arrays["n_pairs"] != 1 or arrays["classes"].tolist() != [-1, 1]:
            raise ValueError(f"a {type(est).__name__} file holds one problem")
        fitted = arrays.get("fitted")
        if not isinstance(fitted, dict):
            raise ValueError("metadata field 'fitted' is missing")
        d = arrays["n_features"]
        mean, scale = fitted.get("x_mean"), fitted.get("x_scale")
        if (mean is None) != (scale is None):
            raise ValueError("fitted x_mean and x_scale go together, scales positive")
        if mean is None:
            est.scaler_mean_ = est.scaler_scale_ = None
        else:
            est.scaler_mean_ = _finite_vector(mean, "x_mean", d)
            est.scaler_scale_ = _finite_vector(scale, "x_scale", d)
            if np.any(est.scaler_scale_ <= 0):
                raise ValueError("fitted x_mean and x_scale go together, scales positive")
        return fitted


class RegressorCodec(_TaskCodec):
    """The codec of :class:`~mklopt.MKLRegressor`: also the target's standardisation."""

    kind = "mkl_regressor"

    def fitted_to_arrays(self, est):
        out = super().fitted_to_arrays(est)
        out["fitted"].update(y_mean=float(est.y_mean_), y_scale=float(est.y_scale_))
        return out

    def fitted_from_arrays(self, est, arrays):
        fitted = super().fitted_from_arrays(est, arrays)
        est.y_mean_ = _finite_number(fitted.get("y_mean"), "y_mean")
        est.y_scale_ = _finite_number(fitted.get("y_scale"), "y_scale")
        if est.y_scale_ <= 0:
            raise ValueError("fitted y_scale must be positive")


class OneClassCodec(_TaskCodec):
    """The codec of :class:`~mklopt.MKLOneClass`: its offset is minus the bias."""

    kind = "mkl_one_class"

    def fitted_from_arrays(self, est, arrays):
        super().fitted_from_arrays(est, arrays)
        est.offset_ = -float(est.intercept_[0])
