"""The optional dependencies, imported when a feature that needs them runs.

mklopt needs numpy, scipy, numba and ecos. scikit-learn (the ``SVC``
baseline of the scale benchmark), cvxpy (the exact references of
:mod:`mklopt.testing`), matplotlib (figures), joblib and dask.distributed
(parallel and distributed runs) and tqdm (the estimators' progress bars)
are extras. A module-level import would make each of them required, and
would slow ``import mklopt`` down, so every module asks for them here, at
the point of use: :func:`optional` when the feature can do without (a
figure is skipped), :func:`require` when it cannot (the error says what to
install).
"""

from __future__ import annotations

import importlib

__all__ = ["optional", "require", "pyplot"]

#: How to install each optional top-level package.
_INSTALL = {
    "sklearn": "pip install scikit-learn",
    "cvxpy": 'pip install "mklopt[test]"',
    "matplotlib": 'pip install "mklopt[plot]"',
    "joblib": "pip install joblib (it comes with scikit-learn)",
    "distributed": 'pip install "mklopt[dask]"',
    "tqdm": 'pip install "mklopt[progress]"',
}


def optional(name):
    """The module ``name``, or None when it (or its package) is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def require(name, purpose):
    """The module ``name``, or an ImportError saying that ``purpose`` needs it and how to get it.

    Parameters
    ----------
    name : str
        A module, e.g. ``"sklearn.svm"``.
    purpose : str
        What needs it, as the start of a sentence (``"--scheduler"``).
    """
    module = optional(name)
    if module is None:
        package = name.split(".")[0]
        how = _INSTALL.get(package, f"pip install {package}")
        raise ImportError(f"{purpose} needs {package}, which is not installed; {how}")
    return module


def pyplot():
    """``matplotlib.pyplot`` drawing to files only (the Agg backend), or None without it."""
    matplotlib = optional("matplotlib")
    if matplotlib is None:
        return None
    matplotlib.use("Agg")
    return importlib.import_module("matplotlib.pyplot")
