"""A kernel storage of your own: one class and one registration line.

Every consumer (the SVM oracle, the outer methods, MKBoost's weak learners,
one-vs-one views, Dask shards) reads a bank's training kernels through five
verbs: the diagonal, rows and the whole of the combined kernel
K(w) = sum_k w_k K_k, the quadratic forms q_k = v_S' K_k[S, S] v_S, and
single-kernel blocks. A class with those verbs (the protocol
mklopt.kernels.Storage), registered under a name, is then a storage like the
built-in ones: KernelBank.from_specs(..., storage=name), the estimators'
storage=name, saved models and sharded banks all take it.

This one keeps the kernels in float32 (half the memory of "dense"), does all
arithmetic in float64 with plain NumPy, and counts what the solvers read.
"""

from collections import Counter

import numpy as np

from mklopt import KernelBank, MKLClassifier, datasets, solve
from mklopt.kernels import Storage, poly, rbf, register_storage
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.stopping import DualityGap


class Float32Storage:
    """The normalised kernels as one float32 array; every read is counted."""

    name = "float32_numpy"

    def __init__(self, functions, max_memory=None):
        m, n = functions.n_kernels, functions.n_samples
        if max_memory is not None and 4 * m * n * n > max_memory:
            raise MemoryError(f"{m} float32 kernels on {n} samples need {4 * m * n * n} bytes")
        # functions: the specs, their normalisation constants and the
        # training points; matrices() evaluates the normalised kernels.
        self.K = functions.matrices(dtype=np.float32)
        self.n_kernels, self.n_samples = m, n
        self.reads = Counter()

    @property
    def nbytes(self):
        return int(self.K.nbytes)

    def _combined(self, w, rows=slice(None)):
        nz = np.flatnonzero(w)  # kernels with zero weight are never read
        out = np.zeros((self.n_samples,) * 2)[rows]
        for k in nz:
            out += w[k] * self.K[k][rows].astype(np.float64)
        return out

    def diag(self, w):
        self.reads["diag"] += 1
        return np.einsum("k,kii->i", w, self.K, dtype=np.float64)

    def rows(self, w, idx, out):
        self.reads["rows"] += idx.size
        out[...] = self._combined(w, idx)
        return out

    def combine(self, w, out):
        self.reads["combine"] += 1
        out[...] = self._combined(w)
        return out

    def quad_forms(self, v, support, kernels=None):
        self.reads["quad_forms"] += 1
        ks = np.arange(self.n_kernels) if kernels is None else kernels
        vS = v[support]
        KS = self.K[np.ix_(ks, support, support)].astype(np.float64)
        return np.einsum("i,kij,j->k", vS, KS, vS)

    def blocks(self, kernels, rows, cols):
        self.reads["blocks"] += 1
        return self.K[np.ix_(kernels, rows, cols)].astype(np.float64)


register_storage("float32_numpy", Float32Storage)  # the one registration line


def main():
    X, y = datasets.load("ionosphere")
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=0)
    specs = [rbf(2.0**e) for e in range(-3, 7)] + [poly(d) for d in (1, 2, 3)]

    # A bank on it, and what one certified Level run reads from the storage.
    bank = KernelBank.from_specs(X_tr, specs, storage="float32_numpy")
    assert isinstance(bank.storage, Storage)
    res = solve(SVMDual(bank, y_tr, C=100.0), LevelBundle(), stop=DualityGap(1e-3))
    counts = ", ".join(f"{verb} {n}" for verb, n in sorted(bank.storage.reads.items()))
    print(f"{bank!r}: {bank.nbytes / 2**20:.2f} MiB, half of dense")
    print(f"Level on it: relative gap {res.rel_gap:.2e} after {res.n_oracle_calls} SVM calls; "
          f"reads: {counts}")

    # The estimators take the name as they take "dense".
    kw = dict(kernels=specs, C=100.0, tol=1e-4)
    mine = MKLClassifier(storage="float32_numpy", **kw).fit(X_tr, y_tr)
    dense = MKLClassifier(storage="dense", **kw).fit(X_tr, y_tr)
    f_mine, f_dense = mine.decision_function(X_te), dense.decision_function(X_te)
    diff = float(np.abs(f_mine - f_dense).max() / np.abs(f_dense).max())
    print(f"float32_numpy against dense: test accuracy {mine.score(X_te, y_te):.3f} "
          f"and {dense.score(X_te, y_te):.3f}, decision values within {diff:.1e} relative")


if __name__ == "__main__":
    main()
