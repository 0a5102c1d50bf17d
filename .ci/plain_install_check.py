"""What a plain ``pip install .`` (no extras) must do: the README's example and every estimator.

Run by ``.ci/run`` in a virtualenv with the runtime dependencies only
(numpy, scipy, numba, ecos): no scikit-learn, Dask, pandas or matplotlib.
It runs the README's first Python example as written, then fits every
public estimator on a small problem, once on features and, where the
estimator takes them, once on precomputed kernels, and checks that each
model is certified and predicts better than chance.

Usage: python .ci/plain_install_check.py README.md
"""

import re
import sys
import warnings
from pathlib import Path

import numpy as np

OPTIONAL = ("sklearn", "distributed", "dask", "pandas", "matplotlib", "cvxpy", "tqdm")


def readme_example(readme):
    """The README's first ``python`` code block."""
    blocks = re.findall(r"```python\n(.*?)```", Path(readme).read_text(), flags=re.S)
    if not blocks:
        raise SystemExit(f"{readme} has no python example")
    return blocks[0]


def main(readme):
    import mklopt
    from mklopt import (
        MKBoostClassifier,
        MKLClassifier,
        MKLClassifierCV,
        MKLOneClass,
        MKLRegressor,
        MKLRegressorCV,
        datasets,
    )
    from mklopt.kernels import KernelBank, linear, rbf

    present = [m for m in OPTIONAL if m in sys.modules]
    print("README example:")
    exec(compile(readme_example(readme), readme, "exec"), {})

    X, y = datasets.load("ionosphere")
    X, y = X[:120], y[:120]
    specs = [rbf(2.0), rbf(8.0), linear()]
    bank = KernelBank.from_specs((X - X.mean(0)) / (X.std(0) + 1e-12), specs, normalize=None)
    n = X.shape[0]
    K = bank.blocks(np.arange(len(specs)), np.arange(n), np.arange(n))
    t = X[:, 2] - 0.5 * X[:, 4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # small problems: a CV point may stop short of tol
        fits = [
            ("MKLClassifier", MKLClassifier().fit(X, y), X, y),
            ("MKLClassifier precomputed", MKLClassifier(kernels="precomputed").fit(K, y), K, y),
            ("MKLClassifierCV", MKLClassifierCV(cv=3).fit(X, y), X, y),
            ("MKLClassifierCV precomputed",
             MKLClassifierCV(kernels="precomputed", cv=3).fit(K, y), K, y),
            ("MKBoostClassifier", MKBoostClassifier(n_rounds=5, random_state=0).fit(X, y), X, y),
            ("MKLRegressor", MKLRegressor().fit(X, t), X, t),
            ("MKLRegressorCV", MKLRegressorCV(cv=3).fit(X, t), X, t),
            ("MKLOneClass", MKLOneClass(kernels=specs, nu=0.2).fit(X), X, None),
        ]
    for name, est, Xf, yf in fits:
        if yf is None:
            score = float(np.mean(est.predict(Xf) == 1))
            ok = 0.6 <= score <= 0.95
        else:
            score = float(est.score(Xf, yf))
            ok = score > (0.3 if "Regressor" in name else 0.7)  # R2, or accuracy
        print(f"{name:32s} training score {score:.3f}")
        if not ok:
            raise SystemExit(f"{name}: training score {score:.3f} is no real model")
    leaked = [m for m in OPTIONAL if m in sys.modules and m not in present]
    print("mklopt", mklopt.__version__, "fits every estimator with no extras installed")
    if leaked:
        raise SystemExit(f"optional packages imported: {leaked}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "README.md")
