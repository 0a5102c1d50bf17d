"""Kernel specs, the papers' kernel grids, kernel functions and the KernelBank.

Examples
--------
>>> import numpy as np
>>> from mklopt.kernels import KernelBank, grid
>>> X = np.random.default_rng(0).standard_normal((30, 4))
>>> bank = KernelBank.from_specs(X, grid(X.shape[1]))
>>> bank.n_kernels
65
"""

from .bank import KernelBank, as_bank
from .columns import channel_views, feature_views, flatten_channels
from .expansion import KernelExpansion
from .factory import (
    STORAGES,
    Storage,
    StorageEntry,
    auto_storage,
    get_storage,
    make_storage,
    register_storage,
    storage_names,
)
from .families import (
    KernelFamily,
    KernelSpec,
    get_kernel_family,
    kernel,
    kernel_family_names,
    parse_kernel,
    register_kernel_family,
)
from .feature_maps import FeatureMap, FeatureMapFunctions, nystroem, random_fourier
from .functions import KernelFunctions
from .sharded import ShardedStorage, ShardLostError
from .specs import RBF, Linear, Poly, grid, linear, poly, random_rbf, rbf
from .stack import KernelStack

__all__ = [
    "KernelBank",
    "as_bank",
    "KernelStack",
    "KernelFunctions",
    "KernelExpansion",
    "FeatureMapFunctions",
    "FeatureMap",
    "nystroem",
    "random_fourier",
    "ShardedStorage",
    "ShardLostError",
    "STORAGES",
    "Storage",
    "StorageEntry",
    "register_storage",
    "get_storage",
    "storage_names",
    "make_storage",
    "auto_storage",
    "rbf",
    "poly",
    "linear",
    "grid",
    "random_rbf",
    "RBF",
    "Poly",
    "Linear",
    "KernelFamily",
    "KernelSpec",
    "register_kernel_family",
    "get_kernel_family",
    "kernel_family_names",
    "kernel",
    "parse_kernel",
    "feature_views",
    "channel_views",
    "flatten_channels",
]
