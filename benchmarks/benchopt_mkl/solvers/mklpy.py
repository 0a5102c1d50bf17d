"""MKLpy's EasyMKL and AverageMKL on the same kernels (optional: ``pip install MKLpy``).

MKLpy (it pulls in PyTorch) is not a dependency: without it this solver is
skipped with the reason. EasyMKL (Aiolli and Donini 2015) learns its weights
by another criterion, so its point is evaluated on this objective like any
other, its weights scaled onto the feasible set.
"""

import numpy as np
from benchopt import BaseSolver
from benchopt.stopping_criterion import SingleRunCriterion

try:
    from MKLpy.algorithms import AverageMKL, EasyMKL
except ImportError:
    EasyMKL = AverageMKL = None


class Solver(BaseSolver):
    name = "mklpy"
    sampling_strategy = "run_once"
    stopping_criterion = SingleRunCriterion()
    parameters = {"algorithm": ["EasyMKL", "AverageMKL"]}
    requirements = ["pip::MKLpy"]

    def skip(self, bank, y, C, p, domain):
        if EasyMKL is None:
            return True, "MKLpy is not installed (optional; pip install MKLpy, which pulls PyTorch)"
        return False, None

    def set_objective(self, bank, y, C, p, domain):
        import torch

        m, n = bank.n_kernels, len(y)
        self.KL = [torch.tensor(K) for K in bank.blocks(np.arange(m), np.arange(n))]
        self.y, self.m = torch.tensor(y), m

    def run(self, _):
        algo = EasyMKL(lam=0.1) if self.algorithm == "EasyMKL" else AverageMKL()
        algo = algo.fit(self.KL, self.y)
        w = np.asarray(algo.solution.weights, dtype=np.float64).ravel()
        self.weights = w if w.size == self.m else np.full(self.m, 1.0 / self.m)

    def get_result(self):
        return dict(weights=self.weights)
