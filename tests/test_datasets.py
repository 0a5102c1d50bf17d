"""Bundled data sets and the papers' split protocol."""

import numpy as np
import pytest

from mklopt import datasets

EXPECTED = {
    "ionosphere": (351, 34, 225),
    "sonar": (208, 60, 111),
    "pima": (768, 8, 268),
    "breast": (683, 9, 239),
    "vote": (435, 16, 267),
    "wdbc": (569, 30, 212),
}


def test_names():
    assert datasets.names() == tuple(EXPECTED)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_load_shapes_and_labels(name):
    X, y = datasets.load(name)
    n, d, n_pos = EXPECTED[name]
    assert X.shape == (n, d) and X.dtype == np.float64
    assert y.shape == (n,) and np.issubdtype(y.dtype, np.integer)
    assert set(np.unique(y).tolist()) == {-1, 1}
    assert int(np.sum(y == 1)) == n_pos
    assert np.all(np.isfinite(X))


def test_load_returns_fresh_copies():
    X1, y1 = datasets.load("sonar")
    X1[0, 0] = 1e9
    y1[0] = 7
    X2, y2 = datasets.load("sonar")
    assert X2[0, 0] != 1e9 and y2[0] in (-1, 1)


def test_load_reads_package_resources_not_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    X, _ = datasets.load("vote")
    assert X.shape == (435, 16)


def test_unknown_name_lists_names():
    with pytest.raises(ValueError, match="ionosphere.*wdbc"):
        datasets.load("iris")
    with pytest.raises(TypeError, match="name"):
        datasets.load(3)


def test_readme_cites_sources():
    from importlib import resources

    text = resources.files("mklopt.datasets").joinpath("data", "README.md").read_text()
    for word in ("Dua", "Graff", "Sigillito", "Gorman", "Wolberg", "Schlimmer", "Street"):
        assert word in text


@pytest.mark.parametrize("frac", [0.5, 0.3, 0.8])
def test_split_sizes_and_standardisation(frac):
    X, y = datasets.load("wdbc")
    Xtr, Xte, ytr, yte = datasets.split(X, y, train_fraction=frac, seed=1)
    n_train = round(frac * X.shape[0])
    assert Xtr.shape == (n_train, 30) and Xte.shape == (X.shape[0] - n_train, 30)
    assert ytr.shape == (n_train,) and yte.shape == (X.shape[0] - n_train,)
    np.testing.assert_allclose(Xtr.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Xtr.std(axis=0), 1.0, rtol=1e-10)
    # the test part uses the training statistics, so it is only roughly standard
    assert not np.allclose(Xte.mean(axis=0), 0.0, atol=1e-12)
    # the split is a partition of the rows (compare sorted label counts)
    assert np.sum(ytr == 1) + np.sum(yte == 1) == np.sum(y == 1)


def test_split_test_part_uses_training_statistics():
    rng = np.random.default_rng(0)
    X = rng.normal(3.0, 2.0, size=(40, 3))
    y = np.tile([-1, 1], 20)
    Xtr, Xte, ytr, yte = datasets.split(X, y, seed=5)
    both = np.vstack([Xtr, Xte])
    # Both parts go through one increasing affine map x -> (x - m) / s, so the
    # sorted standardised values are an exact affine image of the sorted raw ones.
    for j in range(3):
        col_raw = np.sort(X[:, j])
        col_std = np.sort(both[:, j])
        s = np.polyfit(col_raw, col_std, 1)
        np.testing.assert_allclose(np.polyval(s, col_raw), col_std, atol=1e-10)


def test_split_constant_column_no_nan():
    X, y = datasets.load("ionosphere")  # x2 is constant zero
    Xtr, Xte, _, _ = datasets.split(X, y, seed=0)
    assert np.all(np.isfinite(Xtr)) and np.all(np.isfinite(Xte))
    np.testing.assert_array_equal(Xtr[:, 1], 0.0)
    np.testing.assert_array_equal(Xte[:, 1], 0.0)
    # a constant column with a non-zero value and rounding noise
    Z = np.column_stack([np.full(20, 0.1 * 3), np.arange(20.0)])
    Z[::2, 0] = 0.3
    yz = np.tile([-1, 1], 10)
    Ztr, Zte, _, _ = datasets.split(Z, yz, seed=0)
    assert np.all(np.isfinite(Ztr)) and np.all(np.abs(Ztr[:, 0]) < 1e-6)


def test_split_reproducible_with_seed():
    X, y = datasets.load("sonar")
    a = datasets.split(X, y, seed=42)
    b = datasets.split(X, y, seed=42)
    c = datasets.split(X, y, seed=43)
    for u, v in zip(a, b):
        np.testing.assert_array_equal(u, v)
    assert not np.array_equal(a[0], c[0])
    g1, g2 = np.random.default_rng(7), np.random.default_rng(7)
    np.testing.assert_array_equal(datasets.split(X, y, seed=g1)[0], datasets.split(X, y, seed=g2)[0])


def test_split_puts_every_class_in_training_part():
    X = np.arange(20.0).reshape(10, 2)
    y = np.array([1] + [-1] * 9)
    for seed in range(30):
        _, _, ytr, _ = datasets.split(X, y, train_fraction=0.2, seed=seed)
        assert set(ytr.tolist()) == {-1, 1}


def test_split_stratified_keeps_proportions():
    X, y = datasets.load("pima")
    _, _, ytr, yte = datasets.split(X, y, seed=0, stratify=True)
    assert abs(np.mean(ytr == 1) - np.mean(y == 1)) < 0.01
    assert abs(np.mean(yte == 1) - np.mean(y == 1)) < 0.01


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"train_fraction": 0.0}, ValueError, "train_fraction"),
        ({"train_fraction": 1.0}, ValueError, "train_fraction"),
        ({"train_fraction": -0.5}, ValueError, "train_fraction"),
        ({"train_fraction": float("nan")}, ValueError, "train_fraction"),
        ({"train_fraction": "half"}, TypeError, "train_fraction"),
        ({"seed": 1.5}, TypeError, "seed"),
        ({"seed": "0"}, TypeError, "seed"),
        ({"seed": -1}, ValueError, "seed"),
        ({"stratify": "yes"}, TypeError, "stratify"),
    ],
)
def test_split_bad_arguments(kwargs, exc, match):
    X, y = datasets.load("sonar")
    with pytest.raises(exc, match=match):
        datasets.split(X, y, **kwargs)


def test_split_bad_data():
    X, y = datasets.load("sonar")
    with pytest.raises(ValueError, match="y has 207 labels"):
        datasets.split(X, y[:-1])
    with pytest.raises(ValueError, match="1-D"):
        datasets.split(X, y[:, None])
    with pytest.raises(ValueError, match="2-D"):
        datasets.split(X[:, 0], y)
    Xn = X.copy()
    Xn[3, 4] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        datasets.split(Xn, y)
    with pytest.raises(ValueError, match="single class"):
        datasets.split(X, np.ones_like(y))
    with pytest.raises(ValueError, match="every class"):
        datasets.split(X[:4], np.array([0, 1, 2, 3]), train_fraction=0.25)
