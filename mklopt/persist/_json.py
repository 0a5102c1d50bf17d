"""JSON forms of what an estimator saves in a model file's metadata.

Constructor parameters (:func:`param_to_json`, :func:`param_from_json`,
:func:`check_param_types`) and kernel specs, each saved by its kernel family
(:func:`spec_to_json`, :func:`spec_from_json`); plain values go through
:func:`~mklopt.persist._protocol.to_json`.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ..estimators._progress import check_verbose
from ..kernels import FeatureMap
from ..kernels.families import family_of, get_kernel_family
from ..kernels.stack import PrecomputedKernel
from ..methods import METHODS, method_names
from ._protocol import Persistent, kind_of, persistent_kind, to_json

__all__ = ["param_to_json", "param_from_json", "check_param_types", "spec_to_json",
           "spec_from_json", "is_default"]


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
    # None, "balanced", or a dict saved as [label, weight] pairs (JSON keys are strings)
    "class_weight": lambda v: v in (None, "balanced") or (
        isinstance(v, list) and all(isinstance(e, list) and len(e) == 2 for e in v)),
    "probability": lambda v: isinstance(v, bool),
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


def is_default(value, parameter):
    default = parameter.default
    try:
        return value is default or bool(value == default)
    except (TypeError, ValueError):
        return False


def _is_inf(value):
    return (isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)
            and value == math.inf)


# --------------------------------------------------------------------------
# parameter values <-> JSON
# --------------------------------------------------------------------------
def param_to_json(name, value):
    if isinstance(value, Persistent):
        # an object parameter (a FeatureMap storage): {kind: its fields}
        return {kind_of(value): value.to_arrays()}
    if name == "method":
        return _method_name(value)
    if name == "p" and _is_inf(value):
        return "inf"  # p = inf (the sum kernel); JSON has no infinity
    if name == "verbose":
        return check_verbose(value)
    if name == "class_weight" and isinstance(value, dict):
        # [label, weight] pairs: a JSON object would turn integer labels into strings
        return [[to_json(k, name), to_json(v, name)] for k, v in value.items()]
    if name == "random_state" and not (value is None or isinstance(value, numbers.Integral)):
        # A generator's state is not data; the fitted model does not depend
        # on it (as for a method instance above), so it loads as None.
        return None
    return to_json(value, name)


def param_from_json(name, value):
    if name == "p" and value == "inf":
        return math.inf
    if name == "class_weight" and isinstance(value, list):
        return {k: v for k, v in value}
    if name == "groups" and isinstance(value, list):
        return [list(g) for g in value]
    if name == "storage" and isinstance(value, dict):
        cls = persistent_kind(next(iter(value))) if len(value) == 1 else None
        if cls is None or not issubclass(cls, FeatureMap):
            raise ValueError(f"storage {value!r} is neither a storage name nor a feature map")
        return cls.from_arrays(next(iter(value.values())))
    if name == "method" and value not in (None, "auto") and value not in method_names():
        # A plugin's method that is not installed here: prediction does not
        # need it, so the model loads, keeps the name (a refit asks for it
        # and its error lists what is registered) and says so.
        warnings.warn(
            f"the model was fitted with method={value!r}, which is not registered here "
            "(a plugin that is not installed?); it predicts without it, but refitting it "
            "needs the package that registers it",
            UserWarning,
            stacklevel=5,
        )
    return value


def spec_to_json(spec):
    """A kernel spec as JSON: its family saves it (``{"kind": name, <parameters>, "features"}``)."""
    if isinstance(spec, PrecomputedKernel):
        return {"kind": "precomputed", "index": int(spec.index)}
    family = family_of(spec)
    if family is None:
        raise TypeError(f"cannot save a kernel spec of type {type(spec).__name__}")
    feats = None if spec.features is None else [int(f) for f in spec.features]
    # for the built-in families exactly the fields of every earlier version
    return {"kind": family.name, **family.to_json(family.values(spec)), "features": feats}


def spec_from_json(obj, k):
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


def check_param_types(params):
    """Types of saved constructor parameters (their values are checked by ``fit``)."""
    for name, value in params.items():
        check = _PARAM_TYPES.get(name)
        if check is not None and not check(value):
            raise ValueError(f"parameter {name}={value!r} has the wrong type")
