"""The bundled binary sets under the level paper's protocol.

A random half split (seed ``split``) standardised on the training half, and
the paper's grid (:func:`mklopt.kernels.grid`, ``protocol="level2008"``:
13 (d + 1) kernels, unit trace). ``n_features`` keeps the first features
only (a smaller grid, for smoke runs).
"""

from benchopt import BaseDataset

from mklopt import datasets
from mklopt.kernels import grid


class Dataset(BaseDataset):
    name = "bundled"
    parameters = {"data": ["ionosphere", "sonar"], "split": [0], "n_features": [None]}

    def get_data(self):
        X, y = datasets.load(self.data)
        X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=self.split)
        d = self.n_features or X.shape[1]
        X_tr, X_te = X_tr[:, :d], X_te[:, :d]
        specs = list(grid(d, protocol="level2008"))
        return dict(X=X_tr, y=y_tr, specs=specs, X_test=X_te, y_test=y_te)
