"""A multi-view problem: the features split into contiguous groups, one kernel family per view.

Each of ``n_views`` views (consecutive blocks of features, as sensors or
modalities would give) gets Gaussian kernels of widths 2^-3..2^6 times the
square root of its dimension and polynomial kernels of degrees 1..3, all on
that view only; no kernel sees two views. On a random half split of a
bundled set, standardised on the training half.
"""

import numpy as np
from benchopt import BaseDataset

from mklopt import datasets
from mklopt.kernels import poly, rbf


class Dataset(BaseDataset):
    name = "multiview"
    parameters = {"data": ["ionosphere"], "n_views": [4], "split": [0]}

    def get_data(self):
        X, y = datasets.load(self.data)
        X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=self.split)
        specs = []
        for view in np.array_split(np.arange(X.shape[1]), self.n_views):
            f = [int(i) for i in view]
            specs += [rbf(2.0**e * np.sqrt(len(f)), features=f) for e in range(-3, 7)]
            specs += [poly(deg, features=f) for deg in (1, 2, 3)]
        return dict(X=X_tr, y=y_tr, specs=specs, X_test=X_te, y_test=y_te)
