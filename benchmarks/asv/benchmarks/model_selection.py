"""The cross-validated estimators: ``C`` chosen on a grid by k-fold CV, then a refit."""

import numpy as np

from mklopt import MKLClassifierCV, MKLRegressorCV

from .common import CONFIG, Fit, paper_split, split


def cv_metrics(X_te, y_te):
    """The refit's test score, the oracle calls of the search (path and refit), the refit's gap."""

    def metrics(est):
        best = est.best_estimator_
        calls = np.sum(est.path_n_oracle_calls_) + np.sum(best.n_oracle_calls_)
        return dict(score=est.score(X_te, y_te), oracle_calls=calls, gap=np.max(best.gap_))

    return metrics


class ClassifierCV(Fit):
    params = [CONFIG["datasets"]]
    param_names = ["dataset"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name):
        X_tr, X_te, y_tr, y_te = paper_split(name)
        # C alone (formulations=None): the series measured before the formulation search
        est = MKLClassifierCV(Cs=CONFIG["cv_Cs"], cv=CONFIG["cv_folds"], formulations=None)
        return (lambda: est.fit(X_tr, y_tr)), cv_metrics(X_te, y_te)


class RegressorCV(Fit):
    params = [["diabetes"]]
    param_names = ["dataset"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name):
        X_tr, X_te, y_tr, y_te = split(name, CONFIG["n_train"])
        est = MKLRegressorCV(Cs=CONFIG["cv_Cs"], cv=CONFIG["cv_folds"], formulations=None)
        return (lambda: est.fit(X_tr, y_tr)), cv_metrics(X_te, y_te)
