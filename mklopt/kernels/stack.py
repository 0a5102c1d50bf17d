"""KernelStack: precomputed kernel matrices that scikit-learn's model selection can split.

An estimator with ``kernels="precomputed"`` takes its base kernels as one
array of shape ``(n_kernels, n_samples, n_samples)``: kernels first, the
layout of :meth:`KernelBank.from_matrices` and of ``np.save`` files that
memory-map one kernel after the other. scikit-learn's cross-validation
tools, however, treat a pairwise estimator's input as samples first: they
check ``X.shape[0] == len(y)`` and ``X.shape[0] == X.shape[1]`` and cut
folds with ``X[np.ix_(rows, cols)]``. :class:`KernelStack` wraps the
kernels-first array (an array, a memory map or a list of matrices, never
copied) and presents it samples first, so ``cross_val_score``,
``GridSearchCV`` and the like split it correctly.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["KernelStack", "PrecomputedKernel"]


def _as_stack(K, name):
    """A 3-D kernels-first array (memory maps and arrays as they are) or a list of 2-D ones."""
    if isinstance(K, KernelStack):
        return K.kernels
    if isinstance(K, np.ndarray):
        if K.ndim != 3:
            raise ValueError(
                f"{name} must be a stack of kernel matrices of shape (n_kernels, n_rows, "
                f"n_cols), got an array of shape {K.shape}"
                + ("; a single kernel K is the stack K[None]" if K.ndim == 2 else "")
            )
        return K
    if isinstance(K, (list, tuple)):
        if len(K) == 0:
            raise ValueError(f"{name} is an empty list; give at least one kernel matrix")
        mats = [np.asarray(k) if not isinstance(k, np.ndarray) else k for k in K]
        shapes = {m.shape for m in mats}
        if any(m.ndim != 2 for m in mats) or len(shapes) != 1:
            raise ValueError(
                f"{name} must be a list of 2-D kernel matrices of one shape, got shapes "
                f"{sorted(shapes, key=str)}"
            )
        return mats
    raise TypeError(
        f"{name} must be an array of shape (n_kernels, n_rows, n_cols), a list of 2-D kernel "
        f"matrices or a KernelStack, got {type(K).__name__}"
    )


class KernelStack:
    """Precomputed kernels presented samples first, for scikit-learn's model selection.

    Parameters
    ----------
    kernels : array-like of shape (n_kernels, n_rows, n_cols) or list of 2-D arrays
        The kernel matrices, kernels first: ``kernels[k][i, j]`` is kernel
        ``k`` between sample ``i`` and training sample ``j``. Arrays and
        memory maps (``np.load(path, mmap_mode="r")``) are kept as they are,
        not copied.

    Attributes
    ----------
    kernels : ndarray or list of ndarray
        The wrapped matrices, kernels first.
    shape : tuple of int
        ``(n_rows, n_cols, n_kernels)``: samples first, as scikit-learn's
        pairwise splitting expects.
    n_kernels : int

    Notes
    -----
    Indexing with two index arrays (``stack[np.ix_(rows, cols)]``, what
    scikit-learn's ``_safe_split`` does) or with rows only (``stack[rows]``,
    all columns) returns a new :class:`KernelStack` holding a copy of that
    block of every kernel. ``np.asarray(stack)`` is the kernels-first array
    ``(n_kernels, n_rows, n_cols)``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.model_selection import cross_val_score
    >>> from mklopt import KernelStack, MKLClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((40, 3))
    >>> y = np.where(X[:, 0] > 0, 1, -1)
    >>> K = np.stack([X @ X.T, np.exp(-((X[:, None] - X[None]) ** 2).sum(-1))])
    >>> stack = KernelStack(K)
    >>> stack.shape
    (40, 40, 2)
    >>> stack[np.ix_([0, 1, 2], [3, 4])].shape
    (3, 2, 2)
    >>> scores = cross_val_score(MKLClassifier(kernels="precomputed", C=10.0), stack, y, cv=3)
    >>> scores.shape
    (3,)
    """

    def __init__(self, kernels):
        self.kernels = _as_stack(kernels, "kernels")

    @property
    def n_kernels(self):
        return len(self.kernels)

    @property
    def shape(self):
        n_rows, n_cols = self.kernels[0].shape
        return (int(n_rows), int(n_cols), self.n_kernels)

    @property
    def ndim(self):
        return 3

    def __len__(self):
        return self.shape[0]

    def __getitem__(self, key):
        if isinstance(key, numbers.Integral):
            raise IndexError("index a KernelStack with an array of rows, not a single integer")
        if isinstance(key, tuple):
            if len(key) != 2:
                raise IndexError("index a KernelStack with rows, or with (rows, cols)")
            rows, cols = (np.asarray(k).ravel() for k in key)
        else:
            rows, cols = np.asarray(key).ravel(), None
        for idx in (rows, cols):
            if idx is not None and idx.dtype.kind not in "iu":
                raise IndexError("a KernelStack is indexed by integer arrays (np.ix_(rows, cols))")
        blocks = [np.asarray(k[rows]) if cols is None else np.asarray(k[np.ix_(rows, cols)])
                  for k in self.kernels]
        return KernelStack(np.stack(blocks))

    def __array__(self, dtype=None, copy=None):
        out = self.kernels if isinstance(self.kernels, np.ndarray) else np.stack(self.kernels)
        return out if dtype is None else out.astype(dtype)

    def __repr__(self):
        n_rows, n_cols, m = self.shape
        return f"KernelStack(n_kernels={m}, n_rows={n_rows}, n_cols={n_cols})"


@dataclass(frozen=True)
class PrecomputedKernel:
    """Stands for kernel ``index`` of a precomputed stack in ``kernel_specs_``."""

    index: int
    #: Precomputed kernels belong to no feature set (``groups="features"``: one group).
    features = None

    def __repr__(self):
        return f"precomputed[{self.index}]"
