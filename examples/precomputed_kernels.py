"""Kernels computed elsewhere: fit MKL on matrices with ``kernels="precomputed"``.

Base kernels often come from another tool (string kernels, graph kernels, a
similarity a domain expert wrote). Here three kernels are computed with
scikit-learn's pairwise functions, saved with ``np.save`` as one
``(n_kernels, n, n)`` stack, memory-mapped back (the fit reads them in
place, never copying the file), and fitted with
``MKLClassifier(kernels="precomputed")``. Prediction takes the same kernels
between the test and the training samples, ``(n_kernels, n_test, n)``.

The fit is then repeated by hand, composing ``KernelBank.from_matrices``,
the SVM dual oracle and the level method: the weights agree. Last,
``KernelStack`` lets scikit-learn's ``cross_val_score`` split the stack.

    python examples/precomputed_kernels.py
"""

import pathlib
import tempfile

import numpy as np
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel
from sklearn.model_selection import cross_val_score

from mklopt import KernelBank, KernelStack, MKLClassifier, datasets, solve
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap, MaxIter


def kernels(A, B):
    """The base kernels between the rows of A and of B, kernels first."""
    return np.stack([
        rbf_kernel(A, B, gamma=0.05),
        polynomial_kernel(A, B, degree=2, coef0=1.0),
        linear_kernel(A, B),
    ])


def main():
    X, y = datasets.load("ionosphere")
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=0)
    mean, sd = X_tr.mean(axis=0), X_tr.std(axis=0)
    sd[sd == 0] = 1.0
    X_tr, X_te = (X_tr - mean) / sd, (X_te - mean) / sd

    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "train_kernels.npy"
        np.save(path, kernels(X_tr, X_tr))
        K_train = np.load(path, mmap_mode="r")  # read in place by the fit
        print(f"training kernels: {type(K_train).__name__} of shape {K_train.shape}")

        clf = MKLClassifier(kernels="precomputed", C=10.0, tol=1e-3).fit(K_train, y_tr)
        K_test = kernels(X_te, X_tr)  # (n_kernels, n_test, n_train)
        print(f"weights {np.round(clf.weights_, 4)}, relative gap {clf.gap_:.2e}")
        print(f"test accuracy {clf.score(K_test, y_te):.3f}")

        # The same problem composed by hand: the estimator normalises each
        # kernel to a unit mean diagonal on the training set and runs the
        # level method at an SMO tolerance of tol / 100.
        bank = KernelBank.from_matrices(K_train, normalize="diagonal")
        y_pm = np.where(y_tr == clf.classes_[1], 1.0, -1.0)
        res = solve(SVMDual(bank, y_pm, C=10.0, tol=1e-5), LevelBundle(),
                    stop=DualityGap(1e-3) | MaxIter(500))
        diff = float(np.max(np.abs(res.weights - clf.weights_)))
        print(f"by hand: weights {np.round(res.weights, 4)}, max difference {diff:.1e}")
        assert diff < 1e-8

        # scikit-learn's splitters see the stack samples first.
        scores = cross_val_score(MKLClassifier(kernels="precomputed", C=10.0),
                                 KernelStack(K_train), y_tr, cv=5)
        print(f"5-fold cross-validation accuracy {scores.mean():.3f}")


if __name__ == "__main__":
    main()
