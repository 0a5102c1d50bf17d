"""The estimators at their defaults: binary, multiclass, regression, one-class, precomputed."""

import numpy as np

from mklopt import MKLClassifier, MKLOneClass, MKLRegressor
from mklopt.bench.runs import protocol_bank

from .common import CONFIG, Fit, estimator_metrics, paper_split, split


class Binary(Fit):
    """``MKLClassifier()`` on the paper's sets (raw features: it standardises them)."""

    params = [CONFIG["datasets"]]
    param_names = ["dataset"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name):
        X_tr, X_te, y_tr, y_te = paper_split(name)
        return (lambda: MKLClassifier().fit(X_tr, y_tr)), estimator_metrics(X_te, y_te)


class Multiclass(Fit):
    """``MKLClassifier()`` one-vs-one on satellite (6 classes, 15 pairs)."""

    params = [["satellite"]]
    param_names = ["dataset"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name):
        X_tr, X_te, y_tr, y_te = split(name, CONFIG["multiclass_n"])
        return (lambda: MKLClassifier().fit(X_tr, y_tr)), estimator_metrics(X_te, y_te)


class Regression(Fit):
    """``MKLRegressor()`` (epsilon-insensitive loss) on diabetes; the score is R^2."""

    params = [["diabetes"]]
    param_names = ["dataset"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name):
        X_tr, X_te, y_tr, y_te = split(name, CONFIG["n_train"])
        return (lambda: MKLRegressor().fit(X_tr, y_tr)), estimator_metrics(X_te, y_te)


class OneClass(Fit):
    """``MKLOneClass()`` on one class; the score is the balanced accuracy of inlier/outlier."""

    params = [CONFIG["datasets"]]
    param_names = ["dataset"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name):
        X_tr, X_te, y_tr, y_te = paper_split(name)

        def metrics(est):
            pred = est.predict(X_te)
            score = 0.5 * (np.mean(pred[y_te == 1] == 1) + np.mean(pred[y_te != 1] == -1))
            return dict(score=score, oracle_calls=est.n_oracle_calls_, gap=est.gap_)

        return (lambda: MKLOneClass().fit(X_tr[y_tr == 1])), metrics


class Precomputed(Fit):
    """``MKLClassifier(kernels="precomputed")``: the paper's grid as matrices, PSD check and all."""

    params = [CONFIG["datasets"]]
    param_names = ["dataset"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name):
        X_tr, X_te, y_tr, y_te = paper_split(name)
        bank = protocol_bank(X_tr)
        K_tr = np.ascontiguousarray(bank.blocks(np.arange(bank.n_kernels), np.arange(len(y_tr))))
        K_te = np.ascontiguousarray(bank.cross(X_te))
        fit = lambda: MKLClassifier(kernels="precomputed", C=100.0).fit(K_tr, y_tr)  # noqa: E731
        return fit, estimator_metrics(K_te, y_te)
