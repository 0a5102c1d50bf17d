"""Bundled benchmark data sets and the papers' evaluation split.

Six binary classification problems from the UCI Machine Learning Repository
ship with mklopt (see ``data/README.md`` beside this module for their
sources). They are the data sets on which the MKL papers that mklopt
implements report their results.

Examples
--------
>>> from mklopt import datasets
>>> datasets.names()
('ionosphere', 'sonar', 'pima', 'breast', 'vote', 'wdbc')
>>> X, y = datasets.load("sonar")
>>> X.shape, sorted(set(y.tolist()))
((208, 60), [-1, 1])
>>> X_train, X_test, y_train, y_test = datasets.split(X, y, seed=0)
>>> X_train.shape, X_test.shape
((104, 60), (104, 60))
"""

from __future__ import annotations

import functools
import io
import numbers
from importlib import resources

import numpy as np

from .._validation import check_matrix, check_real

__all__ = ["names", "load", "split"]

_NAMES = ("ionosphere", "sonar", "pima", "breast", "vote", "wdbc")

# Draws of the random split before giving up on getting every class into the
# training part (only reachable with tiny or extremely unbalanced inputs).
_MAX_DRAWS = 1000


def names():
    """Names of the bundled data sets.

    Returns
    -------
    tuple of str
        ``("ionosphere", "sonar", "pima", "breast", "vote", "wdbc")``.
    """
    return _NAMES


@functools.cache
def _read(name):
    # importlib.resources reads from the installed package (a wheel, a zip
    # or the source tree alike), never from a path relative to the CWD.
    text = resources.files(__name__).joinpath("data", f"{name}.csv").read_text(encoding="utf-8")
    header = text.split("\n", 1)[0].strip().split(",")
    if header[-1] != "label":
        raise RuntimeError(f"bundled file {name}.csv is damaged: last column is not 'label'")
    table = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    X = np.ascontiguousarray(table[:, :-1])
    y = table[:, -1].astype(np.int64)
    X.flags.writeable = False
    y.flags.writeable = False
    return X, y


def load(name):
    """Load a bundled data set.

    Parameters
    ----------
    name : str
        One of :func:`names`.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), float64
        Features as in the original data (not standardised; see
        :func:`split`). A fresh, writable copy on every call.
    y : ndarray of shape (n_samples,), int64
        Labels in {-1, +1}.

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If ``name`` is not a bundled data set; the message lists the names.

    Notes
    -----
    ============  =====  ==  =====================
    name          n      d   +1 class
    ============  =====  ==  =====================
    ionosphere    351    34  good radar returns
    sonar         208    60  mines
    pima          768    8   diabetes positive
    breast        683    9   malignant
    vote          435    16  democrat
    wdbc          569    30  malignant
    ============  =====  ==  =====================

    References
    ----------
    D. Dua and C. Graff. UCI Machine Learning Repository. University of
    California, Irvine, School of Information and Computer Sciences.
    The original donors of each set are listed in ``data/README.md``.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if name not in _NAMES:
        raise ValueError(f"unknown data set {name!r}; bundled data sets: {', '.join(_NAMES)}")
    X, y = _read(name)
    return X.copy(), y.copy()


def _rng(seed):
    if seed is None or isinstance(seed, np.random.Generator):
        return np.random.default_rng(seed)
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        return np.random.default_rng(int(seed))
    raise TypeError(
        f"seed must be None, a non-negative int or a numpy.random.Generator, got "
        f"{type(seed).__name__}"
    )


def _standardise(X_train, X_test):
    mean = X_train.mean(axis=0)
    std = X_train.std(axis=0)
    # A feature that is constant on the training part carries no information
    # there; dividing by 1 keeps it finite (it becomes 0 on the training part)
    # instead of turning it into NaN. "Constant" allows for rounding noise.
    constant = std <= 1e-12 * np.maximum(1.0, np.abs(mean))
    std = np.where(constant, 1.0, std)
    return (X_train - mean) / std, (X_test - mean) / std


def split(X, y, train_fraction=0.5, seed=None, stratify=False):
    """Random train/test split, standardised with the training statistics.

    This is the protocol of the MKL papers: a random split (by default into
    halves), then every feature is centred and scaled with the mean and
    standard deviation of the *training* part, and the same transformation
    is applied to the test part.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Features (finite reals).
    y : array-like of shape (n_samples,)
        Labels (any values; at least two classes).
    train_fraction : float, default=0.5
        Share of the samples in the training part, in (0, 1). The training
        part has ``round(train_fraction * n_samples)`` samples, clipped so
        that both parts are non-empty.
    seed : int, numpy.random.Generator or None, default=None
        Source of randomness; an int gives a reproducible split.
    stratify : bool, default=False
        Keep the class proportions in both parts (each class is split on its
        own). The papers use plain random splits, hence the default.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features), float64
    X_test : ndarray of shape (n_samples - n_train, n_features), float64
    y_train : ndarray of shape (n_train,)
    y_test : ndarray of shape (n_samples - n_train,)

    Raises
    ------
    TypeError
        For a ``train_fraction`` or ``seed`` of the wrong type, or
        non-numeric ``X``.
    ValueError
        For ``train_fraction`` outside (0, 1), NaN/inf in ``X``, mismatched
        or non-1-D ``y``, a single class, or too few samples to put every
        class in the training part.

    Notes
    -----
    Every class is guaranteed to appear in the training part: a plain random
    split that misses a class is redrawn (this matters only for tiny or very
    unbalanced inputs; with the bundled data sets the first draw always
    succeeds). Features that are constant on the training part (standard
    deviation 0, such as the second ionosphere feature) are only centred,
    never divided by zero.
    """
    X = check_matrix(X, "X")
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    n = X.shape[0]
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} labels but X has {n} samples")
    train_fraction = check_real(
        train_fraction, "train_fraction", low=0.0, high=1.0, strict_low=True, strict_high=True
    )
    if not isinstance(stratify, bool):
        raise TypeError(f"stratify must be a bool, got {type(stratify).__name__}")
    rng = _rng(seed)
    classes, y_idx = np.unique(y, return_inverse=True)
    y_idx = y_idx.ravel()
    n_classes = classes.shape[0]
    if n_classes < 2:
        raise ValueError("y has a single class; a classification split needs at least two")
    n_train = min(max(int(round(train_fraction * n)), 1), n - 1)
    if n_train < n_classes:
        raise ValueError(
            f"train_fraction={train_fraction} gives {n_train} training sample(s) for "
            f"{n_classes} classes; every class needs one: raise train_fraction or add data"
        )

    if stratify:
        train = []
        for c in range(n_classes):
            members = rng.permutation(np.flatnonzero(y_idx == c))
            k = min(max(int(round(train_fraction * members.size)), 1), members.size)
            train.append(members[:k])
        train = np.sort(np.concatenate(train))
        mask = np.zeros(n, dtype=bool)
        mask[train] = True
        test = np.flatnonzero(~mask)
    else:
        for _ in range(_MAX_DRAWS):
            perm = rng.permutation(n)
            train, test = perm[:n_train], perm[n_train:]
            if np.unique(y_idx[train]).size == n_classes:
                break
        else:
            raise ValueError(
                f"could not draw a training part of {n_train} samples containing all "
                f"{n_classes} classes; raise train_fraction or use stratify=True"
            )
    X_train, X_test = _standardise(X[train], X[test])
    return X_train, X_test, y[train], y[test]
