"""The baseline: scikit-learn's SVC (libsvm) on the uniform average of the kernels.

No weights are learnt: the point is ``w = 1/m`` (AverageMKL), reached in the
time of one libsvm fit on the combined kernel.
"""

from benchopt import BaseSolver
from benchopt.stopping_criterion import SingleRunCriterion
from sklearn.svm import SVC


class Solver(BaseSolver):
    name = "svc-average"
    sampling_strategy = "run_once"
    stopping_criterion = SingleRunCriterion()
    requirements = ["pip::scikit-learn"]

    def set_objective(self, bank, y, C, p, domain):
        self.bank, self.y, self.C, self.domain = bank, y, C, domain

    def run(self, _):
        w = self.domain.initial()
        SVC(kernel="precomputed", C=self.C).fit(self.bank.combine(w), self.y)
        self.weights = w

    def get_result(self):
        return dict(weights=self.weights)
