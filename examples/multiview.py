"""Multi-view MKL: one group of kernels per view (here per spectral band), read back by name.

The bundled ``satellite`` data (UCI Statlog Landsat) describe each sample by
a 3 x 3 neighbourhood of pixels seen in 4 spectral bands: 36 columns, pixel
by pixel, the 4 bands of each. As an ``(n, 4 bands, 9 pixels)`` array each
band is a channel, and MKL learns how much each band counts:

1. the per-view kernels: :func:`mklopt.kernels.flatten_channels` lays the
   bands side by side as column groups and gives each the same kernels;
2. the baselines: the uniform average of the same kernels (``method="lp",
   p=inf``), and one weight vector shared by all pairs of classes; then
   ``MKLClassifierCV`` choosing C and the formulation (L1, p = 2, p = inf,
   L1 shared) by cross-validation;
3. the weights read by view name (``kernel_weights_``, ``mklopt.plot``);
4. kernels from the wild: per-band sigmoid kernels, which are indefinite,
   given as a samples-first stack and repaired with ``psd="clip"``.

Run ``python examples/multiview.py --figure docs/figures/multiview_weights.png``
to write the figure of the docs page.
"""

import math
import sys
import time
import warnings

import numpy as np

from mklopt import MKLClassifier, MKLClassifierCV, datasets
from mklopt.kernels import flatten_channels, linear, rbf

BANDS = ["green", "red", "near-IR 1", "near-IR 2"]


def bands(X):
    """``(n, 36)`` satellite features as ``(n, 4 bands, 9 pixels)``."""
    return X.reshape(X.shape[0], 9, 4).transpose(0, 2, 1)


def fit(name, est, X_tr, y_tr, X_te, y_te):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a pair short of tol is reported by gap_
        est.fit(X_tr, y_tr)
    seconds = time.perf_counter() - t0
    print(f"{name:<34} test accuracy {est.score(X_te, y_te):.3f}  "
          f"(largest relative gap {np.max(est.gap_):.1e}, {seconds:.1f} s)")
    return est


def main(figure=None):
    X, y = datasets.load("satellite")
    X_tr, X_te, y_tr, y_te = datasets.split(X, y, train_fraction=0.5, seed=0)
    X_tr, y_tr, X_te, y_te = X_tr[:600], y_tr[:600], X_te[:1500], y_te[:1500]

    # 1. Per-band kernels: the bands side by side, 9 columns each.
    specs = [rbf(1.0), rbf(3.0), linear()]
    F_tr, kernels = flatten_channels(bands(X_tr), specs, names=BANDS)
    F_te = flatten_channels(bands(X_te))
    print(f"{len(kernels)} views x {len(specs)} kernels on {F_tr.shape[1]} columns, "
          f"{len(np.unique(y_tr))} classes")

    # 2. L1-MKL per pair of classes, its baselines, and shared weights.
    common = {"kernels": kernels, "standardize": True, "C": 10.0}
    l1 = fit("L1-MKL, weights per pair", MKLClassifier(**common), F_tr, y_tr, F_te, y_te)
    fit("uniform average (p = inf)", MKLClassifier(method="lp", p=math.inf, **common),
        F_tr, y_tr, F_te, y_te)
    fit("Lp-MKL, p = 2", MKLClassifier(method="lp", p=2.0, **common), F_tr, y_tr, F_te, y_te)
    shared = fit("L1-MKL, one vector for all pairs",
                 MKLClassifier(multiclass="shared", **common), F_tr, y_tr, F_te, y_te)

    # 2b. Or let cross-validation choose: C and the formulation together (L1,
    #     p = 2, the uniform average p = inf, and L1 shared), on the same folds.
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cv = MKLClassifierCV(kernels=kernels, standardize=True).fit(F_tr, y_tr)
    best = cv.best_params_
    print(f"MKLClassifierCV chose p={best['p']:g}, multiclass={best['multiclass']!r}, "
          f"C={best['C']:g}: test accuracy {cv.score(F_te, y_te):.3f} "
          f"({time.perf_counter() - t0:.1f} s)")
    res, n_c = cv.cv_results_, len(cv.Cs_)
    print("best CV accuracy per formulation:", ", ".join(
        f"p={f['p']:g} {f['multiclass']} {res['mean_test_score'][i * n_c:(i + 1) * n_c].max():.3f}"
        for i, f in enumerate(cv.formulations_)))

    # 3. The weights by view: each pair's total per band, averaged over pairs.
    table = l1.kernel_weights_
    views = np.asarray(table["view"])
    w = np.asarray(table["weight"])
    print("weight per band (mean over pairs):",
          ", ".join(f"{v} {w[views == v].sum():.3f}" for v in BANDS))
    ws, vs = np.atleast_2d(shared.weights_)[0], np.asarray(shared.kernel_views_)
    print("shared weights per band:", ", ".join(f"{v} {ws[vs == v].sum():.3f}" for v in BANDS))
    print("largest kernel:", l1.kernel_names_[int(np.argmax(np.atleast_2d(l1.weights_).mean(0)))])

    # 4. Indefinite kernels: a sigmoid kernel per band, samples first (n, n, 4),
    #    on the first 300 training points.
    mean, scale = F_tr.mean(axis=0), F_tr.std(axis=0)
    Z_tr, Z_te = (F_tr[:300] - mean) / scale, (F_te - mean) / scale
    y_tr = y_tr[:300]

    def sigmoid(A, B):
        return np.stack([np.tanh(A[:, 9 * b:9 * b + 9] @ B[:, 9 * b:9 * b + 9].T / 9.0 - 0.5)
                         for b in range(4)], axis=-1)

    K_tr, K_te = sigmoid(Z_tr, Z_tr), sigmoid(Z_te, Z_tr)
    clip = MKLClassifier(kernels="precomputed", kernel_axis=-1, psd="clip", C=10.0,
                         kernel_names=[f"sigmoid {b}" for b in BANDS])
    try:
        MKLClassifier(kernels="precomputed", kernel_axis=-1).fit(K_tr, y_tr)
    except ValueError as exc:
        print("psd='check' refuses them:", str(exc).split(". ")[0])
    fit("sigmoid kernels, psd='clip'", clip, K_tr, y_tr, K_te, y_te)
    clipped = [m.kind for m in clip.psd_maps_ if m is not None]
    print(f"{len(clipped)} of 4 sigmoid kernels clipped; names {clip.kernel_names_}")

    if figure is not None:
        import matplotlib

        matplotlib.use("Agg")
        from mklopt import plot

        plot.weights(l1).savefig(figure, dpi=100)
        shared_path = figure.replace(".png", "_shared.png")
        plot.weights(shared).savefig(shared_path, dpi=100)
        print(f"figures written to {figure} and {shared_path}")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[1] if len(args) == 2 and args[0] == "--figure" else None)
