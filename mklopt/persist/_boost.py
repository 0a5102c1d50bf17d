"""The codec of :class:`~mklopt.MKBoostClassifier` (model format 4).

An MKBoost model is, per one-vs-one pair, a boosted ensemble: rounds with
their weight ``alpha_t``, error and normaliser, each round made of one or
more single-kernel SVMs (*learners*: a kernel, training indices of support
vectors, coefficients, a bias, a vote weight inside the round). Prediction
evaluates, for every kernel the ensemble uses, that kernel between the
training rows its learners need and the new points; those rows, with the
kernel's normalisation (and its feature map, if the model was trained on
feature maps), are the pair's *units*. The file concatenates rounds,
learners, support vectors and units over the pairs, with ``*_offsets``
tables marking where each group starts, as the MKL layout does for pairs.
"""

from __future__ import annotations

import numpy as np

from ..estimators._ovo import pair_values, set_pair_attributes
from ..estimators.mkboost import _BinaryBoost, _EmptyRows
from ..methods.boosting import BoostRound, Ensemble
from ..oracles.weak_learners import WeakLearner
from ._estimator import (
    _MAP_ARRAYS,
    EstimatorCodec,
    _check_classes,
    _check_dtypes,
    _check_map_arrays,
    _check_offsets,
    _collect_maps,
    _functions,
    _map_arrays,
    classifier_from_arrays,
    classifier_to_arrays,
    legacy_standardize,
)

__all__ = ["BoostCodec"]

#: The first format that holds MKBoost ensembles.
BOOST_VERSION = 4

_ARRAYS = {
    "classes": ("biufU", 1),
    "pairs": ("i", 2),
    "weights": ("f", 2),
    "n_iter": ("i", 1),
    "n_fits": ("i", 1),
    "stop_reason": ("U", 1),
    "constant": ("f", 1),
    # per pair: its rounds; per round: its learners; per learner: its support
    "round_offsets": ("i", 1),
    "round_alpha": ("f", 1),
    "round_error": ("f", 1),
    "round_Z": ("f", 1),
    "learner_offsets": ("i", 1),
    "learner_kernel": ("i", 1),
    "learner_bias": ("f", 1),
    "learner_vote": ("f", 1),
    "learner_sv_offsets": ("i", 1),
    "learner_support": ("i", 1),
    "learner_coef": ("f", 1),
    # per pair: its units; per unit: a kernel, its scale and training rows
    "unit_offsets": ("i", 1),
    "kernel_index": ("i", 1),
    "kernel_scale": ("f", 1),
    "sv_offsets": ("i", 1),
    "sv_X": ("f", 2),
}
_OPTIONAL_ARRAYS = {"scaler_mean": ("f", 1), "scaler_scale": ("f", 1),
                    "x_mean": ("f", 1), "x_scale": ("f", 1)}


def _pack(est):
    """The pairs' ensembles and kernel rows as the flat arrays of the layout."""
    groups = {key: [] for key in ("round_alpha", "round_error", "round_Z", "learner_kernel",
                                  "learner_bias", "learner_vote", "learner_support",
                                  "learner_coef", "kernel_index", "kernel_scale", "sv_X")}
    offsets = {key: [0] for key in ("round_offsets", "learner_offsets", "learner_sv_offsets",
                                    "unit_offsets", "sv_offsets")}
    m_kind, m_cols, m_data, m_off, lm_X, lm_off = [], [], [], [0], [], [0]
    for model in est.models_:
        ens = model.ensemble
        for rnd in ens.rounds:
            groups["round_alpha"].append(rnd.alpha)
            groups["round_error"].append(rnd.error)
            groups["round_Z"].append(rnd.Z)
            for lrn, vote in zip(rnd.learners, np.asarray(rnd.weights).tolist(), strict=True):
                groups["learner_kernel"].append(lrn.kernel)
                groups["learner_bias"].append(lrn.bias)
                groups["learner_vote"].append(vote)
                groups["learner_support"].extend(np.asarray(lrn.support).tolist())
                groups["learner_coef"].extend(np.asarray(lrn.coef).tolist())
                offsets["learner_sv_offsets"].append(len(groups["learner_support"]))
            offsets["learner_offsets"].append(len(groups["learner_kernel"]))
        offsets["round_offsets"].append(len(groups["round_alpha"]))
        for k in ens.kernels.tolist():
            fn = model.rows[k]
            if isinstance(fn, _EmptyRows):
                continue  # rebuilt from the ensemble: no learner of k has support vectors
            groups["kernel_index"].append(k)
            groups["kernel_scale"].append(float(fn.scales[0]))
            groups["sv_X"].append(fn.X)
            offsets["sv_offsets"].append(offsets["sv_offsets"][-1] + fn.n_samples)
            lm_off.append(lm_off[-1] + _collect_maps(fn, m_kind, m_cols, m_data, m_off, lm_X))
        offsets["unit_offsets"].append(len(groups["kernel_index"]))
    d = int(est.n_features_in_)
    ints = ("learner_kernel", "learner_support", "kernel_index")
    out = {key: np.asarray(v, dtype=np.int64 if key in ints else np.float64)
           for key, v in groups.items() if key != "sv_X"}
    out.update({key: np.asarray(v, dtype=np.int64) for key, v in offsets.items()})
    out["sv_X"] = (np.concatenate(groups["sv_X"], axis=0) if groups["sv_X"]
                   else np.empty((0, d))).astype(np.float64)
    out.update(_map_arrays(m_kind, m_cols, m_data, m_off, lm_off, lm_X, d))
    return out


def _check_arrays(a, header):
    d, m, P = header["n_features"], header["n_kernels"], header["n_pairs"]
    missing = sorted(set(_ARRAYS) - set(a))
    if missing:
        raise ValueError(f"missing arrays: {', '.join(missing)}")
    _check_dtypes(a, {**_ARRAYS, **_OPTIONAL_ARRAYS, **_MAP_ARRAYS})
    _check_classes(a, P)
    for key, shape in (("weights", (P, m)), ("n_iter", (P,)), ("n_fits", (P,)),
                       ("stop_reason", (P,)), ("constant", (P,)), ("round_offsets", (P + 1,)),
                       ("unit_offsets", (P + 1,)), ("scaler_mean", (d,)),
                       ("scaler_scale", (d,)), ("x_mean", (d,)), ("x_scale", (d,))):
        if key in a and a[key].shape != shape:
            raise ValueError(f"array {key!r} has shape {a[key].shape}, expected {shape}")
    for mean, scale in (("x_mean", "x_scale"), ("scaler_mean", "scaler_scale")):
        if (mean in a) != (scale in a):
            raise ValueError(f"{mean} and {scale} go together")
        if scale in a and not np.all(a[scale] > 0):
            raise ValueError(f"{scale} must be positive")
    # each offset table ends at the size of what it cuts
    n_rounds, n_learners = a["round_alpha"].size, a["learner_kernel"].size
    n_units = a["kernel_index"].size
    for key, end in (("round_offsets", n_rounds), ("learner_offsets", n_learners),
                     ("learner_sv_offsets", a["learner_support"].size),
                     ("unit_offsets", n_units), ("sv_offsets", a["sv_X"].shape[0])):
        _check_offsets(a, key, end)
    for key, size in (("round_error", n_rounds), ("round_Z", n_rounds),
                      ("learner_offsets", n_rounds + 1), ("learner_bias", n_learners),
                      ("learner_vote", n_learners), ("learner_sv_offsets", n_learners + 1),
                      ("learner_coef", a["learner_support"].size),
                      ("kernel_scale", n_units), ("sv_offsets", n_units + 1)):
        if a[key].shape != (size,):
            raise ValueError(f"array {key!r} has shape {a[key].shape}, expected {(size,)}")
    if not np.array_equal(a["n_iter"], np.diff(a["round_offsets"])):
        raise ValueError("n_iter does not count the rounds of each pair")
    if a["sv_X"].shape[1] != d:
        raise ValueError(f"array 'sv_X' has {a['sv_X'].shape[1]} columns, not {d}")
    for key in ("learner_kernel", "kernel_index"):
        if np.any(a[key] < 0) or np.any(a[key] >= m):
            raise ValueError(f"kernel indices outside [0, {m}) in {key!r}")
    if np.any(a["learner_support"] < 0):
        raise ValueError("negative support vector indices")
    if np.any(a["weights"] < 0):
        raise ValueError("negative kernel weights")
    if np.any(a["kernel_scale"] <= 0):
        raise ValueError("kernel scales must be positive")
    _check_map_arrays(a, header, n_units, n_units)


def _unpack(a, specs, n_pairs, n_kernels):
    """The pairs' models (``_BinaryBoost``) from the flat arrays."""
    r_off, l_off, s_off = a["round_offsets"], a["learner_offsets"], a["learner_sv_offsets"]
    u_off, x_off = a["unit_offsets"], a["sv_offsets"]
    models = []
    for p in range(n_pairs):
        rounds = []
        for r in range(int(r_off[p]), int(r_off[p + 1])):
            lo, hi = int(l_off[r]), int(l_off[r + 1])
            if hi == lo:
                raise ValueError(f"round {r} has no learners")
            learners = tuple(
                WeakLearner(int(a["learner_kernel"][j]),
                            np.ascontiguousarray(a["learner_support"][s_off[j]:s_off[j + 1]]),
                            np.ascontiguousarray(a["learner_coef"][s_off[j]:s_off[j + 1]]),
                            float(a["learner_bias"][j]))
                for j in range(lo, hi)
            )
            rounds.append(BoostRound(float(a["round_alpha"][r]), learners,
                                     np.ascontiguousarray(a["learner_vote"][lo:hi]),
                                     float(a["round_error"][r]), float(a["round_Z"][r])))
        ens = Ensemble(rounds, n_kernels)
        rows = {}
        for u in range(int(u_off[p]), int(u_off[p + 1])):
            k = int(a["kernel_index"][u])
            s0, s1 = int(x_off[u]), int(x_off[u + 1])
            if k not in ens.support or ens.support[k].size != s1 - s0 or k in rows:
                raise ValueError(f"pair {p} keeps rows of kernel {k} that its ensemble does "
                                 "not use as saved")
            rows[k] = _functions(a, specs, a["kernel_index"][u:u + 1], u, u + 1, s0, s1, u)
        for k in ens.kernels.tolist():
            if k not in rows:
                if ens.support[k].size:
                    raise ValueError(f"pair {p} has no rows for kernel {k}")
                rows[k] = _EmptyRows()
        models.append(_BinaryBoost(ens, rows, float(a["constant"][p]), None))
    return models


class BoostCodec(EstimatorCodec):
    """The codec of :class:`~mklopt.MKBoostClassifier`: its ensembles, classes and scaler."""

    kind = "mkboost"

    def to_arrays(self, est):
        """The fitted ensembles as arrays and a JSON header (model format 4).

        Returns
        -------
        dict

        Raises
        ------
        ValueError
            If the estimator is not fitted.
        """
        if not hasattr(est, "models_"):
            raise ValueError(f"{type(est).__name__} is not fitted; call fit before saving it")
        P = len(est.models_)
        out = _pack(est)
        out.update(classifier_to_arrays(est))
        out.update(
            weights=np.asarray(pair_values(est, "weights_"), dtype=np.float64).reshape(
                P, len(est.kernel_specs_)),
            n_iter=np.asarray(pair_values(est, "n_iter_"), dtype=np.int64),
            n_fits=np.asarray(pair_values(est, "n_fits_"), dtype=np.int64),
            stop_reason=np.array([str(r) for r in pair_values(est, "stop_reason_")],
                                 dtype=str).reshape(P),
            constant=np.array([mdl.constant for mdl in est.models_], dtype=np.float64),
        )
        out.update(self.common_to_arrays(est))
        out.update(format_version=BOOST_VERSION, n_pairs=P)
        return out

    def from_arrays(self, cls, arrays):
        """A fitted ``cls`` rebuilt from :meth:`to_arrays` output, every array checked.

        Raises
        ------
        ValueError
            Naming what is inconsistent.
        """
        a, header, specs = self.common_from_arrays(cls, arrays, counts=("n_pairs",))
        if header["format_version"] < BOOST_VERSION:
            raise ValueError(f"an MKBoost model in a format {header['format_version']} file")
        _check_arrays(a, header)
        est = self.new_from_params(cls, header["params"], specs, a)
        P = header["n_pairs"]
        models = _unpack(a, specs, P, header["n_kernels"])
        self.restore_common(est, header, specs)
        est.models_ = models
        classifier_from_arrays(est, a)
        set_pair_attributes(
            est,
            weights_=np.ascontiguousarray(a["weights"]),
            ensemble_=[mdl.ensemble for mdl in models],
            n_iter_=a["n_iter"],
            n_fits_=a["n_fits"],
            stop_reason_=a["stop_reason"].tolist(),
        )
        return est

    def legacy_params(self, cls, params, arrays):
        return legacy_standardize(self, cls, params, arrays)
