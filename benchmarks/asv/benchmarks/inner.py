"""The inner pieces against scikit-learn: the SMO against libsvm, kernels against ``rbf_kernel``."""

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.svm import SVC

from mklopt.bench.runs import protocol_bank
from mklopt.kernels import KernelBank, rbf
from mklopt.oracles import SVMDual

from .common import C_PAPER, CONFIG, paper_split


class SMO:
    """One SVM solve on the paper's grid at uniform weights: ``SVMDual`` against ``SVC``.

    Same float64 matrix, same C and KKT tolerance (1e-3); ``track_value_rel_diff``
    is ``|J_mklopt - J_libsvm| / J_libsvm`` of the two dual values.
    """

    params = [CONFIG["datasets"], ["mklopt", "libsvm"]]
    param_names = ["dataset", "solver"]
    number, repeat, warmup_time = 1, (3, 10, 20.0), 0.0

    def setup(self, name, solver):
        X_tr, _, self.y, _ = paper_split(name)
        self.bank = protocol_bank(X_tr)
        self.w = np.full(self.bank.n_kernels, 1.0 / self.bank.n_kernels)
        self.K = np.ascontiguousarray(self.bank.combine(self.w))
        self.oracle = SVMDual(self.bank, self.y, C=C_PAPER, tol=1e-3)
        self.run = self.mklopt if solver == "mklopt" else self.libsvm
        self.run()  # numba warm-up

    def mklopt(self):
        return self.oracle(self.w).value

    def libsvm(self):
        svc = SVC(kernel="precomputed", C=C_PAPER, tol=1e-3).fit(self.K, self.y)
        a = np.abs(svc.dual_coef_.ravel())
        Ka = self.K[np.ix_(svc.support_, svc.support_)]
        ya = self.y[svc.support_] * a
        return float(a.sum() - 0.5 * ya @ Ka @ ya)

    def time_solve(self, name, solver):
        self.run()

    def track_value_rel_diff(self, name, solver):
        ref = self.libsvm()
        return abs(self.run() - ref) / abs(ref)

    track_value_rel_diff.unit = "relative difference"


class GaussianKernel:
    """One Gaussian kernel matrix: ``KernelBank`` (dense storage) against ``rbf_kernel``."""

    params = [[200, 1000] if CONFIG["n_train"] is None else [100], ["mklopt", "sklearn"]]
    param_names = ["n", "library"]

    def setup(self, n, library):
        self.X = np.random.default_rng(0).normal(size=(n, 20))
        self.sigma = 2.0
        self.run = self.mklopt if library == "mklopt" else self.sklearn
        self.run()  # numba warm-up

    def mklopt(self):
        bank = KernelBank.from_specs(self.X, [rbf(self.sigma)], normalize=None, storage="dense")
        return bank.combine(np.ones(1))

    def sklearn(self):
        return rbf_kernel(self.X, gamma=0.5 / self.sigma**2)

    def time_kernel(self, n, library):
        self.run()

    def peakmem_kernel(self, n, library):
        self.run()

    def track_max_abs_diff(self, n, library):
        return float(np.max(np.abs(self.run() - self.sklearn())))

    track_max_abs_diff.unit = "max |K - K_sklearn|"
