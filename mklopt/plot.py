"""Figures of fitted estimators (needs matplotlib: ``pip install "mklopt[plot]"``)."""

from __future__ import annotations

import numpy as np

from ._optional import require
from .estimators._names import kernel_family, kernel_names, kernel_view

__all__ = ["weights"]

_FAMILY_COLORS = {"rbf": "tab:blue", "poly": "tab:orange", "linear": "tab:green",
                  "precomputed": "tab:purple"}


def weights(estimator, max_views=12):
    """Bar charts of a fitted estimator's kernel weights per view, and a heat map over pairs.

    Parameters
    ----------
    estimator : fitted MKLClassifier, MKLClassifierCV or any estimator with
        ``kernel_specs_`` and ``weights_``
    max_views : int, default=12
        At most this many views (feature sets) get a bar chart, those with
        the largest total weight; the others are summed in the title.

    Returns
    -------
    matplotlib.figure.Figure
        One bar chart per view (kernels coloured by family, weights averaged
        over the one-vs-one pairs, the range over the pairs as error bars)
        and, with more than one pair, a heat map of the weights (pairs by
        kernels with a non-zero weight).
    """
    plt = require("matplotlib.pyplot", "mklopt.plot.weights")
    est = getattr(estimator, "best_estimator_", estimator)
    specs = list(est.kernel_specs_)
    W = np.atleast_2d(np.asarray(est.weights_, dtype=np.float64))
    names = kernel_names(specs)
    views = [kernel_view(s) for s in specs]
    fams = [kernel_family(s) for s in specs]
    mean = W.mean(axis=0)
    order = []
    for v in views:
        if v not in order:
            order.append(v)
    totals = {v: float(sum(mean[k] for k in range(len(specs)) if views[k] == v)) for v in order}
    shown = sorted(order, key=lambda v: -totals[v])[:max_views]
    shown = [v for v in order if v in shown]
    heat = W.shape[0] > 1
    n_cols = min(4, len(shown))
    n_rows = -(-len(shown) // n_cols) + (1 if heat else 0)
    fig = plt.figure(figsize=(4.0 * n_cols, 3.0 * n_rows), layout="constrained")
    grid = fig.add_gridspec(n_rows, n_cols)
    for i, v in enumerate(shown):
        ax = fig.add_subplot(grid[i // n_cols, i % n_cols])
        ks = [k for k in range(len(specs)) if views[k] == v]
        lo, hi = W.min(axis=0)[ks], W.max(axis=0)[ks]
        ax.bar(range(len(ks)), mean[ks], color=[_FAMILY_COLORS.get(fams[k], "tab:gray")
                                                for k in ks],
               yerr=np.vstack([mean[ks] - lo, hi - mean[ks]]) if heat else None)
        ax.set_xticks(range(len(ks)), [names[k].split("[")[0] for k in ks], rotation=60,
                      fontsize=7)
        ax.set_title(f"view {v} (total {totals[v]:.3f})", fontsize=9)
        ax.set_ylabel("weight")
    hidden = [v for v in order if v not in shown]
    if hidden:
        fig.suptitle(f"{len(hidden)} more views, total weight "
                     f"{sum(totals[v] for v in hidden):.3f}")
    if heat:
        ax = fig.add_subplot(grid[n_rows - 1, :])
        used = np.flatnonzero(W.max(axis=0) > 0.0)
        img = ax.imshow(W[:, used], aspect="auto", cmap="viridis")
        ax.set_xticks(range(used.size), [names[k] for k in used], rotation=60, fontsize=7)
        classes = getattr(est, "classes_", None)
        pairs = getattr(est, "pairs_", None)
        if classes is not None and pairs is not None:
            ax.set_yticks(range(W.shape[0]),
                          [f"{classes[i]} vs {classes[j]}" for i, j in pairs], fontsize=7)
        ax.set_title("weights per one-vs-one pair", fontsize=9)
        fig.colorbar(img, ax=ax)
    return fig
