"""``kernels="precomputed"``: the input kind of kernel matrices the user has.

Semantics follow scikit-learn's ``SVC(kernel="precomputed")``, with one
axis more for the base kernels:

* ``fit(X, y)``: ``X`` of shape ``(n_kernels, n_samples, n_samples)``, the
  base kernels between the training samples (an array, a memory map or a
  list of matrices; checked for shape, finiteness, symmetry and positive
  semi-definiteness, errors naming ``X``);
* ``predict(X)``: ``X`` of shape ``(n_kernels, n_test, n_samples)``, the
  same kernels between new samples and all the training samples.

The kernels are held in one raw bank (:meth:`KernelBank.from_matrices`,
without copying an array or memory map), and :class:`MKLClassifier`'s one
fit runs on it as on a bank built from features: every one-vs-one pair
reads its index block through a view with its own normalisation, and keeps
the indices of its support vectors into the training samples, which is all
prediction needs (:class:`PrecomputedExpansion`). Every formulation and
every registered loss of the classifier runs on them. This module holds
what is particular to the input kind: the bank of the stack, the checks of
test kernels and the predictor.
:class:`~mklopt.KernelStack` presents such stacks
samples first, for scikit-learn's cross-validation.
"""

from __future__ import annotations

import numpy as np

from ..kernels import KernelBank
from ..kernels.psd import map_test_kernels
from ..kernels.stack import KernelStack, PrecomputedKernel, _as_stack

__all__ = [
    "PRECOMPUTED",
    "PrecomputedKernel",
    "PrecomputedExpansion",
    "is_precomputed",
    "precomputed_bank",
    "check_test_kernels",
    "kernels_first",
    "check_kernel_names",
    "KERNEL_AXES",
    "check_feature_kernel_inputs",
]

#: The values of ``kernel_axis``: 0 (kernels first, ``(m, n, n)``) or the
#: last axis (samples first, ``(n, n, m)``, scikit-learn's pairwise layout).
KERNEL_AXES = (0, -1, 2, -3)

PRECOMPUTED = "precomputed"


def is_precomputed(kernels):
    """Whether an estimator's ``kernels`` parameter is ``"precomputed"``."""
    return isinstance(kernels, str) and kernels == PRECOMPUTED


def precomputed_specs(n_kernels):
    """One :class:`PrecomputedKernel` per kernel of the stack."""
    return [PrecomputedKernel(k) for k in range(int(n_kernels))]


def kernels_first(X, kernel_axis=0, name="X", n_samples=None):
    """The kernels of ``X`` one after the other, whichever axis holds them.

    Parameters
    ----------
    X : array-like, list of matrices or KernelStack
        With ``kernel_axis=0``: ``(n_kernels, n_rows, n_cols)``, a list of
        ``(n_rows, n_cols)`` matrices or a :class:`KernelStack`. With
        ``kernel_axis=-1`` (or 2): an array ``(n_rows, n_cols, n_kernels)``,
        the samples-first layout scikit-learn's splitters cut with
        ``X[np.ix_(rows, cols)]``.
    kernel_axis : {0, -1, 2, -3}
    n_samples : int, optional
        The number of labels at fit: a layout that does not fit it is
        refused with a message naming ``kernel_axis``.

    Returns
    -------
    ndarray (kernels first, no copy) or list of 2-D arrays (views of a
    samples-first array, no copy)
    """
    axis = 0 if kernel_axis in (0, -3) else -1
    if isinstance(X, KernelStack):
        if axis != 0:
            raise ValueError(
                f"{name} is a KernelStack (kernels first inside), which takes kernel_axis=0; "
                f"got kernel_axis={kernel_axis}"
            )
        return X.kernels
    if axis == 0:
        K = _as_stack(X, name)
        if n_samples is not None and isinstance(K, np.ndarray):
            m, r, c = K.shape
            if m == n_samples and r == n_samples and c != n_samples:
                raise ValueError(
                    f"{name} has shape {K.shape} and y has {n_samples} labels: it looks "
                    "samples first, (n_samples, n_samples, n_kernels); pass kernel_axis=-1 "
                    "for that layout (kernel_axis=0, the default, reads (n_kernels, "
                    "n_samples, n_samples))"
                )
        return K
    a = X if isinstance(X, np.ndarray) else np.asarray(X)
    if a.ndim != 3:
        raise ValueError(
            f"with kernel_axis={kernel_axis}, {name} must be an array of shape (n_rows, "
            f"n_cols, n_kernels), got shape {a.shape}"
        )
    if n_samples is not None and a.shape[0] != n_samples:
        hint = ("; it looks kernels first: pass kernel_axis=0" if a.shape[1] == a.shape[2]
                == n_samples else "")
        raise ValueError(
            f"with kernel_axis={kernel_axis}, {name} of shape {a.shape} is read as (n_samples, "
            f"n_samples, n_kernels), but y has {n_samples} labels{hint}"
        )
    return [a[:, :, k] for k in range(a.shape[2])]


def _n_labels(y):
    """The number of labels of ``y`` when it has one (None: the label checks say why)."""
    try:
        shape = np.shape(y)
    except (TypeError, ValueError):
        return None
    return int(shape[0]) if len(shape) >= 1 else None


def check_feature_kernel_inputs(est):
    """Refuse the precomputed-only inputs on an estimator that computes its kernels.

    Kernels computed from features are PSD by construction: their check is
    skipped, and ``psd="clip"`` or ``"shift"`` has nothing to repair.
    """
    if getattr(est, "kernel_names", None) is not None:
        check_kernel_names(est.kernel_names, 0, est.kernels)
    if getattr(est, "psd", "check") in ("clip", "shift"):
        raise ValueError(
            f"psd={est.psd!r} repairs precomputed kernels (kernels='precomputed'); kernels "
            "computed from features are positive semi-definite already"
        )
    if getattr(est, "kernel_axis", 0) not in (0, -3):
        raise ValueError(
            f"kernel_axis={est.kernel_axis} says which axis of a precomputed stack holds the "
            "kernels; it needs kernels='precomputed'"
        )


def check_kernel_names(kernel_names, n_kernels, kernels):
    """``kernel_names=``: None, or one distinct string per precomputed kernel (ValueError)."""
    if kernel_names is None:
        return None
    if not is_precomputed(kernels):
        raise ValueError(
            "kernel_names names precomputed kernels (kernels='precomputed'); to name kernels "
            "computed from features, give kernels={view name: specs} "
            "(mklopt.kernels.feature_views)"
        )
    names = list(kernel_names)
    if len(names) != n_kernels or not all(isinstance(v, str) and v for v in names):
        raise ValueError(
            f"kernel_names must be {n_kernels} non-empty strings, one per precomputed kernel, "
            f"got {names!r}"
        )
    if len(set(names)) != len(names):
        raise ValueError(f"kernel_names must be distinct, got {names!r}")
    return names


def precomputed_bank(X, n_samples=None, name="X", psd="check"):
    """The raw bank of training kernels ``X`` (no copy of an array or memory map).

    ``psd`` is :meth:`KernelBank.from_matrices`'s: ``"clip"`` and
    ``"shift"`` repair indefinite kernels in a copy and record in the
    bank's ``psd_maps`` how their test kernels are mapped.

    Raises
    ------
    ValueError, TypeError
        Naming ``X``: not a stack of square matrices, a sample count other
        than ``n_samples``, NaN/inf, a non-symmetric or indefinite kernel.
    """
    K = _as_stack(X, name)
    m = len(K)
    rows, cols = K[0].shape
    if rows != cols:
        raise ValueError(
            f"{name} must hold square kernel matrices, shape (n_kernels, n_samples, n_samples), "
            f"with kernels='precomputed'; got shape {(m, rows, cols)}"
        )
    if n_samples is not None and rows != n_samples:
        raise ValueError(
            f"{name} holds kernels between {rows} samples but y has {n_samples} labels"
        )
    try:
        return KernelBank.from_matrices(K, normalize=None, check=True, psd=psd)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} (precomputed kernels): {exc}") from None


def check_test_kernels(X, n_kernels, n_train, name="X", kernel_axis=0, psd_maps=None):
    """Validate kernels between new and training samples; return a :class:`KernelStack`.

    Kernels whose training kernel was repaired (``psd_maps``, see
    :mod:`mklopt.kernels.psd`) are mapped the same way: a clip's test rows
    through the training kernel's projection, ``K_test V_+ V_+'``.

    Raises
    ------
    ValueError
        When ``X`` is not ``(n_kernels, n_test, n_train)``.
    """
    K = kernels_first(X, kernel_axis, name)
    m = len(K)
    n_test, cols = K[0].shape
    if m != n_kernels or cols != n_train:
        raise ValueError(
            f"{name} must have shape (n_kernels, n_test, n_train) = ({n_kernels}, n_test, "
            f"{n_train}): the {n_kernels} kernels between the new samples and the {n_train} "
            f"training samples; got shape {(m, n_test, cols)}"
            + ("" if kernel_axis in (0, -3) else f" (read with kernel_axis={kernel_axis})")
        )
    if psd_maps is not None and any(pm is not None for pm in psd_maps):
        K = map_test_kernels(K, psd_maps)
    return KernelStack(K)


class PrecomputedExpansion:
    """Decision function of one binary problem on precomputed kernels.

    ``f(x) = sum_a weights[a] * K_test[kernels[a]][x, support] @ coef + bias``,
    where ``weights`` already include the problem's normalisation of each
    kernel.

    Parameters
    ----------
    kernels : ndarray of int
        The kernels kept (weight above the threshold).
    weights : ndarray of float
        Their weights times their normalisation factors.
    support : ndarray of int
        Indices of the support vectors among the training samples.
    coef : ndarray of float
        ``alpha_i y_i`` on the support vectors.
    bias : float
    """

    def __init__(self, kernels, weights, support, coef, bias):
        self.kernels = np.asarray(kernels, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)
        self.support = np.asarray(support, dtype=np.int64)
        self.coef = np.asarray(coef, dtype=np.float64)
        self.bias = float(bias)

    def __call__(self, stack):
        mats = stack.kernels if isinstance(stack, KernelStack) else stack
        n_test = mats[0].shape[0]
        out = np.full(n_test, self.bias)
        if self.support.size == 0:
            return out
        for k, wk in zip(self.kernels, self.weights, strict=True):
            block = np.asarray(mats[k][:, self.support], dtype=np.float64)
            if not np.all(np.isfinite(block)):
                raise ValueError(f"X[{k}] (precomputed kernels) contains NaN or infinity")
            out += wk * (block @ self.coef)
        return out
