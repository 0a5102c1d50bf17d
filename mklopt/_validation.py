"""Input checks shared by every public entry point (see the bad-input rules of docs/estimators.md).

Each helper names the offending argument and says what to do, so that bad
input never reaches jitted code (where it would surface as a numba
traceback, a NaN or a silently wrong answer).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "check_real",
    "check_int",
    "check_choice",
    "check_matrix",
    "check_vector",
    "check_labels",
    "check_weights",
    "check_per_sample",
]


def check_real(value, name, *, low=None, high=None, strict_low=False, strict_high=False):
    """Return ``value`` as a float after checking it is a finite real in range.

    Raises
    ------
    TypeError
        If ``value`` is not a real number (bools are refused).
    ValueError
        If it is not finite or lies outside ``[low, high]`` (open ends when
        ``strict_*``).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__} {value!r}")
    v = float(value)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if low is not None and (v <= low if strict_low else v < low):
        op = ">" if strict_low else ">="
        raise ValueError(f"{name} must be {op} {low}, got {value!r}")
    if high is not None and (v >= high if strict_high else v > high):
        op = "<" if strict_high else "<="
        raise ValueError(f"{name} must be {op} {high}, got {value!r}")
    return v


def check_int(value, name, *, low=None, high=None):
    """Return ``value`` as an int after checking type and range."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    v = int(value)
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {value!r}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {value!r}")
    return v


def check_choice(value, name, choices):
    """Check that ``value`` is one of ``choices`` (strings compared exactly)."""
    if value not in choices:
        opts = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {opts}; got {value!r}")
    return value


def _as_float_array(x, name, dtype=np.float64, copy=False):
    try:
        a = np.array(x, dtype=dtype) if copy else np.asarray(x, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers: {exc}") from None
    return a


def check_matrix(X, name="X", *, min_rows=1, dtype=np.float64):
    """Return a C-contiguous 2-D float array; refuse NaN/inf and empty input."""
    a = _as_float_array(X, name, dtype)
    if a.ndim == 1:
        raise ValueError(
            f"{name} must be 2-D (n_samples, n_features), got a 1-D array; "
            "reshape with X.reshape(-1, 1) for a single feature"
        )
    if a.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_samples, n_features), got shape {a.shape}")
    if a.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} row(s), got {a.shape[0]}")
    if a.shape[1] < 1:
        raise ValueError(f"{name} has no features (shape {a.shape})")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinity; impute or drop those entries first")
    return np.ascontiguousarray(a)


def check_vector(x, name, *, size=None, dtype=np.float64, copy=False):
    """Return a C-contiguous finite 1-D float array (of length ``size`` if given).

    With ``copy=True`` the result is always a new array (one copy, made while
    converting), never the caller's.
    """
    a = _as_float_array(x, name, dtype, copy)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if size is not None and a.shape[0] != size:
        raise ValueError(f"{name} must have length {size}, got {a.shape[0]}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinity")
    return np.ascontiguousarray(a)


def check_labels(y, n_samples=None, name="y"):
    """Check binary labels in {-1, +1}; return them as float64.

    Raises
    ------
    ValueError
        On a shape mismatch, a single class, or labels other than -1/+1
        (the estimators map arbitrary labels to -1/+1 before calling this).
    """
    a = np.asarray(y)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if n_samples is not None and a.shape[0] != n_samples:
        raise ValueError(f"{name} has {a.shape[0]} labels but there are {n_samples} samples")
    try:
        a = a.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold the labels -1 and +1") from None
    if not np.all((a == 1.0) | (a == -1.0)):
        raise ValueError(f"{name} must hold only the labels -1 and +1")
    if np.all(a == a[0]) if a.size else True:
        raise ValueError(f"{name} has a single class; binary classification needs both -1 and +1")
    return np.ascontiguousarray(a)


def check_weights(w, n_kernels, name="w", *, copy=False):
    """Kernel weights: finite, non-negative, not all zero, length ``n_kernels``.

    Returns a C-contiguous float64 array; with ``copy=True`` always a new one
    (see :func:`check_vector`).
    """
    a = check_vector(w, name, size=n_kernels, copy=copy)
    if np.any(a < 0):
        raise ValueError(f"{name} must be non-negative; got min {a.min():.3g}")
    if not np.any(a > 0):
        raise ValueError(f"{name} is all zero; at least one kernel needs a positive weight")
    return a


def check_per_sample(values, n_samples, name, what):
    """One finite value ``>= 0`` per sample, not all zero, as a new float64 vector.

    The one check of per-sample boxes (``C`` as bounds) and of
    ``sample_weight``; ``what`` is the noun of the messages ("bound",
    "weight"). Scalars are the caller's to broadcast.

    Raises
    ------
    TypeError
        On values that are not numbers.
    ValueError
        On a wrong shape, a NaN or infinite value, a negative one, or values
        that are all zero; the message names ``name``.
    """
    try:
        a = np.array(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a number or an array of numbers, one {what} per sample, got "
            f"{type(values).__name__}"
        ) from None
    if a.ndim != 1 or a.shape[0] != n_samples:
        raise ValueError(f"{name} must have one {what} per sample, shape ({n_samples},); "
                         f"got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} contains NaN or infinity; every {what} must be finite")
    if np.any(a < 0.0):
        i = int(np.flatnonzero(a < 0.0)[0])
        raise ValueError(f"{name} must be >= 0 for every sample, got {a[i]:g} at sample {i}")
    if not np.any(a > 0.0):
        raise ValueError(f"{name} is zero for every sample: no sample is left to fit")
    return a
