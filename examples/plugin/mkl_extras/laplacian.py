"""A user's kernel family: the Laplacian kernel ``exp(-gamma |x - z|_1)``.

Written against mklopt's public API only (``KernelFamily`` and
``register_kernel_family``), in one file. Each entry comes from its own
pair (scipy's ``cdist``), so dense banks, on-the-fly rows and prediction
agree exactly. Importing this module registers the family as
``"laplacian"``: ``laplacian(0.5)`` or ``kernel("laplacian", gamma=0.5)``
build specs, and through the ``mklopt.kernels`` entry point of this package
``mklopt fit --kernels "laplacian(gamma=0.5); rbf(2.0)"`` and
``load_model`` find it without an import.
"""

import numpy as np
from scipy.spatial.distance import cdist

from mklopt.kernels import KernelFamily, register_kernel_family


class Laplacian(KernelFamily):
    """``exp(-gamma |x - z|_1)`` on a feature subset; ``gamma > 0``."""

    name = "laplacian"
    params = ("gamma",)

    def check(self, gamma):
        return {"gamma": self.check_real(gamma, "gamma", low=0.0, strict_low=True)}

    def block(self, A, B, gamma):
        return np.exp(-gamma * cdist(A, B, "cityblock"))

    def diag(self, A, gamma):
        return np.ones(A.shape[0])


laplacian = register_kernel_family(Laplacian())
