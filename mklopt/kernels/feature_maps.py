r"""Feature-map storage: kernels ``K_k = Phi_k Phi_k'`` held as their features.

A kernel whose feature map is finite (a linear kernel on a feature subset, a
polynomial kernel on a few features) or is approximated by a finite one
(Nyström, random Fourier features) is stored as the ``n x r_k`` matrix
``Phi_k`` instead of its ``n x n`` matrix. All the verbs of a storage (see
:mod:`mklopt.kernels.storage`) are then BLAS products on the stacked map
``Phi = [Phi_1, ..., Phi_m]`` (``n x R``, ``R = sum_k r_k``):

* ``rows(w, idx) = (Phi[idx] o omega) Phi'`` with ``omega`` repeating ``w_k``
  over the ``r_k`` columns of kernel ``k`` (kernels with ``w_k = 0`` are
  left out of the product), ``O(len(idx) n R_active)``;
* ``combine(w) = (Phi o sqrt(omega)) (Phi o sqrt(omega))'``, one symmetric
  rank-``R`` update;
* ``q_k = v_S' K_k[S, S] v_S = ||Phi_k[S]' v_S||^2``: one matrix-vector
  product, ``O(|S| R)`` for all kernels together;
* ``diag(w)`` from the squared row norms of every ``Phi_k``;
* ``blocks`` from ``Phi_k[rows] Phi_k[cols]'``.

**How each kernel is mapped.** ``storage=FeatureMap(...)`` (or one of
:func:`nystroem`, :func:`random_fourier`, or ``"feature_map"``) decides:

* ``linear(F)``: always exact, ``Phi_k = X_F`` (``|F|`` columns);
* ``poly(d, F)``: exact by its monomials (``C(|F| + d, d)`` columns) with
  ``approximation=None``, and with an approximation whenever that many
  columns are at most ``n_components``; otherwise Nyström;
* ``rbf(sigma, F)``: no finite map, so refused by ``approximation=None``;
  Nyström under ``"nystroem"``, random Fourier features under ``"fourier"``.

The exact polynomial map uses ``(x.z + 1)^d = sum_{|a| = d} d!/prod(a_j!)
prod_j (x_j z_j)^{a_j}`` over ``x`` extended by a constant 1, so
``phi_a(x) = sqrt(d!/prod(a_j!)) prod_j x_j^{a_j}``: exact, and never
larger than what an approximation would have stored. Random Fourier
features exist only for shift-invariant kernels, so a polynomial kernel too
large to map exactly falls back to Nyström under ``"fourier"`` as well.

Every kernel is normalised to unit trace *of its map* on the training set
(``scales[k] = ||Phi_k||_F^2``), so an approximate kernel is normalised like
the exact ones are and the same constants serve prediction.

**Errors of the approximations.** Write ``E(w) = Ktilde(w) - K(w)`` for
the approximate minus the exact combined kernel, and ``v = alpha o y``.
For the SVM oracle ``J(w) = max_alpha 1'alpha - v'K(w)v / 2`` over the
same feasible set,
evaluating each problem's objective at the other's maximiser gives the
two-sided bracket

.. math:: -\tfrac12 v^{*\prime} E(w)\, v^* \;\le\; \tilde J(w) - J(w)
          \;\le\; -\tfrac12 \tilde v' E(w)\, \tilde v,

(``v*``, ``vtilde``: the exact and approximate solutions), hence
``|Jtilde(w) - J(w)| <= ||E(w)||_2 max(||v*||^2, ||vtilde||^2) / 2``, and
since ``||v||^2 <= C 1'alpha <= 2 C J`` the relative error of ``J`` is at
most about ``C ||E(w)||_2`` (Cortes, Mohri and Talwalkar 2010 bound the
learned hypothesis in the same terms). What each approximation guarantees
about ``E``:

* **Nyström** (unnormalised): ``K_k - Ktilde_k`` is positive semi-definite
  (``Ktilde_k`` is the projection of the feature vectors onto the span of
  the landmarks'), so the bracket makes ``Jtilde(w) >= J(w)``, the entries
  err by at most ``max_i (K_ii - Ktilde_ii)`` (a computable certificate, as
  ``Ktilde_ii`` is a squared row norm), and with every training point a
  landmark the approximation is exact up to the eigenvalue cut-off:
  ``max |K - Ktilde| <= rcond lambda_max(K_ZZ)``.
* **Random Fourier features** (Gaussian kernels): each entry is a mean of
  ``D = n_components / 2`` independent terms ``cos(omega'(x - z))`` in
  ``[-1, 1]`` with mean ``K(x, z)``; the diagonal is exactly 1, so the
  approximate trace is exactly ``n``, and by Hoeffding's inequality and a
  union bound over the ``n(n-1)/2`` pairs, with probability ``1 - delta``,
  ``max_ij |Ktilde_ij - K_ij| <= sqrt(2 log(n(n-1)/delta) / D)`` (unnormalised;
  divide by ``n`` for the normalised kernels).

``benchmarks/bench_feature_maps.py`` (retired; at commit ``89ee8cc``) measured the
resulting errors in ``J`` and in test accuracy on the bundled data sets.

References
----------
C. K. I. Williams, M. Seeger. Using the Nyström method to speed up kernel
machines. NIPS 13, 2001.

A. Rahimi, B. Recht. Random features for large-scale kernel machines.
NIPS 20, 2007.

D. J. Sutherland, J. Schneider. On the error of random Fourier features.
UAI 2015 (the paired ``cos``/``sin`` features used here have the lower
variance for Gaussian kernels).

P. Drineas, M. W. Mahoney. On the Nyström method for approximating a Gram
matrix for improved kernel-based learning. JMLR 6, 2005.

C. Cortes, M. Mohri, A. Talwalkar. On the impact of kernel approximation on
learning accuracy. AISTATS 2010.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._memory import check_memory, fmt_bytes, memory_limit
from .._validation import (
    check_choice,
    check_int,
    check_matrix,
    check_real,
    check_vector,
    check_weights,
)
from ..persist._protocol import Persistent
from .families import family_of
from .functions import KernelFunctions, _check_indices, _check_specs, _readonly
from .specs import RBF

__all__ = [
    "APPROXIMATIONS",
    "MAP_KINDS",
    "FeatureMap",
    "nystroem",
    "random_fourier",
    "FeatureMapFunctions",
    "FeatureMapStorage",
]

#: Values of :attr:`FeatureMap.approximation`.
APPROXIMATIONS = (None, "nystroem", "fourier")
#: How a single kernel is mapped (:attr:`FeatureMapFunctions.kinds`).
MAP_KINDS = ("exact", "nystroem", "fourier")

# Temporaries (kernel blocks against landmarks, monomials, gathered
# columns) are built in pieces of about this many bytes.
_CHUNK_BYTES = 32 * 2**20
# The storage keeps a gathered copy of the active kernels' features when
# they are at most this fraction of all features (else it multiplies the
# inactive ones by zero): memory is budgeted for it.
_ACTIVE_FRACTION = 0.5


# --------------------------------------------------------------------------
# options
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class FeatureMap(Persistent):
    """How a feature-map storage maps each kernel; pass it as ``storage=``.

    A small immutable value (hashable, comparable, copied by
    ``sklearn.base.clone``) that :meth:`mklopt.KernelBank.from_specs` and the
    estimators' ``storage`` parameter accept. Build it with
    :func:`nystroem` or :func:`random_fourier`; ``FeatureMap()`` (also
    spelled ``storage="feature_map"``) maps linear and polynomial kernels
    exactly and refuses Gaussian ones.

    Parameters
    ----------
    approximation : {None, "nystroem", "fourier"}, default=None
        How kernels without a small exact map (Gaussian kernels, polynomial
        kernels of many features) are approximated; see the module notes.
    n_components : int, default=100
        Columns per approximated kernel: landmarks for Nyström (at most
        ``n_samples``; fewer after the eigenvalue cut-off), features for
        random Fourier features (an odd value is rounded up, as they come
        in ``cos``/``sin`` pairs). A polynomial kernel whose exact map has
        at most this many columns is mapped exactly.
    random_state : int or None, default=0
        Seed of the landmark choice and of the Fourier frequencies. The
        default makes fits reproducible; None draws fresh entropy (the draw
        is kept with the fitted kernels, so predictions stay consistent).
    rcond : float, default=1e-10
        Nyström eigenvalue cut-off, in (0, 1): eigenvalues of the
        landmark kernel below ``rcond`` times its largest are dropped (see
        :class:`FeatureMapFunctions`).

    Examples
    --------
    >>> from mklopt.kernels import FeatureMap, nystroem
    >>> nystroem(50)
    nystroem(n_components=50, random_state=0)
    >>> nystroem(50) == FeatureMap("nystroem", 50)
    True
    """

    approximation: str | None = None
    n_components: int = 100
    random_state: int | None = 0
    rcond: float = 1e-10

    def __post_init__(self):
        check_choice(self.approximation, "approximation", APPROXIMATIONS)
        object.__setattr__(
            self, "n_components", check_int(self.n_components, "n_components", low=1)
        )
        if self.random_state is not None:
            rs = check_int(self.random_state, "random_state", low=0)
            object.__setattr__(self, "random_state", rs)
        rcond = check_real(self.rcond, "rcond", low=0.0, high=1.0, strict_low=True,
                           strict_high=True)
        object.__setattr__(self, "rcond", rcond)

    #: The storage name, as for the string storages.
    name = "feature_map"
    #: Saved models keep a FeatureMap ``storage`` as ``{"feature_map": fields}``.
    _persist_kind = "feature_map"

    def __repr__(self):
        extra = "" if self.rcond == 1e-10 else f", rcond={self.rcond!r}"
        args = f"n_components={self.n_components!r}, random_state={self.random_state!r}{extra}"
        if self.approximation == "nystroem":
            return f"nystroem({args})"
        if self.approximation == "fourier":
            return f"random_fourier({args})"
        if self == FeatureMap():
            return "FeatureMap()"
        return f"FeatureMap(approximation=None, {args})"


def nystroem(n_components=100, random_state=0, rcond=1e-10):
    """Feature maps with Gaussian (and large polynomial) kernels by Nyström.

    Every approximated kernel ``k`` is ``Ktilde_k = C_k W_k^+ C_k'`` with
    ``C_k = kappa_k(X, Z)`` against ``r = min(n_components, n_samples)``
    landmark points ``Z`` (training points drawn uniformly without
    replacement from ``random_state``, shared by all kernels) and ``W_k =
    kappa_k(Z, Z)`` (Williams and Seeger 2001).

    Parameters
    ----------
    n_components : int, default=100
        Landmarks (columns per kernel before the cut-off).
    random_state : int or None, default=0
        Seed of the landmark choice.
    rcond : float, default=1e-10
        Relative eigenvalue cut-off of ``W_k`` (see :class:`FeatureMapFunctions`).

    Returns
    -------
    FeatureMap

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import KernelBank, nystroem, rbf
    >>> X = np.random.default_rng(0).standard_normal((40, 3))
    >>> bank = KernelBank.from_specs(X, [rbf(1.0), rbf(4.0)], storage=nystroem(40))
    >>> exact = KernelBank.from_specs(X, [rbf(1.0), rbf(4.0)])
    >>> bool(np.allclose(bank.combine([0.5, 0.5]), exact.combine([0.5, 0.5]), atol=1e-8))
    True
    """
    return FeatureMap("nystroem", n_components, random_state, rcond)


def random_fourier(n_components=100, random_state=0, rcond=1e-10):
    """Feature maps with Gaussian kernels by random Fourier features.

    Kernel ``exp(-|x - z|^2 / (2 sigma^2))`` on features ``F`` becomes
    ``phi(x) = [cos(W'x_F), sin(W'x_F)] / sqrt(D)`` with ``D =
    ceil(n_components / 2)`` frequencies ``W ~ N(0, I / sigma^2)`` (Rahimi
    and Recht 2007), so ``phi(x).phi(z)`` is the mean of ``D`` samples of
    ``cos(omega'(x - z))``, an unbiased estimate of the kernel with an exact
    unit diagonal.

    Parameters
    ----------
    n_components : int, default=100
        Columns per Gaussian kernel (twice the number of frequencies).
    random_state : int or None, default=0
        Seed of the frequencies.
    rcond : float, default=1e-10
        Eigenvalue cut-off of the Nyström map used for polynomial kernels
        too large to map exactly (Fourier features need shift invariance).

    Returns
    -------
    FeatureMap
    """
    return FeatureMap("fourier", n_components, random_state, rcond)


# --------------------------------------------------------------------------
# planning and the exact polynomial map
# --------------------------------------------------------------------------
def _n_used(spec, n_features):
    return n_features if spec.features is None else len(spec.features)


def _features(spec):
    return slice(None) if spec.features is None else list(spec.features)


def _poly_dim(p, degree):
    return math.comb(p + degree, degree)


def _plan_kinds(specs, n_features, n_samples, options):
    """Map kind and column budget of every spec (ValueError for an unmappable spec)."""
    kinds, budget = [], []
    nc = options.n_components
    for k, s in enumerate(specs):
        p = _n_used(s, n_features)
        fam = family_of(s)
        rank = fam.feature_map_rank(p, **fam.values(s))
        if rank is not None and (options.approximation is None or rank <= max(nc, p)):
            # An exact map, unless an approximation was asked for and is
            # smaller; a map no wider than the features used (linear) is
            # always taken.
            kinds.append("exact")
            budget.append(int(rank))
        elif options.approximation is None:
            raise ValueError(
                f"storage='feature_map' maps only kernels with a finite feature map exactly "
                f"(linear, polynomial, or a family with feature_map), but "
                f"specs[{k}] = {s!r} has no finite feature map; pass storage=nystroem("
                "n_components=...) or storage=random_fourier(n_components=...) to approximate "
                "it, or storage='on_the_fly' to compute it exactly"
            )
        elif options.approximation == "fourier" and type(s) is RBF:
            kinds.append("fourier")
            budget.append(2 * ((nc + 1) // 2))
        else:
            kinds.append("nystroem")
            budget.append(min(nc, n_samples))
    return kinds, budget


def _segment_rows(offsets, ks):
    """Concatenated ``range(offsets[k], offsets[k + 1])`` for ``k`` in ``ks`` (int64)."""
    lengths = offsets[ks + 1] - offsets[ks]
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.repeat(offsets[ks] - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return (starts + np.arange(total)).astype(np.int64)


def _seg_offsets(ranks):
    off = np.zeros(ranks.size + 1, dtype=np.int64)
    np.cumsum(ranks, out=off[1:])
    return off


# --------------------------------------------------------------------------
# kernel functions
# --------------------------------------------------------------------------
class FeatureMapFunctions:
    """Kernel functions given by feature maps: ``K_k(a, b) = phi_k(a) . phi_k(b) / scales[k]``.

    The feature-map counterpart of :class:`~mklopt.kernels.KernelFunctions`,
    with the same interface (``cross``, ``combine_cross``, ``matrices``,
    ``diag``, ``take``, ``subset``; plus ``transform`` and ``expand``), so
    a :class:`~mklopt.kernels.KernelExpansion` and a saved model predict
    with exactly the kernels they were trained on: the landmarks, eigenvector maps and Fourier
    frequencies are part of the functions, never redrawn.

    Parameters
    ----------
    specs : sequence of specs
        The kernels approximated (or mapped exactly).
    scales : array-like of shape (n_kernels,)
        Positive normalisation constants (traces of the maps' kernels on
        the training set for ``normalize="trace"``).
    X : array-like of shape (n_samples, n_features)
        The points the kernels are evaluated against.
    kinds : sequence of {"exact", "nystroem", "fourier"}
        How each kernel is mapped: ``"exact"`` for linear and polynomial
        specs (see the module notes), ``"nystroem"`` for any spec,
        ``"fourier"`` for Gaussian specs.
    maps : sequence of ndarray or None
        Per kernel: None for ``"exact"``; for ``"nystroem"`` the matrix
        ``M_k`` of shape ``(n_landmarks, r_k)`` with ``phi_k(x) =
        kappa_k(x, landmarks) M_k``; for ``"fourier"`` the frequencies
        ``W_k`` of shape ``(n_used_features, D_k)`` with ``phi_k(x) =
        [cos(x_F W_k), sin(x_F W_k)] / sqrt(D_k)``.
    landmarks : array-like of shape (n_landmarks, n_features), optional
        The Nyström landmark points (required iff a kernel is ``"nystroem"``).

    Attributes
    ----------
    specs, scales, X, kinds, maps, landmarks
        As given (arrays read-only).
    ranks : ndarray of shape (n_kernels,), int64
        Columns ``r_k`` of each kernel's map.
    offsets : ndarray of shape (n_kernels + 1,), int64
        Kernel ``k`` owns columns ``offsets[k]:offsets[k + 1]`` of :meth:`transform`.
    n_kernels, n_samples, n_features, n_components : int
        ``n_components`` is ``R = sum_k r_k``.

    Notes
    -----
    *Nyström cut-off.* With ``W_k = U diag(lambda) U'`` (ascending ``eigh``),
    the map is ``M_k = U_r diag(lambda_r)^(-1/2)`` over the eigenvalues
    ``lambda_j > rcond * lambda_max``: ``Ktilde_k = C_k (W_k)_r^+ C_k'``
    with a *truncated* pseudo-inverse. Truncation rather than a floor on
    ``lambda`` (which inflates noise directions by ``1 / sqrt(floor)``) or a
    ridge (which biases every entry) because ``eigh`` is backward stable
    with an error of about ``r eps lambda_max``: directions below that are
    rounding noise, repeated or collinear landmarks (duplicate rows, ordinal
    features, low-degree polynomials) make ``W_k`` exactly singular, and a
    truncated map keeps ``K - Ktilde`` positive semi-definite, so the
    error stays one-sided. ``rcond = 1e-10`` sits three orders above the
    noise for up to ``10^4`` landmarks and costs at most ``1e-10
    lambda_max`` per entry when every training point is a landmark.

    Examples
    --------
    >>> import numpy as np
    >>> from mklopt.kernels import FeatureMapFunctions, linear, rbf, random_fourier
    >>> X = np.random.default_rng(0).standard_normal((8, 3))
    >>> fn = FeatureMapFunctions.from_data(X, [linear([0, 2]), rbf(2.0)], random_fourier(64))
    >>> fn.kinds, fn.ranks.tolist()
    (('exact', 'fourier'), [2, 64])
    >>> bool(np.allclose(np.trace(fn.matrices(), axis1=1, axis2=2), 1.0))
    True
    >>> fn.take([1, 4]).combine_cross(X[:3], [0.5, 0.5]).shape
    (3, 2)
    """

    def __init__(self, specs, scales, X, kinds, maps, landmarks=None):
        X = check_matrix(X, "X")
        self.specs = _check_specs(specs, X.shape[1])
        m = self.n_kernels = len(self.specs)
        scales = check_vector(scales, "scales", size=m)
        if np.any(scales <= 0.0):
            raise ValueError("scales must be positive (one normalisation constant per kernel)")
        self.scales = _readonly(scales)
        self.X = _readonly(X)
        self.n_samples, self.n_features = (int(s) for s in self.X.shape)
        kinds = tuple(kinds)
        if len(kinds) != m:
            raise ValueError(f"kinds has {len(kinds)} entries for {m} kernels")
        maps = tuple(maps)
        if len(maps) != m:
            raise ValueError(f"maps has {len(maps)} entries for {m} kernels")
        if "nystroem" in kinds:
            if landmarks is None:
                raise ValueError("landmarks are required by the Nyström kernels")
            landmarks = check_matrix(landmarks, "landmarks")
            if landmarks.shape[1] != self.n_features:
                raise ValueError(
                    f"landmarks have {landmarks.shape[1]} features, X has {self.n_features}"
                )
            self.landmarks = _readonly(landmarks)
        else:
            self.landmarks = None
        ranks = np.empty(m, dtype=np.int64)
        checked = []
        for k, (s, kind, M) in enumerate(zip(self.specs, kinds, maps)):
            check_choice(kind, f"kinds[{k}]", MAP_KINDS)
            p = _n_used(s, self.n_features)
            if kind == "exact":
                fam = family_of(s)
                rank = fam.feature_map_rank(p, **fam.values(s))
                if rank is None:
                    raise ValueError(f"kinds[{k}] is 'exact' but specs[{k}] = {s!r} has no "
                                     "finite feature map")
                if M is not None:
                    raise ValueError(f"maps[{k}] must be None for an exact map")
                ranks[k] = rank
                checked.append(None)
                continue
            if kind == "fourier" and type(s) is not RBF:
                raise ValueError(f"kinds[{k}] is 'fourier' but specs[{k}] = {s!r} is not Gaussian")
            M = check_matrix(M, f"maps[{k}]")
            rows = self.landmarks.shape[0] if kind == "nystroem" else p
            if M.shape[0] != rows:
                raise ValueError(f"maps[{k}] has {M.shape[0]} rows, expected {rows} ({kind})")
            ranks[k] = M.shape[1] * (2 if kind == "fourier" else 1)
            checked.append(_readonly(M))
        self.kinds, self.maps, self.ranks = kinds, tuple(checked), _readonly(ranks)
        self.offsets = _readonly(_seg_offsets(ranks))
        self.n_components = int(self.offsets[-1])
        self._nys = None
        self._own = None

    # ------------------------------------------------------------ building
    @classmethod
    def from_data(cls, X, specs, options=None, normalize="trace", max_memory=None):
        """Fit the maps on training points, normalised there.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training points.
        specs : sequence of specs
        options : FeatureMap, optional
            Default ``FeatureMap()`` (exact maps only).
        normalize : {"trace", None}, default="trace"
            ``"trace"``: ``scales[k] = ||Phi_k||_F^2``, the trace of the
            mapped kernel on ``X`` (1 for an all-zero map).
        max_memory : float or None, default=None
            Byte limit for the stored map (see :class:`FeatureMapStorage`).

        Returns
        -------
        FeatureMapFunctions
            With the normalised map of ``X`` computed (``transform()``).

        Raises
        ------
        ValueError
            For a spec the options cannot map (a Gaussian kernel without an
            approximation).
        MemoryError
            Before allocating, when the map does not fit; the message says
            which ``n_components`` would.
        """
        X = check_matrix(X, "X")
        n, d = X.shape
        specs = _check_specs(specs, d)
        if options is None:
            options = FeatureMap()
        if not isinstance(options, FeatureMap):
            raise TypeError(f"options must be a FeatureMap, got {type(options).__name__}")
        check_choice(normalize, "normalize", ("trace", "diagonal", None))
        kinds, budget = _plan_kinds(specs, d, n, options)
        m = len(specs)
        _check_map_memory(n, m, kinds, budget, options, max_memory)
        rng = np.random.default_rng(options.random_state)
        nys = [k for k in range(m) if kinds[k] == "nystroem"]
        landmarks = None
        maps = [None] * m
        if nys:
            r0 = min(options.n_components, n)
            idx = np.sort(rng.choice(n, size=r0, replace=False))
            landmarks = X[idx]
            for k, M in zip(nys, _nystroem_maps(landmarks, [specs[k] for k in nys],
                                                options.rcond), strict=True):
                maps[k] = M
        for k in range(m):
            if kinds[k] == "fourier":
                D = budget[k] // 2
                p = _n_used(specs[k], d)
                maps[k] = rng.standard_normal((p, D)) / specs[k].sigma
        raw = cls(specs, np.ones(m), X, kinds, maps, landmarks)
        phi = raw._map_T(X, np.arange(m, dtype=np.int64))
        scales = np.ones(m)
        if normalize is not None:
            tr = _segment_sums(phi, raw.offsets)
            if normalize == "diagonal":
                tr = tr / X.shape[0]
            scales = np.where(tr > 0.0, tr, 1.0)
            inv = np.repeat(1.0 / np.sqrt(scales), raw.ranks)
            phi *= inv[:, None]
        fn = cls(specs, scales, X, kinds, maps, landmarks)
        phi.flags.writeable = False
        fn._own = phi
        return fn

    # ------------------------------------------------------------ internals
    @property
    def _nystroem_functions(self):
        """Raw kernel functions of the Nyström kernels against the landmarks, and their slots."""
        if self._nys is None:
            ks = [k for k in range(self.n_kernels) if self.kinds[k] == "nystroem"]
            slot = np.full(self.n_kernels, -1, dtype=np.int64)
            slot[ks] = np.arange(len(ks))
            aux = KernelFunctions([self.specs[k] for k in ks], np.ones(len(ks)), self.landmarks)
            self._nys = (aux, slot)
        return self._nys

    def _check_new(self, X_new, name="X_new"):
        X_new = check_matrix(X_new, name)
        if X_new.shape[1] != self.n_features:
            raise ValueError(
                f"{name} has {X_new.shape[1]} features but the kernels were built on "
                f"{self.n_features}"
            )
        return X_new

    def _map_T(self, X_new, ks, out=None):
        """Normalised maps of kernels ``ks`` (distinct int64) at ``X_new``, transposed.

        Returns an array of shape ``(sum r_ks, n_new)``, C-contiguous: rows
        ``[sum r_{ks[:j]}, ...)`` hold ``phi_{ks[j]}(X_new)' / sqrt(scales)``.
        """
        n_new = X_new.shape[0]
        off = _seg_offsets(self.ranks[ks])
        if out is None:
            out = np.empty((int(off[-1]), n_new))
        nys = []
        for j, k in enumerate(ks.tolist()):
            s, kind, a, b = self.specs[k], self.kinds[k], int(off[j]), int(off[j + 1])
            if kind == "nystroem":
                nys.append((j, k))
                continue
            Xf = X_new[:, _features(s)]
            if kind == "fourier":
                D = self.maps[k].shape[1]
                t = np.dot(self.maps[k].T, Xf.T)
                np.cos(t, out=out[a : a + D])
                np.sin(t, out=out[a + D : b])
                out[a:b] *= 1.0 / math.sqrt(D)
            else:
                fam = family_of(s)
                phi = np.asarray(fam.feature_map(Xf, **fam.values(s)), dtype=np.float64)
                if phi.shape != (X_new.shape[0], b - a):
                    raise ValueError(
                        f"kernel family {fam.name!r}: feature_map() returned shape {phi.shape}, "
                        f"expected {(X_new.shape[0], b - a)}"
                    )
                out[a:b] = phi.T
        if nys:
            aux, slot = self._nystroem_functions
            r0 = self.landmarks.shape[0]
            # Rows of X_new in blocks, kernels in chunks (sorted by feature
            # group so a chunk shares its distance evaluation).
            per_kernel = max(1, _CHUNK_BYTES // (8 * r0))
            rows_per = min(n_new, per_kernel) if n_new else 1
            grp = aux.plan.group_of
            nys.sort(key=lambda jk: grp[slot[jk[1]]])
            chunk = max(1, per_kernel // max(rows_per, 1))
            for i0 in range(0, n_new, rows_per):
                Xb = X_new[i0 : i0 + rows_per]
                for c0 in range(0, len(nys), chunk):
                    part = nys[c0 : c0 + chunk]
                    C = aux.cross(Xb, [slot[k] for _, k in part])
                    for t, (j, k) in enumerate(part):
                        a, b = int(off[j]), int(off[j + 1])
                        out[a:b, i0 : i0 + Xb.shape[0]] = np.dot(self.maps[k].T, C[t].T)
        for j, k in enumerate(ks.tolist()):
            if self.scales[k] != 1.0:
                out[int(off[j]) : int(off[j + 1])] *= 1.0 / math.sqrt(self.scales[k])
        return out

    def _own_map(self):
        """The normalised map of ``X`` (all kernels, transposed), computed once."""
        if self._own is None:
            phi = self._map_T(self.X, np.arange(self.n_kernels, dtype=np.int64))
            phi.flags.writeable = False
            self._own = phi
        return self._own

    def _kernels(self, kernels):
        if kernels is None:
            return np.arange(self.n_kernels, dtype=np.int64)
        return _check_indices(kernels, "kernels", self.n_kernels)

    # --------------------------------------------------------- evaluation
    def transform(self, X_new=None, kernels=None):
        """The normalised feature maps, ``Phi = [phi_k(X_new) / sqrt(scales[k])]_k``.

        ``sum_k w_k K_k(a, b)`` is ``(Phi(a) o omega) . Phi(b)`` with
        ``omega`` repeating ``w_k`` over kernel ``k``'s columns
        (``offsets``), so this is also a linear model's input.

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features), optional
            Default ``X``.
        kernels : array-like of int, optional
            Distinct kernel indices (default all), in the order wanted.

        Returns
        -------
        ndarray of shape (n_new, sum of ranks[kernels]), float64
        """
        ks = self._kernels(kernels)
        if np.unique(ks).size != ks.size:
            raise ValueError("kernels must not repeat a kernel")
        if X_new is None:
            return np.ascontiguousarray(self._own_map()[_segment_rows(self.offsets, ks)].T)
        return np.ascontiguousarray(self._map_T(self._check_new(X_new), ks).T)

    def cross(self, X_new, kernels=None, max_memory=None):
        """Single kernels between new points and ``X``.

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)
        kernels : array-like of int, optional
            Which kernels (default: all), in the order wanted (repeats allowed).
        max_memory : float or None, default=None
            Byte limit for the result (default: 80% of the available memory).

        Returns
        -------
        ndarray of shape (len(kernels), n_new, n_samples), float64
        """
        X_new = self._check_new(X_new)
        ks = self._kernels(kernels)
        n_new, n = X_new.shape[0], self.n_samples
        check_memory(
            ks.size * n_new * n * 8, max_memory,
            f"Cross kernels ({ks.size} kernels, {n_new} x {n})",
            "Ask for fewer kernels or fewer points at a time, or use combine_cross.",
        )
        uniq, inv = np.unique(ks, return_inverse=True)
        new = self._map_T(X_new, uniq)
        own = self._own_map()
        off = _seg_offsets(self.ranks[uniq])
        out = np.empty((uniq.size, n_new, n))
        for j, k in enumerate(uniq.tolist()):
            A = new[off[j] : off[j + 1]]
            B = own[self.offsets[k] : self.offsets[k + 1]]
            np.dot(A.T, B, out=out[j])
        return out if np.array_equal(uniq, ks) else out[inv.ravel()]

    def combine_cross(self, X_new, w, columns=None):
        """Combined kernel ``sum_k w_k K_k(X_new, X[columns])`` (zero weights skipped).

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)
        w : array-like of shape (n_kernels,)
            Non-negative kernel weights, not all zero.
        columns : array-like of int, optional
            Indices into ``X`` (e.g. the support); default all.

        Returns
        -------
        ndarray of shape (n_new, len(columns)), float64
        """
        X_new = self._check_new(X_new)
        w = check_weights(w, self.n_kernels, "w")
        own = self._own_map()
        ks = np.flatnonzero(w).astype(np.int64)
        rows = _segment_rows(self.offsets, ks)
        B = own[rows]
        if columns is not None:
            cols = _check_indices(columns, "columns", self.n_samples, allow_empty=True)
            B = B[:, cols]
        A = self._map_T(X_new, ks)
        A *= np.repeat(np.asarray(w, dtype=np.float64)[ks], self.ranks[ks])[:, None]
        return np.dot(A.T, B)

    def expand(self, X_new, w, coef):
        """``sum_s coef_s sum_k w_k K_k(X_new, X_s)`` through the maps, in ``O(n_new R)``.

        A feature-map kernel expansion collapses to a linear function,
        ``f = Phi(X_new) (omega o Phi(X)' coef)``, so a prediction costs the
        same whatever the number of support points (what
        :class:`~mklopt.kernels.KernelExpansion` uses).

        Parameters
        ----------
        X_new : array-like of shape (n_new, n_features)
        w : array-like of shape (n_kernels,)
            Non-negative kernel weights, not all zero.
        coef : array-like of shape (n_samples,)
            One coefficient per point of ``X``.

        Returns
        -------
        ndarray of shape (n_new,), float64
        """
        X_new = self._check_new(X_new)
        w = np.asarray(check_weights(w, self.n_kernels, "w"), dtype=np.float64)
        coef = check_vector(coef, "coef", size=self.n_samples)
        ks = np.flatnonzero(w).astype(np.int64)
        rows = _segment_rows(self.offsets, ks)
        beta = self._own_map()[rows] @ coef
        beta *= np.repeat(w[ks], self.ranks[ks])
        return beta @ self._map_T(X_new, ks)

    def matrices(self, kernels=None, dtype=np.float64, out=None):
        """The normalised kernel matrices on ``X`` (exactly symmetric).

        Parameters
        ----------
        kernels : array-like of int, optional
            Distinct kernel indices (default: all), in the order wanted.
        dtype : {np.float64, np.float32}, default=np.float64
        out : ndarray of shape (len(kernels), n, n), optional

        Returns
        -------
        ndarray of shape (len(kernels), n_samples, n_samples)
        """
        ks = self._kernels(kernels)
        if np.unique(ks).size != ks.size:
            raise ValueError("kernels must not repeat a kernel")
        n = self.n_samples
        if out is None:
            out = np.empty((ks.size, n, n), dtype=dtype)
        own = self._own_map()
        for j, k in enumerate(ks.tolist()):
            B = own[self.offsets[k] : self.offsets[k + 1]]
            out[j] = np.dot(B.T, B)
        return out

    def diag(self, w):
        """Diagonal of the combined kernel ``sum_k w_k K_k(X, X)``, shape (n_samples,)."""
        w = np.asarray(check_weights(w, self.n_kernels, "w"), dtype=np.float64)
        own = self._own_map()
        ks = np.flatnonzero(w).astype(np.int64)
        rows = _segment_rows(self.offsets, ks)
        omega = np.repeat(w[ks], self.ranks[ks])
        return omega @ (own[rows] ** 2)

    # ---------------------------------------------------------- sub-sets
    def take(self, rows):
        """The same kernels (same maps) evaluated against ``X[rows]``."""
        idx = _check_indices(rows, "rows", self.n_samples)
        return FeatureMapFunctions(self.specs, self.scales, self.X[idx], self.kinds, self.maps,
                                   self.landmarks)

    def view(self, rows, normalize="trace"):
        """The same maps on the points ``X[rows]``, normalised on those points.

        What :meth:`mklopt.KernelBank.view` gives one binary problem of a
        multiclass fit: the maps (landmarks, random features) were fitted
        once on all points and are shared; the map of the rows is read
        from this one (no re-evaluation), and each kernel is scaled to unit
        trace (or mean diagonal) on the rows, as
        :meth:`from_data` on ``X[rows]`` with these maps would.

        Parameters
        ----------
        rows : ndarray of int64, ascending and distinct
        normalize : {"trace", "diagonal", None}, default="trace"

        Returns
        -------
        FeatureMapFunctions
        """
        idx = _check_indices(rows, "rows", self.n_samples)
        check_choice(normalize, "normalize", ("trace", "diagonal", None))
        # The raw map of the rows: undo this bank's own scaling.
        root = np.repeat(np.sqrt(self.scales), self.ranks)
        phi = self._own_map()[:, idx] * root[:, None]
        scales = np.ones(self.n_kernels)
        if normalize is not None:
            tr = _segment_sums(phi, self.offsets)
            if normalize == "diagonal":
                tr = tr / idx.size
            scales = np.where(tr > 0.0, tr, 1.0)
            phi *= np.repeat(1.0 / np.sqrt(scales), self.ranks)[:, None]
        fn = FeatureMapFunctions(self.specs, scales, self.X[idx], self.kinds, self.maps,
                                 self.landmarks)
        phi.flags.writeable = False
        fn._own = phi
        return fn

    def subset(self, kernels):
        """Only the given kernels (in that order), with their scales and maps."""
        idx = _check_indices(kernels, "kernels", self.n_kernels).tolist()
        kinds = [self.kinds[k] for k in idx]
        return FeatureMapFunctions(
            [self.specs[k] for k in idx], self.scales[idx], self.X, kinds,
            [self.maps[k] for k in idx], self.landmarks if "nystroem" in kinds else None,
        )

    @property
    def nbytes(self):
        """Bytes held (points, scales, landmarks, maps, and the computed map of ``X``)."""
        total = self.X.nbytes + self.scales.nbytes
        total += 0 if self.landmarks is None else self.landmarks.nbytes
        total += sum(0 if M is None else M.nbytes for M in self.maps)
        total += 0 if self._own is None else self._own.nbytes
        return int(total)

    def __repr__(self):
        counts = {k: self.kinds.count(k) for k in MAP_KINDS if k in self.kinds}
        kinds = ", ".join(f"{v} {k}" for k, v in counts.items())
        return (
            f"FeatureMapFunctions(n_kernels={self.n_kernels} ({kinds}), "
            f"n_samples={self.n_samples}, n_features={self.n_features}, "
            f"n_components={self.n_components})"
        )


def _nystroem_maps(Z, specs, rcond):
    """``M_k = U_r lambda_r^(-1/2)`` for each spec's landmark kernel (see FeatureMapFunctions)."""
    r0 = Z.shape[0]
    aux = KernelFunctions(specs, np.ones(len(specs)), Z)
    step = max(1, _CHUNK_BYTES // (8 * r0 * r0))
    maps = []
    for c0 in range(0, len(specs), step):
        W = aux.matrices(np.arange(c0, min(c0 + step, len(specs)), dtype=np.int64))
        for Wk in W:
            lam, U = np.linalg.eigh(Wk)
            top = float(lam[-1])
            keep = lam > rcond * top if top > 0.0 else np.zeros(r0, dtype=bool)
            if not keep.any():
                maps.append(np.zeros((r0, 1)))  # a zero kernel keeps one zero column
                continue
            # Descending order: the leading directions come first.
            keep = np.flatnonzero(keep)[::-1]
            maps.append(np.ascontiguousarray(U[:, keep] / np.sqrt(lam[keep])))
    return maps


def _segment_sums(phi, offsets):
    """``sum`` of squares over each kernel's rows of ``phi`` (R, n) -> (m,)."""
    sq = np.einsum("ij,ij->i", phi, phi)
    return np.add.reduceat(sq, offsets[:-1]) if sq.size else np.zeros(offsets.size - 1)


def _check_map_memory(n, m, kinds, budget, options, max_memory):
    """Refuse, before any work, a map that cannot fit (names an n_components that would)."""
    R = int(sum(budget))
    per_col = 8 * n * (1.0 + _ACTIVE_FRACTION)
    fixed = 8 * n * m * 2  # row norms and per-kernel work vectors
    needed = R * per_col + fixed
    limit, _ = memory_limit(max_memory)
    if limit is None or needed <= limit:
        return
    approx = [b for b, kd in zip(budget, kinds) if kd != "exact"]
    exact_cols = R - sum(approx)
    advice = "Use storage='on_the_fly' (stores only X), fewer kernels or a subsample of the rows"
    if options.approximation is not None and approx:
        room = (limit - fixed) / per_col - exact_cols
        fit = int(room // len(approx))
        if options.approximation == "fourier":
            fit -= fit % 2
        if fit >= 1:
            advice = f"n_components={fit} would fit; or " + advice[0].lower() + advice[1:]
    check_memory(
        needed, max_memory,
        f"Feature maps of {m} kernels ({R:,} columns) on {n} samples "
        f"({fmt_bytes(8 * n * R)} for the map)",
        advice + ".",
    )


# --------------------------------------------------------------------------
# storage
# --------------------------------------------------------------------------
class FeatureMapStorage:
    """Kernels held as their stacked feature map ``Phi`` (``n x R``), read with BLAS.

    Parameters
    ----------
    functions : FeatureMapFunctions
        The kernels on the training points; their computed map (see
        :meth:`FeatureMapFunctions.from_data`) is shared, not copied.

    Attributes
    ----------
    maps : ndarray of shape (R, n_samples), read-only
        ``Phi'`` (kernel ``k`` owns rows ``offsets[k]:offsets[k + 1]``), so
        a kernel's features are one contiguous block.

    Notes
    -----
    Costs per call, with ``R_a`` the columns of the kernels with non-zero
    weight: ``rows`` ``O(len(idx) n R_a)``, ``combine`` ``O(n^2 R_a / 2)``
    (a symmetric rank-``R_a`` update, so the result is exactly symmetric),
    ``quad_forms`` ``O(|S| R)``, ``diag`` ``O(n m_active)``. When the active
    kernels own at most half of the columns, their rows of ``Phi'`` are
    gathered once per active set (kept until it changes); the memory check
    of :meth:`~mklopt.KernelBank.from_specs` budgets for that copy.
    """

    name = "feature_map"

    def __init__(self, functions):
        if not isinstance(functions, FeatureMapFunctions):
            raise TypeError(
                f"functions must be FeatureMapFunctions, got {type(functions).__name__}"
            )
        self.fn = functions
        self.functions = functions
        self.maps = functions._own_map()
        self.offsets = functions.offsets
        self.ranks = functions.ranks
        self.n_kernels, self.n_samples = functions.n_kernels, functions.n_samples
        self._kernel_of = np.repeat(np.arange(self.n_kernels), self.ranks)
        m, n = self.n_kernels, self.n_samples
        self._sqnorms = np.empty((m, n))
        step = max(1, _CHUNK_BYTES // (8 * max(self.maps.shape[0], 1)))
        for c0 in range(0, n, step):
            blk = self.maps[:, c0 : c0 + step]
            self._sqnorms[:, c0 : c0 + step] = np.add.reduceat(blk * blk, self.offsets[:-1],
                                                               axis=0)
        self._active_key = None
        self._active = None

    def view(self, idx, factors, functions=None, normalize=None):
        """The rows ``idx`` of the maps, which were fitted once on all points.

        The view's functions normalise on its own points
        (:meth:`FeatureMapFunctions.view`); ``factors`` are implied by them.
        """
        return type(self)(self.fn.view(idx, normalize=normalize))

    @property
    def nbytes(self):
        held = self._active
        extra = 0 if held is None or held[1] is None else held[0].nbytes
        return int(self.maps.nbytes + self._sqnorms.nbytes + extra)

    def _weighted(self, w):
        """``(A, omega)``: rows of ``Phi'`` covering the active kernels and their weights."""
        act = w != 0.0
        key = act.tobytes()
        if key != self._active_key:
            rows = np.flatnonzero(act[self._kernel_of])
            if rows.size > _ACTIVE_FRACTION * self.maps.shape[0]:
                A, rows = self.maps, None  # zero weights on the few inactive columns
            else:
                A = self.maps[rows]
            self._active_key, self._active = key, (A, rows)
        A, rows = self._active
        omega = w[self._kernel_of] if rows is None else w[self._kernel_of[rows]]
        return A, omega

    def diag(self, w):
        nz = np.flatnonzero(w)
        return w[nz] @ self._sqnorms[nz]

    def rows(self, w, idx, out):
        A, omega = self._weighted(w)
        left = A[:, idx] * omega[:, None]
        return np.dot(left.T, A, out=out)

    def combine(self, w, out):
        A, omega = self._weighted(w)
        root = np.sqrt(omega)
        n = self.n_samples
        step = max(1, _CHUNK_BYTES // (8 * n))
        for c0 in range(0, A.shape[0], step):
            P = A[c0 : c0 + step] * root[c0 : c0 + step, None]
            if c0 == 0:
                np.dot(P.T, P, out=out)
            else:
                out += np.dot(P.T, P)
        return out

    def quad_forms(self, v, support, kernels=None):
        m, n = self.n_kernels, self.n_samples
        S = support
        inv = None
        if kernels is None:
            ks = np.arange(m, dtype=np.int64)
        else:
            ks, inv = np.unique(kernels, return_inverse=True)
            inv = inv.ravel()
        if S.size == 0:
            q = np.zeros(ks.size)
            return q if inv is None else q[inv]
        rows = None if kernels is None else _segment_rows(self.offsets, ks)
        R = self.maps.shape[0] if rows is None else rows.size
        u = np.empty(R)
        if rows is None and S.size * 3 >= n:
            # A large support: one pass over Phi' with v zero outside S.
            vs = np.zeros(n)
            vs[S] = v[S]
            np.dot(self.maps, vs, out=u)
        else:
            vS = np.ascontiguousarray(v[S])
            step = max(1, _CHUNK_BYTES // (8 * S.size))
            for r0 in range(0, R, step):
                if rows is None:
                    block = self.maps[r0 : r0 + step][:, S]
                else:
                    block = self.maps[np.ix_(rows[r0 : r0 + step], S)]
                u[r0 : r0 + step] = block @ vS
        u *= u
        off = _seg_offsets(self.ranks[ks])
        q = np.add.reduceat(u, off[:-1])
        return q if inv is None else q[inv]

    def blocks(self, kernels, rows, cols):
        uniq, inv = np.unique(kernels, return_inverse=True)
        out = np.empty((uniq.size, rows.size, cols.size))
        for j, k in enumerate(uniq.tolist()):
            B = self.maps[self.offsets[k] : self.offsets[k + 1]]
            np.dot(B[:, rows].T, B[:, cols], out=out[j])
        return out if np.array_equal(uniq, kernels) else out[inv.ravel()]
