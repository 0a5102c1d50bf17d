"""A case whose kernels are never stored: letter with the paper's grid, computed on the fly.

221 kernels (16 features) on ``scale_n`` points: stored densely that would
be ``221 n^2`` doubles (7 GB at n = 2,000); ``storage="on_the_fly"``
recomputes the rows the SMO asks for. ``peakmem_fit`` is the number to watch.
"""

from mklopt import MKLClassifier
from mklopt.kernels import grid

from .common import C_PAPER, CONFIG, Fit, estimator_metrics, split


class OnTheFly(Fit):
    params = [["letter"], [CONFIG["scale_n"]]]
    param_names = ["dataset", "n_train"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name, n):
        X_tr, X_te, y_tr, y_te = split(name, n)
        X_te, y_te = X_te[:2000], y_te[:2000]
        est = MKLClassifier(kernels=list(grid(X_tr.shape[1], protocol="level2008")), C=C_PAPER,
                            normalize="trace", storage="on_the_fly")
        return (lambda: est.fit(X_tr, y_tr)), estimator_metrics(X_te, y_te)
