"""Write the saved-model fixtures ``format_<kind>.npz`` of tests/test_persist_formats.py.

The files in this folder were written by this script with the code of commit
bf0a741 (``main`` before the estimators saved themselves):

    python tests/data/make_format_fixtures.py

They pin that code's file format, so do not re-run it to "refresh" them: a
file written by newer code proves nothing about older files.

Each fixture is a small model (a few KB) fitted on deterministic data, saved
with :func:`mklopt.persist.save_model`; its test inputs and the predictions
and decision values of the fitted model go into ``format_<kind>_expected.npz``.
The tests load each file with today's code and compare with both the recorded
values and a model fitted afresh with the same parameters.
"""

import pathlib
import warnings

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent


def problems():
    """``kind -> (estimator, X_train, y_train, X_test)``, all small and deterministic."""
    from mklopt import MKLClassifier, MKLOneClass, MKLRegressor
    from mklopt.kernels import KernelBank, linear, nystroem, poly, rbf

    rng = np.random.default_rng(21)
    X = rng.normal(size=(40, 4))
    Xt = rng.normal(size=(12, 4))
    y2 = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 > 0.3, "yes", "no")
    y3 = np.array([0, 1, 2])[(X[:, 0] > 0).astype(int) + (X[:, 2] > 0.4).astype(int)]
    yr = np.sin(X[:, 0]) + 0.3 * X[:, 1]
    specs = [rbf(1.0), rbf(4.0), linear(), poly(2, features=[0, 1])]
    raw = 3.0 * X + 5.0  # another scale: the default standardisation acts
    pre_specs = [rbf(1.0), rbf(3.0), linear()]
    both = np.vstack([X, Xt])
    K = KernelBank.from_specs(both, pre_specs, normalize=None).blocks(
        np.arange(3), np.arange(52), np.arange(40))
    return {
        "binary": (MKLClassifier(kernels=specs, method="level", C=10.0), X, y2, Xt),
        "binary_scaled": (MKLClassifier(max_iter=30), raw[:, :2], y2, 3.0 * Xt[:, :2] + 5.0),
        "multiclass": (MKLClassifier(kernels="grid", method="mirror", groups="features",
                                     C=5.0, tol=0.05), X[:, :2], y3, Xt[:, :2]),
        "shared": (MKLClassifier(kernels=specs, multiclass="shared", C=5.0), X, y3, Xt),
        "feature_map": (MKLClassifier(kernels=[rbf(1.0), linear([0])], C=10.0,
                                      storage=nystroem(15, random_state=1)), X, y2, Xt),
        "precomputed": (MKLClassifier(kernels="precomputed", elastic_net=0.5, C=10.0),
                        K[:, :40], y3, K[:, 40:46]),
        "regressor": (MKLRegressor(kernels=specs, C=10.0, epsilon=0.05), X, yr, Xt),
        "one_class": (MKLOneClass(kernels=[rbf(1.0), rbf(3.0)], nu=0.2), X, None, Xt),
    }


def outputs(est, X_test):
    out = {"predict": np.asarray(est.predict(X_test))}
    if hasattr(est, "decision_function"):
        out["decision"] = np.asarray(est.decision_function(X_test), dtype=np.float64)
    if out["predict"].dtype.kind in "OU":
        out["predict"] = out["predict"].astype(str)
    return out


def main():
    from mklopt.persist import save_model

    for kind, (est, X, y, Xt) in problems().items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X) if y is None else est.fit(X, y)
        save_model(est, HERE / f"format_{kind}.npz", label="target")
        np.savez_compressed(HERE / f"format_{kind}_expected.npz", X_test=Xt, **outputs(est, Xt))


if __name__ == "__main__":
    main()
