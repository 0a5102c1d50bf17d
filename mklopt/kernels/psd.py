"""Kernel matrices that are not positive semi-definite: the check, and two repairs.

Kernels from the wild are often indefinite: a dynamic-time-warping
similarity ``exp(-DTW(x, z) / t)``, a sigmoid kernel ``tanh(a x.z + b)``.
The MKL duals assume PSD kernels (their dual value is then concave and the
gap a certificate), so :meth:`KernelBank.from_matrices` and the estimators
with ``kernels="precomputed"`` take ``psd=``:

``"check"`` (default)
    Refuse an indefinite kernel, naming it and its most negative
    eigenvalue. The test is a block Lanczos estimate of the smallest
    eigenvalue (:func:`lambda_min_estimate`: 7 products of ``K`` with
    ``n x 8`` blocks, about ``112 n^2`` flops against ``n^3 / 3`` for a
    Cholesky factorisation, which also failed by rounding on rank-deficient
    kernels and then took a full eigendecomposition); a kernel it flags is
    confirmed by an exact eigenvalue before the error. Ritz values are
    never below ``lambda_min``, so a PSD kernel is never refused; an
    indefinite one whose negative eigenvalues are above about ``-1e-3
    lambda_max`` may pass. Matrices of at most 500 samples get the exact
    test. A diagonally dominant kernel (a narrow Gaussian) passes before
    either, on Gershgorin's circle theorem (see :func:`psd_test`).
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

__all__ = ["PSD_OPTIONS", "PSDMap", "lambda_min_estimate", "psd_test", "repair_kernel",
           "map_test_kernels"]

#: The values of ``psd=``.
PSD_OPTIONS = ("check", "clip", "shift", "trust")
#: A kernel is PSD when lambda_min >= -_PSD_RTOL * trace.
_PSD_RTOL = 1e-8
#: Up to this many samples the exact test (one Cholesky factorisation) is
#: cheaper than the Lanczos estimate. One thread, a Gaussian kernel of 8
#: features (median of 7), with np.linalg.cholesky: 1.45 against 2.02 ms at
#: n = 384, 2.92 against 2.95 ms at 500, 7.8 against 5.9 ms at 700. With the
#: in-place dpotrf of :func:`_shifted_cholesky` (median of 9): 1.5 against
#: 2.6 ms at 500, 5.7 against 8.5 ms at 800, 10.9-13.1 against 13.2-16.7 ms
#: at 1,000, so the limit could rise; not done: a factorisation that fails
#: by rounding on a rank-deficient kernel falls back to a full
#: eigendecomposition, which costs far more at those sizes.
_EXACT_N = 500
#: Block size and depth of the block Lanczos estimate.
_BLOCK = 8
_DEPTH = 6


def _hint():
    return ("Pass psd='clip' (project on the PSD cone, test kernels mapped the same way) or "
            "psd='shift' (add -lambda_min to the diagonal) to repair it, or psd='trust' to "
            "skip this test")


def lambda_min_estimate(A, seed=0):
    """An estimate of the smallest eigenvalue of the symmetric ``A``, never below it.

    Block Lanczos: the Rayleigh-Ritz values of ``A`` on the block Krylov
    space ``span[Q, A Q, ..., A^6 Q]`` of a random ``n x 8`` block ``Q``
    (56 directions, 7 products of ``A`` with ``n x 8`` blocks, through
    BLAS). By Cauchy's interlacing theorem the smallest Ritz value is at
    least ``lambda_min``; a negative eigenvalue below about ``-1e-3`` of the
    largest is found (tested on kernels of 1,000 points), milder ones may
    not be.
    """
    n = A.shape[0]
    b, depth = _BLOCK, _DEPTH
    if b * (depth + 1) >= n:
        return _lambda_min_exact(A)
    Q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, b)))
    basis, prods = [Q], []
    for _ in range(depth):
        W = np.asarray(A @ basis[-1], dtype=np.float64)
        prods.append(W)
        B = np.hstack(basis)
        for _ in range(2):  # Gram-Schmidt twice: the basis stays orthonormal
            W = W - B @ (B.T @ W)
        Q, _ = np.linalg.qr(W)
        basis.append(Q)
    prods.append(np.asarray(A @ basis[-1], dtype=np.float64))
    B, AB = np.hstack(basis), np.hstack(prods)
    T = B.T @ AB
    return float(np.linalg.eigvalsh(0.5 * (T + T.T))[0])


def _lambda_min_exact(A):
    A = np.asarray(A, dtype=np.float64)
    import scipy.linalg  # only when a kernel is tested (import mklopt stays light)

    return float(scipy.linalg.eigh(A, eigvals_only=True, subset_by_index=[0, 0],
                                   check_finite=False)[0])


def psd_test(A, scratch=None, asym=None):
    """``(ok, lambda_min)`` for the symmetric ``A``; ``lambda_min`` exact when not ``ok``.

    ``ok`` when ``lambda_min >= -1e-8 trace`` (see the module docstring for
    what the Lanczos estimate can miss); ``lambda_min`` is None when ``ok``
    was decided without computing it.

    A diagonally dominant ``A`` passes first, on Gershgorin's circle theorem
    (:func:`mklopt._jit.combine.diagonally_dominant`: ``A_ii + 1e-8 trace >=
    sum_{j != i} |A_ij|`` for every row, one pass at most, ended by the first
    row that fails): a narrow Gaussian kernel is certified without a
    factorisation. ``asym``, ``max|A - A'|`` when the caller has it (from
    :func:`scan_kernel`), widens the radii by ``(n - 1) asym``; None skips
    this test.

    Then, up to :data:`_EXACT_N` samples, the test is one Cholesky factorisation
    of ``A + 1e-8 trace(A) I`` (LAPACK's ``dpotrf``, in place on a copy),
    with the exact smallest eigenvalue when it fails. ``scratch``, an
    ``(n, n)`` float64 C-contiguous array, holds that copy: a caller testing
    several kernels passes one, so that they share it (np.linalg.cholesky
    allocates the shifted copy, its factor and an identity each time: 1.28
    against 0.80 ms at n = 384, one thread).
    """
    n = A.shape[0]
    tr = float(np.trace(A))
    tol = _PSD_RTOL * abs(tr)
    if asym is not None and tr > 0.0:
        from .._jit import combine, readonly

        if combine.diagonally_dominant(readonly(np.asarray(A)), tol, (n - 1) * float(asym)):
            return True, None
    if n <= _EXACT_N:
        if tr > 0.0 and _shifted_cholesky(A, _PSD_RTOL * tr, scratch):
            return True, None
        lam = float(np.linalg.eigvalsh(np.asarray(A, np.float64))[0])
        return lam >= -tol, lam
    if lambda_min_estimate(A) >= -tol:
        return True, None
    lam = _lambda_min_exact(A)  # flagged: confirmed exactly
    return lam >= -tol, lam


def _shifted_cholesky(A, shift, scratch=None):
    """Whether ``A + shift I`` has a Cholesky factor (factorised in ``scratch``, overwritten)."""
    from scipy.linalg import lapack  # only when a kernel is tested (import mklopt stays light)

    n = A.shape[0]
    if scratch is None or scratch.shape != (n, n):
        scratch = np.empty((n, n))
    np.copyto(scratch, A)
    scratch.flat[:: n + 1] += shift
    # The transpose of a C-contiguous matrix is Fortran-ordered: dpotrf works
    # on it in place (A is symmetric, so either triangle is A's).
    _, info = lapack.dpotrf(scratch.T, lower=1, clean=0, overwrite_a=1)
    return info == 0


def scan_kernel(A, k):
    """``(amax, asym)``, ``max|A|`` and ``max|A - A'|`` of the square matrix ``K[k]``.

    One jitted pass (:func:`mklopt._jit.combine.symmetry_scan`). Raises
    ValueError naming ``K[k]`` when an entry is NaN or infinite.
    """
    from .._interrupt import check, current_flag
    from .._jit import combine, readonly

    stop = current_flag()
    finite, amax, asym = combine.symmetry_scan(readonly(np.asarray(A)), stop)
    check(stop)
    if not finite:
        raise ValueError(f"K[{k}] contains NaN or infinity")
    return float(amax), float(asym)


def check_symmetric(A, k, rtol=1e-8, scan=None):
    """Raise ValueError naming ``K[k]`` when ``max|A - A'| > rtol max|A|``; return ``max|A|``.

    ``scan`` is :func:`scan_kernel`'s answer for ``A`` when the caller has it.
    """
    amax, asym = scan_kernel(A, k) if scan is None else scan
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


def repair_kernel(A, mode, k, scratch=None, asym=None):
    """Check the symmetric kernel ``A`` (written in place) under ``psd=mode``; its map or None.

    ``mode`` ``"check"`` raises on an indefinite kernel, ``"clip"`` and
    ``"shift"`` repair ``A`` in place and return its :class:`PSDMap`,
    ``"trust"`` does nothing. A kernel that passes is never changed.
    ``scratch`` and ``asym`` as for :func:`psd_test`.
    """
    if mode == "trust":
        return None
    ok, lam = psd_test(A, scratch, asym)
    if ok:
        return None
    tr = float(np.trace(A))
    if mode == "check":
        raise indefinite_error(k, lam, tr)
    if mode == "shift":
        s = -lam
        A[np.diag_indices_from(A)] += s
        return PSDMap("shift", None, s, lam)
    import scipy.linalg

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
