"""Every registered method of the SVM dual under the level-method paper's protocol.

``mklopt bench --protocol level2008``: a random half split, the paper's grid
(Gaussian widths 2^-3..2^6, polynomial degrees 1..3, on all features and on
each single one, unit trace), C = 100, a relative gap of 1e-2 or 500
iterations. The methods are read from the registry (:func:`mklopt.bench.runs.dual_methods`).
"""

from mklopt.bench.runs import dual_methods, protocol_bank

from .common import CONFIG, Fit, paper_solve, paper_split, test_accuracy


class LevelProtocol(Fit):
    params = [CONFIG["datasets"], dual_methods()]
    param_names = ["dataset", "method"]

    def setup_cache(self):
        return self.fit_all()

    def make(self, name, key):
        X_tr, X_te, y_tr, y_te = paper_split(name)
        bank = protocol_bank(X_tr)

        def metrics(res):
            return dict(score=test_accuracy(bank, res, y_tr, X_te, y_te),
                        oracle_calls=res.n_oracle_calls, gap=res.rel_gap)

        return (lambda: paper_solve(bank, y_tr, key)), metrics
