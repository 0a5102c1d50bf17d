"""Named kernel weights: names, the table by view and family, the figure."""

import warnings

import numpy as np
import pytest

from mklopt import MKLClassifier, MKLClassifierCV, datasets
from mklopt.estimators import _names
from mklopt.estimators._names import kernel_name, weights_table
from mklopt.estimators._precomputed import PrecomputedKernel
from mklopt.kernels import linear, poly, rbf

SPECS = [rbf(1.0), rbf(4.0), poly(2), linear(), rbf(2.0, features=[3]), poly(2, features=[3]),
         linear(features=[0, 2])]


@pytest.fixture(scope="module")
def fitted():
    X, y = datasets.load("satellite")
    keep = np.flatnonzero(np.isin(y, np.unique(y)[:3]))[:150]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return MKLClassifier(kernels=SPECS, standardize=True).fit(X[keep], y[keep])


def test_names():
    assert [kernel_name(s) for s in SPECS] == [
        "rbf(1)[all]", "rbf(4)[all]", "poly(2)[all]", "linear[all]", "rbf(2)[f3]",
        "poly(2)[f3]", "linear[f0,f2]"]
    assert kernel_name(PrecomputedKernel(2)) == "precomputed[2]"


def test_table_groups_and_averages_over_pairs(fitted):
    W = np.atleast_2d(fitted.weights_)
    assert W.shape == (3, len(SPECS))
    table = fitted.kernel_weights_
    assert list(table["view"]) == ["all"] * 4 + ["f0,f2", "f3", "f3"]
    idx = np.asarray(table["index"])
    np.testing.assert_allclose(table["weight"], W.mean(axis=0)[idx])
    np.testing.assert_allclose(table["weight_min"], W.min(axis=0)[idx])
    np.testing.assert_allclose(table["weight_max"], W.max(axis=0)[idx])
    assert list(table["kernel"]) == [fitted.kernel_names_[k] for k in idx]
    # Within a view, families are together.
    fam = list(table["family"])[:4]
    assert fam == sorted(fam)
    assert float(np.sum(table["weight"])) == pytest.approx(1.0)  # L1: each pair sums to 1


def test_table_without_pandas(fitted, monkeypatch):
    monkeypatch.setattr(_names, "optional", lambda name: None)
    rec = weights_table(fitted.kernel_specs_, fitted.weights_)
    assert isinstance(rec, np.recarray)
    assert rec.dtype.names == ("kernel", "view", "family", "parameter", "index", "weight",
                               "weight_min", "weight_max")
    pd = pytest.importorskip("pandas")
    monkeypatch.undo()
    df = fitted.kernel_weights_
    assert isinstance(df, pd.DataFrame)
    np.testing.assert_allclose(rec.weight, df["weight"])


def test_unfitted_has_no_names():
    assert not hasattr(MKLClassifier(), "kernel_names_")
    assert not hasattr(MKLClassifier(), "kernel_weights_")


def test_cv_estimator_delegates():
    X, y = datasets.load("ionosphere")
    cv = MKLClassifierCV(Cs=[1.0, 10.0], cv=3, kernels=SPECS[:4], standardize=True).fit(X, y)
    assert cv.kernel_names_ == cv.best_estimator_.kernel_names_
    np.testing.assert_allclose(cv.kernel_weights_["weight"],
                               cv.best_estimator_.kernel_weights_["weight"])


def test_plot_weights(fitted):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from mklopt import plot

    fig = plot.weights(fitted)
    titles = [ax.get_title() for ax in fig.axes]
    # The views, the largest kernels, the heat map over the 3 pairs (and its colour bar).
    assert titles[0].startswith("weight per view (mean over 3 pairs")
    assert titles[1].startswith("largest kernel weights")
    assert titles[2].startswith("weights per one-vs-one pair")
    bars = fig.axes[1]
    W = np.atleast_2d(fitted.weights_).mean(axis=0)
    top = [fitted.kernel_names_.index(t.get_text()) for t in bars.get_yticklabels()]
    np.testing.assert_allclose([p.get_width() for p in bars.patches], W[top])
    assert list(W[top]) == sorted(W[top], reverse=True)
    matplotlib.pyplot.close(fig)
