"""Bundled data sets, their official splits and the papers' evaluation split.

Ten data sets ship with mklopt (sources and cleaning in ``data/README.md``
beside this module):

- six small binary problems from the UCI Machine Learning Repository, the
  ones on which the MKL papers that mklopt implements report their results
  (ionosphere, sonar, pima, breast, vote, wdbc);
- two larger binary problems for scale work, letter (20,000 rows) and
  shuttle (58,000 rows), each with the UCI train/test split;
- satellite, a six-class problem (6,435 rows) with its UCI split;
- diabetes, a small regression problem (442 rows).

:func:`info` describes a set without loading it; :func:`load` returns its
``(X, y)``; :func:`load_split` returns the official split of the sets that
have one; :func:`split` draws the papers' random split of any data.

Examples
--------
>>> from mklopt import datasets
>>> datasets.names("binary")
('ionosphere', 'sonar', 'pima', 'breast', 'vote', 'wdbc', 'letter', 'shuttle')
>>> datasets.info("satellite").task, datasets.info("satellite").official_split
('multiclass', (4435, 2000))
>>> X, y = datasets.load("sonar")
>>> X.shape, sorted(set(y.tolist()))
((208, 60), [-1, 1])
>>> X_train, X_test, y_train, y_test = datasets.split(X, y, seed=0)
>>> X_train.shape, X_test.shape
((104, 60), (104, 60))
>>> X_train, X_test, y_train, y_test = datasets.load_split("letter")
>>> X_train.shape, X_test.shape
((16000, 16), (4000, 16))
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass
from importlib import resources

import numpy as np

from .._csvio import CSVError, class_labels, read_csv
from .._validation import check_choice, check_matrix, check_real

__all__ = ["DatasetInfo", "PAPERS", "names", "info", "load", "load_split", "split"]

TASKS = ("binary", "multiclass", "regression")
#: The six binary sets on which the MKL papers report their results, the
#: default of the benchmarks that follow their protocols.
PAPERS = ("ionosphere", "sonar", "pima", "breast", "vote", "wdbc")


@dataclass(frozen=True, slots=True)
class DatasetInfo:
    """What a bundled data set holds, known without loading it.

    Attributes
    ----------
    name : str
        The name :func:`load` takes.
    task : {"binary", "multiclass", "regression"}
        What ``y`` is: labels in {-1, +1}, class names (str), or a real
        target (float64).
    n_samples, n_features : int
        Shape of ``X``.
    n_classes : int or None
        Number of classes; None for regression.
    target : str
        What ``y`` means.
    source : str
        The original data set and its donors (full references in
        ``data/README.md``).
    official_split : tuple of (int, int) or None
        ``(n_train, n_test)`` of the split published with the data: the
        first ``n_train`` rows train, the last ``n_test`` test (see
        :func:`load_split`). None when the data come without one.
    """

    name: str
    task: str
    n_samples: int
    n_features: int
    n_classes: int | None
    target: str
    source: str
    official_split: tuple[int, int] | None = None


_INFO = {
    i.name: i
    for i in (
        DatasetInfo(
            "ionosphere", "binary", 351, 34, 2, "+1: good radar return, -1: bad",
            "UCI Ionosphere (Sigillito, Wing, Hutton & Baker 1989)",
        ),
        DatasetInfo(
            "sonar", "binary", 208, 60, 2, "+1: mine (metal cylinder), -1: rock",
            "UCI Connectionist Bench, Sonar, Mines vs. Rocks (Gorman & Sejnowski 1988)",
        ),
        DatasetInfo(
            "pima", "binary", 768, 8, 2, "+1: tested positive for diabetes, -1: negative",
            "UCI Pima Indians Diabetes (Smith, Everhart, Dickson, Knowler & Johannes 1988)",
        ),
        DatasetInfo(
            "breast", "binary", 683, 9, 2, "+1: malignant, -1: benign",
            "UCI Breast Cancer Wisconsin, Original (Wolberg & Mangasarian 1990)",
        ),
        DatasetInfo(
            "vote", "binary", 435, 16, 2, "+1: democrat, -1: republican",
            "UCI Congressional Voting Records 1984 (Schlimmer 1987)",
        ),
        DatasetInfo(
            "wdbc", "binary", 569, 30, 2, "+1: malignant, -1: benign",
            "UCI Breast Cancer Wisconsin, Diagnostic (Street, Wolberg & Mangasarian 1993)",
        ),
        DatasetInfo(
            "letter", "binary", 20000, 16, 2, "+1: letters A-M, -1: letters N-Z",
            "UCI Letter Recognition (Frey & Slate 1991)", (16000, 4000),
        ),
        DatasetInfo(
            "shuttle", "binary", 58000, 9, 2, "+1: class Rad.Flow, -1: the six other classes",
            "UCI Statlog (Shuttle) (Catlett)", (43500, 14500),
        ),
        DatasetInfo(
            "satellite", "multiclass", 6435, 36, 6, "soil or crop class, by name",
            "UCI Statlog (Landsat Satellite) (Srinivasan)", (4435, 2000),
        ),
        DatasetInfo(
            "diabetes", "regression", 442, 10, None,
            "disease progression one year after baseline",
            "Efron, Hastie, Johnstone & Tibshirani (2004), Least Angle Regression",
        ),
    )
}  # fmt: skip

# The file of each set. Plain and gzipped CSV read alike (the reader looks
# at the first bytes); the larger sets are gzipped to keep the wheel small.
_FILES = {name: f"{name}.csv" for name in _INFO} | {
    name: f"{name}.csv.gz" for name in ("letter", "shuttle", "satellite", "diabetes")
}

# Draws of the random split before giving up on getting every class into the
# training part (only reachable with tiny or extremely unbalanced inputs).
_MAX_DRAWS = 1000


def names(task=None):
    """Names of the bundled data sets.

    Parameters
    ----------
    task : {"binary", "multiclass", "regression"} or None, default=None
        Only the sets of this task; None for all of them.

    Returns
    -------
    tuple of str
        In a fixed order: the six papers' sets first (ionosphere, sonar,
        pima, breast, vote, wdbc), then letter, shuttle, satellite and
        diabetes.

    Raises
    ------
    ValueError
        If ``task`` is not one of the three tasks.

    Examples
    --------
    >>> from mklopt import datasets
    >>> datasets.names("regression")
    ('diabetes',)
    """
    if task is None:
        return tuple(_INFO)
    check_choice(task, "task", TASKS)
    return tuple(n for n, i in _INFO.items() if i.task == task)


def _check_name(name):
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if name not in _INFO:
        raise ValueError(f"unknown data set {name!r}; bundled data sets: {', '.join(_INFO)}")
    return _INFO[name]


def info(name):
    """Describe a bundled data set without loading it.

    Parameters
    ----------
    name : str
        One of :func:`names`.

    Returns
    -------
    DatasetInfo
        Task, shape, number of classes, meaning of ``y``, source and
        official split.

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If ``name`` is not a bundled data set; the message lists the names.

    Examples
    --------
    >>> from mklopt import datasets
    >>> d = datasets.info("shuttle")
    >>> d.task, d.n_samples, d.n_features, d.official_split
    ('binary', 58000, 9, (43500, 14500))
    >>> d.source
    'UCI Statlog (Shuttle) (Catlett)'
    """
    return _check_name(name)


@functools.cache
def _read(name):
    # importlib.resources reads from the installed package (a wheel, a zip
    # or the source tree alike), never from a path relative to the CWD.
    d = _INFO[name]
    file = _FILES[name]
    try:
        X, labels, _ = read_csv(resources.files(__name__).joinpath("data", file), where=file)
        if d.task == "binary":
            y = class_labels(labels, where=file)
            if not np.all((y == -1) | (y == 1)):
                raise CSVError(f"{file}: labels other than -1 and +1")
        elif d.task == "multiclass":
            y = labels
        else:
            y = labels.astype(np.float64)
    except (CSVError, ValueError) as exc:
        raise RuntimeError(f"bundled data file {file} is damaged: {exc}") from None
    if X.shape != (d.n_samples, d.n_features) or (
        d.n_classes is not None and np.unique(y).size != d.n_classes
    ):
        raise RuntimeError(f"bundled data file {file} is damaged: not the documented shape")
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
        :func:`split` and :func:`load_split`). A fresh, writable copy on
        every call.
    y : ndarray of shape (n_samples,)
        By task (see :func:`info`): int64 labels in {-1, +1} for binary
        sets, the class names as a numpy str array for multiclass sets, the
        float64 target for regression. A fresh copy on every call.

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If ``name`` is not a bundled data set; the message lists the names.

    Notes
    -----
    ==========  ======  ==  ==========  ======================================
    name        n       d   task        y
    ==========  ======  ==  ==========  ======================================
    ionosphere  351     34  binary      +1: good radar return
    sonar       208     60  binary      +1: mine
    pima        768     8   binary      +1: diabetes positive
    breast      683     9   binary      +1: malignant
    vote        435     16  binary      +1: democrat
    wdbc        569     30  binary      +1: malignant
    letter      20,000  16  binary      +1: letters A-M (10,060 rows)
    shuttle     58,000  9   binary      +1: class Rad.Flow (45,586 rows)
    satellite   6,435   36  multiclass  six soil and crop classes, by name
    diabetes    442     10  regression  disease progression after one year
    ==========  ======  ==  ==========  ======================================

    The files are read once per process and kept; letter and shuttle take
    a fraction of a second the first time.

    References
    ----------
    D. Dua and C. Graff. UCI Machine Learning Repository. University of
    California, Irvine, School of Information and Computer Sciences.
    B. Efron, T. Hastie, I. Johnstone and R. Tibshirani (2004). Least angle
    regression. Annals of Statistics 32(2), 407-499 (diabetes).
    The original donors of each set are listed in ``data/README.md``.

    Examples
    --------
    >>> from mklopt import datasets
    >>> X, y = datasets.load("satellite")
    >>> X.shape, y.dtype.kind, len(set(y.tolist()))
    ((6435, 36), 'U', 6)
    >>> X, y = datasets.load("diabetes")
    >>> X.shape, y.dtype
    ((442, 10), dtype('float64'))
    """
    _check_name(name)
    X, y = _read(name)
    return X.copy(), y.copy()


def load_split(name, standardize=True):
    """Load a bundled data set split as its publishers split it.

    letter, shuttle and satellite come with a train/test split (the UCI
    one): the first rows are the training part, the last ones the test
    part. Results on it compare with published ones.

    Parameters
    ----------
    name : str
        A data set whose :attr:`DatasetInfo.official_split` is not None:
        ``"letter"`` (16,000 / 4,000), ``"shuttle"`` (43,500 / 14,500) or
        ``"satellite"`` (4,435 / 2,000).
    standardize : bool, default=True
        Centre and scale every feature with the mean and standard deviation
        of the *training* part, and apply the same map to the test part (as
        :func:`split` does). False returns the raw values.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features), float64
    X_test : ndarray of shape (n_test, n_features), float64
    y_train : ndarray of shape (n_train,)
    y_test : ndarray of shape (n_test,)
        Labels as :func:`load` returns them.

    Raises
    ------
    TypeError
        If ``name`` is not a string or ``standardize`` is not a bool.
    ValueError
        If ``name`` is unknown or has no official split (for those sets use
        :func:`split`).

    Examples
    --------
    >>> from mklopt import datasets
    >>> X_train, X_test, y_train, y_test = datasets.load_split("satellite")
    >>> X_train.shape, X_test.shape, sorted(set(y_test.tolist()))[:2]
    ((4435, 36), (2000, 36), ['cotton crop', 'damp grey soil'])
    """
    d = _check_name(name)
    if not isinstance(standardize, bool):
        raise TypeError(f"standardize must be a bool, got {type(standardize).__name__}")
    if d.official_split is None:
        have = ", ".join(n for n, i in _INFO.items() if i.official_split is not None)
        raise ValueError(
            f"data set {name!r} has no official train/test split (sets with one: {have}); "
            f"use split(*load({name!r}), seed=...) for a random split"
        )
    X, y = load(name)
    n_train = d.official_split[0]
    X_train, X_test = X[:n_train], X[n_train:]
    if standardize:
        mean, scale = _scaling(X_train)
        X_train, X_test = (X_train - mean) / scale, (X_test - mean) / scale
    return X_train, X_test, y[:n_train], y[n_train:]


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


def _scaling(X_train):
    """Mean and scale of every feature of a training part.

    ``(X - mean) / scale`` standardises with them. This is the one place
    that computes the standardisation of mklopt: :func:`split`,
    :func:`load_split` and the estimators' own scaler (``standardize``, also
    what ``mklopt fit`` relies on) all use it.
    """
    mean = X_train.mean(axis=0)
    std = X_train.std(axis=0)
    # A feature that is constant on the training part carries no information
    # there; dividing by 1 keeps it finite (it becomes 0 on the training part)
    # instead of turning it into NaN. "Constant" allows for rounding noise.
    constant = std <= 1e-12 * np.maximum(1.0, np.abs(mean))
    return mean, np.where(constant, 1.0, std)


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
        Class labels (integers, strings or any other comparable values; at
        least two classes), or a regression target if its dtype is
        floating-point (see Notes).
    train_fraction : float, default=0.5
        Share of the samples in the training part, in (0, 1). The training
        part has ``round(train_fraction * n_samples)`` samples, clipped so
        that both parts are non-empty.
    seed : int, numpy.random.Generator or None, default=None
        Source of randomness; an int gives a reproducible split.
    stratify : bool, default=False
        Keep the class proportions in both parts (each class is split on its
        own). The papers use plain random splits, hence the default. Only
        for class labels.

    Returns
    -------
    X_train : ndarray of shape (n_train, n_features), float64
    X_test : ndarray of shape (n_samples - n_train, n_features), float64
    y_train : ndarray of shape (n_train,)
    y_test : ndarray of shape (n_samples - n_train,)
        ``y`` is returned as given (same dtype), never standardised.

    Raises
    ------
    TypeError
        For a ``train_fraction`` or ``seed`` of the wrong type, non-numeric
        ``X``, or class labels of mixed types that cannot be compared.
    ValueError
        For ``train_fraction`` outside (0, 1), NaN/inf in ``X`` or in a
        regression target, mismatched or non-1-D ``y``, fewer than two
        samples, a single class, too few samples to put every class in the
        training part, or ``stratify=True`` with a regression target.

    Notes
    -----
    **Classes or a target.** A ``y`` of floating-point dtype is a regression
    target: the split is plainly random. Any other ``y`` (integers, strings,
    booleans, objects) holds class labels, as :func:`load` returns them for
    the classification sets; cast float class labels with
    ``y.astype(int)`` to have them treated as classes.

    Every class is guaranteed to appear in the training part: a plain random
    split that misses a class is redrawn (this matters only for tiny or very
    unbalanced inputs; with the bundled data sets the first draw always
    succeeds). Features that are constant on the training part (standard
    deviation 0, such as the second ionosphere feature) are only centred,
    never divided by zero.

    Examples
    --------
    >>> from mklopt import datasets
    >>> X, y = datasets.load("diabetes")            # a float target: regression
    >>> X_train, X_test, y_train, y_test = datasets.split(X, y, seed=0)
    >>> y_train.dtype, X_train.shape
    (dtype('float64'), (221, 10))
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
    if n < 2:
        raise ValueError(f"X has {n} sample; a train/test split needs at least two")
    n_train = min(max(int(round(train_fraction * n)), 1), n - 1)

    if np.issubdtype(y.dtype, np.floating):
        if stratify:
            raise ValueError(
                "stratify=True needs class labels, but y is a floating-point regression "
                "target; for float class labels pass y.astype(int)"
            )
        if not np.all(np.isfinite(y)):
            raise ValueError("y (a regression target) contains NaN or infinity")
        perm = rng.permutation(n)
        train, test = perm[:n_train], perm[n_train:]
    else:
        train, test = _split_classes(y, n_train, train_fraction, rng, stratify)
    mean, scale = _scaling(X[train])
    return (X[train] - mean) / scale, (X[test] - mean) / scale, y[train], y[test]


def _split_classes(y, n_train, train_fraction, rng, stratify):
    """Training and test indices with every class in the training part."""
    try:
        classes, y_idx = np.unique(y, return_inverse=True)
    except TypeError:
        raise TypeError(
            "y holds class labels that cannot be compared with each other (mixed types?); "
            "use labels of one type, e.g. all strings"
        ) from None
    y_idx = y_idx.ravel()
    n = y.shape[0]
    n_classes = classes.shape[0]
    if n_classes < 2:
        raise ValueError("y has a single class; a classification split needs at least two")
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
        return train, np.flatnonzero(~mask)
    for _ in range(_MAX_DRAWS):
        perm = rng.permutation(n)
        train, test = perm[:n_train], perm[n_train:]
        if np.unique(y_idx[train]).size == n_classes:
            return train, test
    raise ValueError(
        f"could not draw a training part of {n_train} samples containing all "
        f"{n_classes} classes; raise train_fraction or use stratify=True"
    )
