"""Figures of fitted estimators (needs matplotlib: ``pip install "mklopt[plot]"``)."""

from __future__ import annotations

import numpy as np

from ._optional import require
from .estimators._names import estimator_kernel_names, estimator_views, kernel_family

__all__ = ["weights"]

_FAMILY_COLORS = {"rbf": "tab:blue", "poly": "tab:orange", "linear": "tab:green",
                  "precomputed": "tab:purple"}
#: Inches per character of a tick label at font size 8 (a generous bound, so
#: the figure is made wide enough for its names).
_CHAR_IN = 0.075
_FONT = 8


def _pair_order(W):
    """Rows of ``W`` ordered so that similar weight vectors sit together (average linkage)."""
    if W.shape[0] < 3:
        return np.arange(W.shape[0])
    from scipy.cluster.hierarchy import leaves_list, linkage

    return leaves_list(linkage(W, method="average", metric="euclidean"))


def _spread(vals):
    """Error bars of the columns of ``vals`` around their means, and what they show.

    The range over the pairs for fewer than 5 pairs; the interquartile
    range (25th to 75th percentile) above, where one pair's extreme weight
    would stretch a range over the whole axis.
    """
    m = vals.mean(axis=0)
    if vals.shape[0] == 1:
        return None, ""
    if vals.shape[0] < 5:
        lo, hi, what = vals.min(axis=0), vals.max(axis=0), "min to max"
    else:
        lo, hi = np.percentile(vals, [25.0, 75.0], axis=0)
        what = "25th to 75th percentile"
    return np.vstack([np.maximum(m - lo, 0.0), np.maximum(hi - m, 0.0)]), what


def weights(estimator, top_k=20, max_views=12):
    """The kernel weights of a fitted estimator: per view, per kernel, and per pair.

    Parameters
    ----------
    estimator : fitted MKL estimator
        :class:`~mklopt.MKLClassifier`, :class:`~mklopt.MKLClassifierCV`
        (its refitted model), :class:`~mklopt.MKLRegressor`, ... or any
        object with ``kernel_specs_`` and ``weights_``.
    top_k : int, default=20
        The kernels shown one by one (those with the largest mean weight);
        the panel of views accounts for all of them.
    max_views : int, default=12
        At most this many views get a bar of their own (those with the
        largest mean total weight); the others share one bar.

    Returns
    -------
    matplotlib.figure.Figure
        Up to three panels, all with horizontal names that are never cut
        (the figure is sized to them):

        * **weight per view**: the total weight of each view's kernels,
          averaged over the one-vs-one pairs, with their spread over the
          pairs as error bars (the range for fewer than 5 pairs, else the
          interquartile range); with ``multiclass="shared"`` the one shared vector
          (no spread), with one problem its weights;
        * **largest kernel weights**: the ``top_k`` kernels, coloured by
          family, with the same spread;
        * **weights per pair** (more than one pair of per-pair weights): a
          heat map of the pairs over those kernels, the pairs ordered by a
          hierarchical clustering of their weight vectors so that pairs
          that weigh the kernels alike sit together; legible for 45 pairs.
    """
    plt = require("matplotlib.pyplot", "mklopt.plot.weights")
    est = getattr(estimator, "best_estimator_", estimator)
    specs = list(est.kernel_specs_)
    W = np.atleast_2d(np.asarray(est.weights_, dtype=np.float64))
    names = estimator_kernel_names(est)
    views = estimator_views(est)
    fams = [kernel_family(s) for s in specs]
    pairs = getattr(est, "pairs_", None)
    n_pairs = 1 if pairs is None else len(pairs)
    shared = n_pairs > 1 and W.shape[0] == 1
    mean = W.mean(axis=0)

    # -- views: total weight per pair, summed over each view's kernels
    order = list(dict.fromkeys(views))
    V = np.column_stack([W[:, [k for k in range(len(specs)) if views[k] == v]].sum(axis=1)
                         for v in order])
    rank = np.argsort(-V.mean(axis=0), kind="stable")
    shown = [int(i) for i in rank[:max_views]]
    labels = [order[i] for i in shown]
    vals = V[:, shown]
    hidden = [int(i) for i in rank[max_views:]]
    if hidden:
        labels.append(f"{len(hidden)} more views")
        vals = np.column_stack([vals, V[:, hidden].sum(axis=1)])

    # -- kernels: the top_k by mean weight (those with any weight)
    top = [int(k) for k in np.argsort(-mean, kind="stable")[:top_k] if mean[k] > 0.0]
    heat = W.shape[0] > 1 and len(top) > 0

    longest = max([len(s) for s in labels] + [len(names[k]) for k in top] + [10])
    left = _CHAR_IN * longest
    width = max(6.5, left + 4.5)
    h_views = 0.8 + 0.24 * len(labels)
    h_kernels = 0.8 + 0.22 * max(1, len(top))
    heights = [h_views, h_kernels]
    if heat:
        pair_labels = ([f"{est.classes_[i]} vs {est.classes_[j]}" for i, j in pairs]
                       if pairs is not None and hasattr(est, "classes_")
                       else [f"pair {p}" for p in range(W.shape[0])])
        left = max(left, _CHAR_IN * max(len(s) for s in pair_labels))
        # rows of 0.17 in, and room below for the vertical kernel names
        heights.append(1.0 + 0.17 * W.shape[0] + _CHAR_IN * max(len(names[k]) for k in top))
    fig = plt.figure(figsize=(width, sum(heights)), layout="constrained")
    grid = fig.add_gridspec(len(heights), 1, height_ratios=heights)

    ax = fig.add_subplot(grid[0])
    y = np.arange(len(labels))
    vm = vals.mean(axis=0)
    err, spread = _spread(vals)
    ax.barh(y, vm, xerr=err, color="tab:gray", capsize=2)
    ax.set_yticks(y, labels, fontsize=_FONT)
    ax.invert_yaxis()
    ax.set_xlabel("total weight of the view's kernels", fontsize=_FONT)
    if shared:
        what = f"the shared weights of all {n_pairs} pairs"
    elif W.shape[0] > 1:
        what = f"mean over {W.shape[0]} pairs, bars: {spread}"
    else:
        what = "one problem"
    ax.set_title(f"weight per view ({what})", fontsize=_FONT + 1)

    ax = fig.add_subplot(grid[1])
    y = np.arange(len(top))
    err, _ = _spread(W[:, top])
    ax.barh(y, mean[top], xerr=err, capsize=2,
            color=[_FAMILY_COLORS.get(fams[k], "tab:gray") for k in top])
    ax.set_yticks(y, [names[k] for k in top], fontsize=_FONT)
    ax.invert_yaxis()
    ax.set_xlabel("weight", fontsize=_FONT)
    present = list(dict.fromkeys(fams[k] for k in top))
    handles = [plt.Rectangle((0, 0), 1, 1, color=_FAMILY_COLORS.get(f, "tab:gray"))
               for f in present]
    if handles:
        ax.legend(handles, present, fontsize=_FONT - 1, loc="upper left",
                  bbox_to_anchor=(1.01, 1.0), frameon=False)
    ax.set_title(f"largest kernel weights (top {len(top)} of {len(specs)})",
                 fontsize=_FONT + 1)

    if heat:
        ax = fig.add_subplot(grid[2])
        rows = _pair_order(W[:, top])
        img = ax.imshow(W[np.ix_(rows, top)], aspect="auto", cmap="viridis",
                        interpolation="nearest")
        ax.set_xticks(range(len(top)), [names[k] for k in top], rotation=90,
                      fontsize=_FONT - 1)
        ax.set_yticks(range(len(rows)), [pair_labels[r] for r in rows],
                      fontsize=_FONT - 1 if len(rows) <= 30 else _FONT - 2)
        ax.set_title("weights per one-vs-one pair (pairs clustered by their weights)",
                     fontsize=_FONT + 1)
        fig.colorbar(img, ax=ax, shrink=0.8)
    return fig
