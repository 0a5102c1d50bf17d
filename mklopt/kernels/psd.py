"""Kernel matrices that are not positive semi-definite: the check, and two repairs.

Kernels from the wild are often indefinite: a dynamic-time-warping
similarity ``exp(-DTW(x, z) / t)``, a sigmoid kernel ``tanh(a x.z + b)``.
The MKL duals assume PSD kernels (their dual value is then concave and the
gap a certificate), so :meth:`KernelBank.from_matrices` and the estimators
with ``kernels="precomputed"`` take ``psd=``:

``"check"`` (default)
    Refuse an indefinite kernel, naming it and its most negative
    eigenvalue. The test is a Lanczos estimate of the smallest eigenvalue
    (ARPACK through :func:`scipy.sparse.linalg.eigsh`, a few dozen products
    ``K v``) rather than a Cholesky factorisation per kernel; a kernel it
    flags is confirmed by an exact eigenvalue before the error. Ritz values
    are never below ``lambda_min``, so a PSD kernel is never refused; an
    indefinite one whose negative eigenvalues are above about
    ``-1e-4 ||K||_F`` may pass. Matrices of at most 300 samples get the
    exact test.
``"clip"``
    Replace the training kernel by its projection on the PSD cone, the
    negative eigenvalues set to zero. With ``K = V diag(lam) V'`` and
    ``V_+`` the eigenvectors of the positive eigenvalues, ``P = V_+ V_+'``:

    .. math:: \\tilde K = V_+ \\,\\mathrm{diag}(\\lambda_+)\\, V_+^\\top = K P = P K P,
              \\qquad \\tilde K_{\\mathrm{test}} = K_{\\mathrm{test}} P .

    A test row is the cross kernel ``k(x, X_train)`` mapped through the same
    projection: a training point given as a test point gets its row of
    ``K~`` back, since ``K[i, :] P = K~[i, :]``, so training and test
    kernels are one kernel ``k~(x, z) = k(x, X) P k(X, z)`` restricted to
    the span of the training points' positive eigenvectors (Chen et al.,
    *Similarity-based classification: concepts and algorithms*, JMLR 2009,
    spectrum clip). Costs one symmetric eigendecomposition per indefinite
    kernel at fit, and the model keeps ``V_+`` (``n x r``) for each.
``"shift"``
    Add ``s I`` with ``s = -lambda_min`` to the training kernel (the
    smallest eigenvalue, computed exactly), which is the kernel
    ``k~(x, z) = k(x, z) + s [x = z]``: the extra term is zero between a
    new point and any training point, so test kernels are used unchanged,
    :math:`\\tilde K_{\\mathrm{test}} = K_{\\mathrm{test}}`. Cheaper than a
    clip (one eigenvalue), but it changes every training point's
    self-similarity.
``"trust"``
    No PSD test (symmetry and finiteness are still checked): for kernels
    known to be PSD, such as those the package computed itself.

Kernels that pass the check (``lambda_min >= -1e-8 trace``) are left as
they are by ``"clip"`` and ``"shift"``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

__all__ = ["PSD_OPTIONS", "PSDMap", "lambda_min_estimate", "psd_test", "repair_kernel",
           "map_test_kernels"]

#: The values of ``psd=``.
PSD_OPTIONS = ("check", "clip", "shift", "trust")
#: A kernel is PSD when lambda_min >= -_PSD_RTOL * trace.
_PSD_RTOL = 1e-8
#: Up to this many samples the exact test (a Cholesky factorisation) is cheap.
_EXACT_N = 300
#: Relative accuracy asked of ARPACK on c - lambda_min, c = ||K||_F.
_LANCZOS_TOL = 1e-4
_LANCZOS_NCV = 24
_LANCZOS_MAXITER = 100


def _hint():
    return ("Pass psd='clip' (project on the PSD cone, test kernels mapped the same way) or "
            "psd='shift' (add -lambda_min to the diagonal) to repair it, or psd='trust' to "
            "skip this test")


def lambda_min_estimate(A, seed=0):
    """An estimate of the smallest eigenvalue of the symmetric ``A``, never below it.

    The largest eigenvalue ``theta`` of ``c I - A``, ``c = ||A||_F >=
    lambda_max``, by Lanczos (ARPACK, relative accuracy 1e-4): the
    estimate ``c - theta`` is at least ``lambda_min`` (a Ritz value of
    ``c I - A`` is at most its largest eigenvalue) and within about
    ``1e-4 c`` of it when ARPACK converges.
    """
    n = A.shape[0]
    c = float(np.sqrt(np.einsum("ij,ij->", A, A, dtype=np.float64)))
    if c == 0.0:
        return 0.0
    A64 = A if A.dtype == np.float64 else None

    def matvec(x):
        x = np.ravel(x)
        Ax = (A64 @ x) if A64 is not None else np.asarray(A @ x.astype(A.dtype), np.float64)
        return c * x - Ax

    op = LinearOperator((n, n), matvec=matvec, dtype=np.float64)
    v0 = np.random.default_rng(seed).standard_normal(n)
    try:
        theta = float(eigsh(op, k=1, which="LA", tol=_LANCZOS_TOL, v0=v0,
                            ncv=min(n - 1, _LANCZOS_NCV), maxiter=_LANCZOS_MAXITER,
                            return_eigenvectors=False)[0])
    except ArpackNoConvergence as exc:
        if exc.eigenvalues.size == 0:
            return _lambda_min_exact(A)
        theta = float(np.max(exc.eigenvalues))
    except ArpackError:
        return _lambda_min_exact(A)
    return c - theta


def _lambda_min_exact(A):
    A = np.asarray(A, dtype=np.float64)
    return float(scipy.linalg.eigh(A, eigvals_only=True, subset_by_index=[0, 0],
                                   check_finite=False)[0])


def psd_test(A):
    """``(ok, lambda_min)`` for the symmetric ``A``; ``lambda_min`` exact when not ``ok``.

    ``ok`` when ``lambda_min >= -1e-8 trace`` (see the module docstring for
    what the Lanczos estimate can miss); ``lambda_min`` is None when ``ok``
    was decided without computing it.
    """
    n = A.shape[0]
    tr = float(np.trace(A))
    tol = _PSD_RTOL * abs(tr)
    if n <= _EXACT_N:
        if tr > 0.0:
            try:
                np.linalg.cholesky(np.asarray(A, np.float64) + (_PSD_RTOL * tr) * np.eye(n))
                return True, None
            except np.linalg.LinAlgError:
                pass
        lam = float(np.linalg.eigvalsh(np.asarray(A, np.float64))[0])
        return lam >= -tol, lam
    if lambda_min_estimate(A) >= -tol:
        return True, None
    lam = _lambda_min_exact(A)  # flagged: confirmed exactly
    return lam >= -tol, lam


def check_symmetric(A, k, rtol=1e-8):
    """Raise ValueError naming ``K[k]`` when ``max|A - A'| > rtol max|A|``."""
    amax = float(np.max(np.abs(A)))
    asym = float(np.max(np.abs(A - A.T)))
    if asym > rtol * amax:
        raise ValueError(
            f"K[{k}] is not symmetric: max |K - K'| = {asym:.3g} (max |K| = {amax:.3g}); "
            "symmetrise it with (K + K.T) / 2 if this is rounding"
        )
    return amax


def indefinite_error(k, lam, tr):
    return ValueError(
        f"K[{k}] is not positive semi-definite: its most negative eigenvalue is "
        f"{lam:.3g} (trace {tr:.3g}; tolerance {_PSD_RTOL:g} x trace). {_hint()}"
    )


@dataclass(frozen=True)
class PSDMap:
    """How one repaired kernel maps its test rows (see the module docstring).

    Attributes
    ----------
    kind : {"clip", "shift"}
    basis : ndarray of shape (n_train, r) or None
        ``V_+`` of a clip: a test row ``k`` becomes ``(k @ V_+) @ V_+'``.
    shift : float
        ``s`` of a shift (test rows unchanged).
    lambda_min : float
        The training kernel's smallest eigenvalue before the repair.
    """

    kind: str
    basis: np.ndarray | None
    shift: float
    lambda_min: float

    def apply(self, rows):
        """Test rows ``(n_test, n_train)`` of the raw kernel mapped as the training kernel was."""
        rows = np.asarray(rows, dtype=np.float64)
        if self.kind == "clip":
            return (rows @ self.basis) @ self.basis.T
        return rows


def repair_kernel(A, mode, k):
    """Check the symmetric kernel ``A`` (written in place) under ``psd=mode``; its map or None.

    ``mode`` ``"check"`` raises on an indefinite kernel, ``"clip"`` and
    ``"shift"`` repair ``A`` in place and return its :class:`PSDMap`,
    ``"trust"`` does nothing. A kernel that passes is never changed.
    """
    if mode == "trust":
        return None
    ok, lam = psd_test(A)
    if ok:
        return None
    tr = float(np.trace(A))
    if mode == "check":
        raise indefinite_error(k, lam, tr)
    if mode == "shift":
        s = -lam
        A[np.diag_indices_from(A)] += s
        return PSDMap("shift", None, s, lam)
    e, V = scipy.linalg.eigh(np.asarray(A, dtype=np.float64), check_finite=False)
    keep = e > 0.0
    Vp = np.ascontiguousarray(V[:, keep])
    A[...] = (Vp * e[keep]) @ Vp.T
    A[...] = 0.5 * (A + A.T)  # exactly symmetric
    return PSDMap("clip", Vp, 0.0, lam)


def map_test_kernels(mats, maps):
    """Test kernels ``mats[k]`` (``n_test x n_train``) mapped by the training kernels' maps.

    Kernels without a map are returned as they are (no copy).
    """
    if maps is None or all(m is None for m in maps):
        return mats
    return [mats[k] if m is None else m.apply(mats[k]) for k, m in enumerate(maps)]
