"""Kernel specifications: what to compute, not the matrices themselves.

A spec is a small frozen dataclass (hashable, comparable, cheap to keep with a
fitted model) that ``KernelBank.from_specs`` evaluates on training data and
``KernelBank.cross`` on new data. Specs on the same feature subset share work:
all Gaussian widths share one squared-distance matrix and all polynomial
degrees share one Gram matrix.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .._validation import check_choice, check_int, check_real

__all__ = [
    "RBF",
    "Poly",
    "Linear",
    "rbf",
    "poly",
    "linear",
    "grid",
    "random_rbf",
    "GRID_PROTOCOLS",
    "ColumnSlice",
]


def _check_features(features, name="features"):
    """Normalise a feature subset; None, a tuple of column indices, of names, or a slice.

    Integer indices give a tuple of distinct non-negative ints (what the
    kernels compute on). Column names (strings) and a ``slice`` are kept as
    given, as a tuple of distinct strings or a one-entry tuple holding a
    :class:`ColumnSlice`, and resolved against the training data when an
    estimator fits (:func:`mklopt.kernels.columns.resolve_features`); a
    slice with non-negative bounds and a stop is resolved at once.
    """
    if features is None:
        return None
    if isinstance(features, slice):
        return _check_slice(features, name)
    if isinstance(features, ColumnSlice):
        return (features,)
    if isinstance(features, np.ndarray) and features.ndim == 1:
        features = features.tolist()
    if isinstance(features, (str, bytes)) or not isinstance(features, Sequence):
        raise TypeError(
            f"{name} must be None, a slice, or a sequence of feature indices or column names, "
            f"got {type(features).__name__}"
            + (f" (for one column pass [{features!r}])" if isinstance(features, str) else "")
        )
    if len(features) == 1 and isinstance(features[0], ColumnSlice):
        return tuple(features)
    if features and all(isinstance(f, str) for f in features):
        out = list(features)
    else:
        out = []
        for f in features:
            if isinstance(f, str):
                raise TypeError(
                    f"{name} mixes column names and indices ({list(features)!r}); "
                    "give all names or all indices"
                )
            if isinstance(f, bool) or not isinstance(f, numbers.Integral):
                raise TypeError(
                    f"{name} must hold integer feature indices or column names, got {f!r}"
                )
            if f < 0:
                raise ValueError(f"{name} must hold non-negative feature indices, got {int(f)}")
            out.append(int(f))
    if not out:
        raise ValueError(f"{name} must not be empty; use None for all features")
    if len(set(out)) != len(out):
        raise ValueError(f"{name} holds repeated features: {out}")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ColumnSlice:
    """A ``slice`` of the columns, resolved against the number of features at fit time.

    ``slice`` objects are not hashable, so a spec keeps its bounds here.
    """

    start: int | None
    stop: int | None
    step: int | None

    def indices(self, n_features):
        return tuple(range(*slice(self.start, self.stop, self.step).indices(n_features)))

    def __repr__(self):
        return f"slice({self.start}, {self.stop}, {self.step})"


def _check_slice(sl, name):
    for part in (sl.start, sl.stop, sl.step):
        if part is not None and (isinstance(part, bool) or not isinstance(part, numbers.Integral)):
            raise TypeError(f"{name} must be a slice of integer column positions, got {sl!r}")
    if sl.step is not None and sl.step == 0:
        raise ValueError(f"{name}: slice step cannot be zero")
    start, stop, step = (None if v is None else int(v) for v in (sl.start, sl.stop, sl.step))
    if (stop is not None and stop >= 0 and (start is None or start >= 0)
            and (step is None or step > 0)):
        out = tuple(range(start or 0, stop, step or 1))
        if not out:
            raise ValueError(f"{name} = {sl!r} selects no columns")
        return out
    return (ColumnSlice(start, stop, step),)


def features_resolved(features):
    """Whether a spec's features are column indices (or None), ready to compute on."""
    return features is None or all(
        isinstance(f, numbers.Integral) and not isinstance(f, bool) for f in features
    )


def _features_repr(features):
    return "" if features is None else f", features={list(features)}"


@dataclass(frozen=True, slots=True)
class RBF:
    """Gaussian kernel ``exp(-|x - z|^2 / (2 sigma^2))`` on a feature subset.

    Build it with :func:`rbf`.
    """

    sigma: float
    features: tuple[int, ...] | None = None

    def __post_init__(self):
        sigma = check_real(self.sigma, "sigma", low=0.0, strict_low=True)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "features", _check_features(self.features))

    def __repr__(self):
        return f"rbf(sigma={self.sigma!r}{_features_repr(self.features)})"


@dataclass(frozen=True, slots=True)
class Poly:
    """Polynomial kernel ``(x . z + 1)^degree`` on a feature subset.

    Build it with :func:`poly`.
    """

    degree: int
    features: tuple[int, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "degree", check_int(self.degree, "degree", low=1))
        object.__setattr__(self, "features", _check_features(self.features))

    def __repr__(self):
        return f"poly(degree={self.degree!r}{_features_repr(self.features)})"


@dataclass(frozen=True, slots=True)
class Linear:
    """Linear kernel ``x . z`` on a feature subset.

    Build it with :func:`linear`.
    """

    features: tuple[int, ...] | None = None

    def __post_init__(self):
        object.__setattr__(self, "features", _check_features(self.features))

    def __repr__(self):
        return "linear()" if self.features is None else f"linear(features={list(self.features)})"


def rbf(sigma, features=None):
    """Gaussian (RBF) kernel spec.

    Parameters
    ----------
    sigma : float
        Width, finite and > 0. The kernel is ``exp(-|x - z|^2 / (2 sigma^2))``
        (``gamma = 1 / (2 sigma^2)`` in scikit-learn's notation).
    features : sequence of int, sequence of str, slice or None, default=None
        The columns the kernel looks at: distinct non-negative indices,
        column names of the DataFrame the estimator is fitted on (resolved
        against its ``feature_names_in_``), or a slice of positions; None
        means all features.

    Returns
    -------
    RBF

    Raises
    ------
    TypeError, ValueError
        If ``sigma`` or ``features`` is invalid (the message names which).

    Examples
    --------
    >>> rbf(2.0)
    rbf(sigma=2.0)
    >>> rbf(0.5, features=[3])
    rbf(sigma=0.5, features=[3])
    """
    return RBF(sigma, features)


def poly(degree, features=None):
    """Inhomogeneous polynomial kernel spec ``(x . z + 1)^degree``.

    Parameters
    ----------
    degree : int
        Positive integer degree.
    features : sequence of int, sequence of str, slice or None, default=None
        Column indices, column names or a slice, as for :func:`rbf`; None
        means all features.

    Returns
    -------
    Poly

    Examples
    --------
    >>> poly(3)
    poly(degree=3)
    """
    return Poly(degree, features)


def linear(features=None):
    """Linear kernel spec ``x . z``.

    Parameters
    ----------
    features : sequence of int, sequence of str, slice or None, default=None
        Column indices, column names or a slice, as for :func:`rbf`; None
        means all features.

    Returns
    -------
    Linear

    Examples
    --------
    >>> linear(features=[0, 2])
    linear(features=[0, 2])
    """
    return Linear(features)


# protocol -> (Gaussian widths, polynomial degrees, single-feature kernels?)
GRID_PROTOCOLS = {
    "level2008": (tuple(2.0**e for e in range(-3, 7)), (1, 2, 3), True),
    "mkboost2013": (tuple(2.0**e for e in range(-6, 8)), (1, 2, 3), False),
}


def grid(n_features, protocol="level2008", *, exclude=()):
    """The kernel grids of the reference papers.

    Parameters
    ----------
    n_features : int
        Number of input features ``d`` (>= 1).
    protocol : {"level2008", "mkboost2013"}, default="level2008"
        ``"level2008"`` (Xu et al. 2008, also SimpleMKL's protocol): Gaussian
        widths ``2^-3, ..., 2^6`` (10) and polynomial degrees 1, 2, 3, on all
        features and on each single feature: ``13 (d + 1)`` kernels.
        ``"mkboost2013"`` (Xia and Hoi 2013): widths ``2^-6, ..., 2^7`` (14)
        and degrees 1, 2, 3 on all features: 17 kernels.
    exclude : sequence of int, default=()
        Features that get no single-feature kernels of their own (they still
        enter the all-feature kernels). Only meaningful for ``"level2008"``.

    Returns
    -------
    tuple of specs
        Ordered by feature set (all features first, then feature 0, 1, ...),
        and within a set: the widths in increasing order, then the degrees.

    Notes
    -----
    A constant feature (for example feature 2 of ionosphere) is all zeros
    after standardisation, so its single-feature kernels are constant
    matrices (all ones): valid PSD kernels that carry no information. They
    are kept by default so that ``m = 13 (d + 1)`` holds for every data set;
    pass their indices in ``exclude`` to drop them (ionosphere with
    ``exclude=[1]`` gives the 442 kernels of the level-method paper).
    Nothing here or in :class:`KernelBank` produces NaN for them.

    Examples
    --------
    >>> len(grid(34))
    455
    >>> len(grid(34, exclude=[1]))
    442
    >>> len(grid(34, "mkboost2013"))
    17
    """
    d = check_int(n_features, "n_features", low=1)
    check_choice(protocol, "protocol", tuple(GRID_PROTOCOLS))
    if exclude is None:
        exclude = ()
    excluded = set(_check_features(exclude, "exclude") or ()) if len(exclude) else set()
    bad = sorted(f for f in excluded if f >= d)
    if bad:
        raise ValueError(f"exclude holds feature indices >= n_features={d}: {bad}")
    widths, degrees, single = GRID_PROTOCOLS[protocol]
    if excluded and not single:
        raise ValueError(
            f"exclude has no effect with protocol={protocol!r} (no single-feature kernels)"
        )
    feature_sets = [None]
    if single:
        feature_sets += [(f,) for f in range(d) if f not in excluded]
    specs = []
    for fs in feature_sets:
        specs.extend(RBF(s, fs) for s in widths)
        specs.extend(Poly(p, fs) for p in degrees)
    return tuple(specs)


def _rbf_trusted(sigma, features):
    """An :class:`RBF` from already-validated values (no per-object checks)."""
    spec = object.__new__(RBF)
    object.__setattr__(spec, "sigma", sigma)
    object.__setattr__(spec, "features", features)
    return spec


def random_rbf(n_kernels, n_features, subset_size=(3, 8), log2_width=(-3.0, 6.0), seed=None):
    """Gaussian kernels on random feature subsets with log-uniform widths.

    The many-kernel banks of the large-scale MKL literature (SMO-MKL,
    SPG-GMKL): kernel ``k`` looks at a subset of ``s_k`` distinct features,
    ``s_k`` uniform in ``subset_size``, with width ``2**u_k``, ``u_k``
    uniform in ``log2_width``.

    Parameters
    ----------
    n_kernels : int
        Number of kernels (>= 1); a million is fine.
    n_features : int
        Number of input features ``d`` (>= the largest subset size).
    subset_size : (int, int), default=(3, 8)
        Smallest and largest subset size, inclusive.
    log2_width : (float, float), default=(-3, 6)
        Range of ``log2(sigma)``.
    seed : int or numpy.random.Generator, optional
        Seed of the draw; the same seed gives the same bank.

    Returns
    -------
    tuple of RBF
        Features of each subset in increasing order.

    Examples
    --------
    >>> specs = random_rbf(1000, 60, seed=0)
    >>> len(specs), all(3 <= len(s.features) <= 8 for s in specs)
    (1000, True)
    >>> specs == random_rbf(1000, 60, seed=0)  # the same seed, the same bank
    True
    """
    m = check_int(n_kernels, "n_kernels", low=1)
    d = check_int(n_features, "n_features", low=1)
    lo, hi = (check_int(v, "subset_size", low=1) for v in subset_size)
    if lo > hi or hi > d:
        raise ValueError(
            f"subset_size must be (lo, hi) with 1 <= lo <= hi <= n_features={d}, "
            f"got {tuple(subset_size)}"
        )
    a, b = (check_real(v, "log2_width") for v in log2_width)
    if a > b:
        raise ValueError(
            f"log2_width must be (low, high) with low <= high, got {tuple(log2_width)}"
        )
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    sizes = rng.integers(lo, hi + 1, size=m)
    sigmas = (2.0 ** rng.uniform(a, b, size=m)).tolist()
    feats = []
    # Draw in blocks: argsort of a random row is a uniform permutation of the
    # features, and its first s_k entries a uniform subset of size s_k.
    block = max(1, 2**20 // d)
    for b0 in range(0, m, block):
        perm = np.argsort(rng.random((min(block, m - b0), d)), axis=1)[:, :hi].tolist()
        for row, size in zip(perm, sizes[b0 : b0 + len(perm)].tolist(), strict=True):
            feats.append(tuple(sorted(row[:size])))
    return tuple(_rbf_trusted(sg, f) for sg, f in zip(sigmas, feats, strict=True))
