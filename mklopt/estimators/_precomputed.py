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
from ..kernels.stack import KernelStack, PrecomputedKernel, _as_stack

__all__ = [
    "PRECOMPUTED",
    "PrecomputedKernel",
    "PrecomputedExpansion",
    "is_precomputed",
    "precomputed_bank",
    "check_test_kernels",
]

PRECOMPUTED = "precomputed"


def is_precomputed(kernels):
    """Whether an estimator's ``kernels`` parameter is ``"precomputed"``."""
    return isinstance(kernels, str) and kernels == PRECOMPUTED


def precomputed_specs(n_kernels):
    """One :class:`PrecomputedKernel` per kernel of the stack."""
    return [PrecomputedKernel(k) for k in range(int(n_kernels))]


def precomputed_bank(X, n_samples=None, name="X"):
    """The raw bank of training kernels ``X`` (no copy of an array or memory map).

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
        return KernelBank.from_matrices(K, normalize=None, check=True)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"{name} (precomputed kernels): {exc}") from None


def check_test_kernels(X, n_kernels, n_train, name="X"):
    """Validate kernels between new and training samples; return a :class:`KernelStack`.

    Raises
    ------
    ValueError
        When ``X`` is not ``(n_kernels, n_test, n_train)``.
    """
    K = _as_stack(X, name)
    m = len(K)
    n_test, cols = K[0].shape
    if m != n_kernels or cols != n_train:
        raise ValueError(
            f"{name} must have shape (n_kernels, n_test, n_train) = ({n_kernels}, n_test, "
            f"{n_train}): the {n_kernels} kernels between the new samples and the {n_train} "
            f"training samples; got shape {(m, n_test, cols)}"
        )
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
