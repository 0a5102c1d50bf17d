"""Bundled data sets, their official splits and the papers' split protocol."""

import configparser
import fnmatch
import gzip
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from mklopt import datasets
from mklopt._csvio import read_csv

# (n, d, number of +1 labels), from data/README.md. letter: the letters A-M
# have 9,940 rows in UCI's letter-recognition data (the shared README gives
# the two counts in the other order), so +1 has 9,940 and -1 10,060.
EXPECTED = {
    "ionosphere": (351, 34, 225),
    "sonar": (208, 60, 111),
    "pima": (768, 8, 268),
    "breast": (683, 9, 239),
    "vote": (435, 16, 267),
    "wdbc": (569, 30, 212),
    "letter": (20000, 16, 9940),
    "shuttle": (58000, 9, 45586),
}
SATELLITE_CLASSES = {
    "red soil",
    "cotton crop",
    "grey soil",
    "damp grey soil",
    "vegetation stubble",
    "very damp grey soil",
}
OFFICIAL = {"letter": (16000, 4000), "shuttle": (43500, 14500), "satellite": (4435, 2000)}


def test_names():
    assert datasets.names() == (*EXPECTED, "satellite", "diabetes")
    assert datasets.names("binary") == tuple(EXPECTED)
    assert datasets.names("multiclass") == ("satellite",)
    assert datasets.names("regression") == ("diabetes",)
    with pytest.raises(ValueError, match="task"):
        datasets.names("classification")


@pytest.mark.parametrize("name", ["ionosphere", "letter", "satellite", "diabetes"])
def test_info_describes_what_load_returns(name):
    d = datasets.info(name)
    assert d.name == name and d.source and d.target
    X, y = datasets.load(name)
    assert X.shape == (d.n_samples, d.n_features)
    kind = {"binary": "i", "multiclass": "U", "regression": "f"}[d.task]
    assert y.dtype.kind == kind
    if d.task == "regression":
        assert d.n_classes is None
    else:
        assert np.unique(y).size == d.n_classes
    assert d.official_split == OFFICIAL.get(name)
    with pytest.raises(AttributeError):  # frozen
        d.task = "binary"


def test_info_sources():
    for name, who in [
        ("letter", "Frey & Slate"),
        ("shuttle", "Catlett"),
        ("satellite", "Srinivasan"),
        ("diabetes", "Efron"),
    ]:
        assert who in datasets.info(name).source


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


def test_satellite_six_named_classes():
    X, y = datasets.load("satellite")
    assert X.shape == (6435, 36) and X.dtype == np.float64
    assert y.shape == (6435,) and y.dtype.kind == "U"
    assert set(y.tolist()) == SATELLITE_CLASSES


def test_diabetes_regression_target():
    X, y = datasets.load("diabetes")
    assert X.shape == (442, 10) and X.dtype == np.float64
    assert y.shape == (442,) and y.dtype == np.float64
    assert np.all(np.isfinite(X)) and np.all(np.isfinite(y))
    assert np.unique(y).size > 100  # a real-valued target, not a handful of classes


def test_string_labels_are_fresh_copies():
    _, y1 = datasets.load("satellite")
    y1[0] = "x"
    assert datasets.load("satellite")[1][0] != "x"


@pytest.mark.parametrize("call", [datasets.load, datasets.info, datasets.load_split])
def test_unknown_name_lists_names(call):
    with pytest.raises(ValueError, match="unknown data set 'iris'.*ionosphere.*wdbc.*diabetes"):
        call("iris")
    with pytest.raises(TypeError, match="name"):
        call(3)


def test_readme_cites_sources():
    text = resources.files("mklopt.datasets").joinpath("data", "README.md").read_text()
    for word in ("Dua", "Graff", "Sigillito", "Gorman", "Wolberg", "Schlimmer", "Street"):
        assert word in text
    for word in ("Frey", "Slate", "Catlett", "Srinivasan", "Efron", "Tibshirani"):
        assert word in text


def test_every_data_file_is_packaged():
    """Each file beside the loader matches setup.cfg's package_data, so wheels carry it."""
    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).parents[1] / "setup.cfg")
    if not cfg.has_section("options.package_data"):
        pytest.skip("setup.cfg not found (tests run from an installed copy)")
    patterns = [p.strip() for p in cfg["options.package_data"]["mklopt.datasets.data"].split(",")]
    folder = resources.files("mklopt.datasets.data")
    files = [f.name for f in folder.iterdir() if f.is_file() and not f.name.endswith(".py")]
    assert {"letter.csv.gz", "shuttle.csv.gz", "satellite.csv.gz", "diabetes.csv.gz"} <= set(files)
    for name in files:
        assert any(fnmatch.fnmatch(name, p) for p in patterns), name


def test_gzipped_and_plain_files_read_the_same(tmp_path):
    # a bundled gzipped file, decompressed; and a bundled plain file, compressed
    gz = resources.files("mklopt.datasets.data").joinpath("satellite.csv.gz").read_bytes()
    (tmp_path / "satellite.csv").write_bytes(gzip.decompress(gz))
    plain = resources.files("mklopt.datasets.data").joinpath("sonar.csv").read_bytes()
    (tmp_path / "sonar.csv.gz").write_bytes(gzip.compress(plain))
    for name, file in [("satellite", "satellite.csv"), ("sonar", "sonar.csv.gz")]:
        X, labels, columns = read_csv(tmp_path / file)
        X0, y0 = datasets.load(name)
        np.testing.assert_array_equal(X, X0)
        np.testing.assert_array_equal(labels, y0.astype(str))
        assert columns == [f"x{j + 1}" for j in range(X0.shape[1])]


# --------------------------------------------------------------- official splits
@pytest.mark.parametrize("name", list(OFFICIAL))
def test_load_split_sizes_and_rows(name):
    n_train, n_test = OFFICIAL[name]
    X, y = datasets.load(name)
    Xtr, Xte, ytr, yte = datasets.load_split(name, standardize=False)
    assert Xtr.shape == (n_train, X.shape[1]) and Xte.shape == (n_test, X.shape[1])
    # the first rows train, the last rows test
    np.testing.assert_array_equal(np.vstack([Xtr, Xte]), X)
    np.testing.assert_array_equal(np.concatenate([ytr, yte]), y)
    assert ytr.dtype == y.dtype


def test_official_splits_are_the_uci_files():
    # class counts of the UCI training files (sat.trn, shuttle.trn) as the UCI
    # documentation gives them: the bundled files put those rows first
    _, _, ytr, _ = datasets.load_split("satellite")
    counts = dict(zip(*np.unique(ytr, return_counts=True)))
    assert counts == {
        "red soil": 1072,
        "cotton crop": 479,
        "grey soil": 961,
        "damp grey soil": 415,
        "vegetation stubble": 470,
        "very damp grey soil": 1038,
    }
    _, _, ytr, _ = datasets.load_split("shuttle")
    assert int(np.sum(ytr == 1)) == 34108


@pytest.mark.parametrize("name", ["letter", "satellite"])
def test_load_split_standardises_with_training_statistics(name):
    raw_tr, raw_te, _, _ = datasets.load_split(name, standardize=False)
    Xtr, Xte, _, _ = datasets.load_split(name)
    np.testing.assert_allclose(Xtr.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(Xtr.std(axis=0), 1.0, rtol=1e-10)
    # one increasing affine map per feature, fitted on the training rows,
    # carries the raw test rows to the standardised ones
    for j in range(raw_tr.shape[1]):
        slope, shift = np.polyfit(raw_tr[:, j], Xtr[:, j], 1)
        assert slope > 0
        np.testing.assert_allclose(slope * raw_te[:, j] + shift, Xte[:, j], atol=1e-8)
    # and it is not the map of the whole data set
    both = np.vstack([raw_tr, raw_te])
    whole = (raw_te - both.mean(axis=0)) / both.std(axis=0)
    assert not np.allclose(whole, Xte, atol=1e-6)


def test_load_split_refuses_sets_without_one():
    with pytest.raises(ValueError, match="no official.*letter, shuttle, satellite"):
        datasets.load_split("sonar")
    with pytest.raises(ValueError, match="no official"):
        datasets.load_split("diabetes")
    with pytest.raises(TypeError, match="standardize"):
        datasets.load_split("letter", standardize="yes")


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


# ------------------------------------------------------ split() on every task
def test_split_regression_target():
    X, y = datasets.load("diabetes")
    Xtr, Xte, ytr, yte = datasets.split(X, y, train_fraction=0.7, seed=3)
    assert Xtr.shape == (309, 10) and Xte.shape == (133, 10)
    assert ytr.dtype == np.float64 and yte.dtype == np.float64
    # a partition of the targets, which are returned as they are
    np.testing.assert_array_equal(np.sort(np.concatenate([ytr, yte])), np.sort(y))
    np.testing.assert_allclose(Xtr.mean(axis=0), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="stratify"):
        datasets.split(X, y, stratify=True)
    bad = y.copy()
    bad[5] = np.nan
    with pytest.raises(ValueError, match="y .*NaN"):
        datasets.split(X, bad)


def test_split_regression_needs_no_classes():
    # 4 distinct targets and 2 training samples: fine for a regression target,
    # impossible for class labels
    X = np.arange(8.0).reshape(4, 2)
    Xtr, _, ytr, _ = datasets.split(X, np.array([0.5, 1.5, 2.5, 3.5]), seed=0)
    assert Xtr.shape == (2, 2) and ytr.shape == (2,)
    with pytest.raises(ValueError, match="every class"):
        datasets.split(X, np.array([0, 1, 2, 3]), seed=0)


def test_split_string_labels():
    X, y = datasets.load("satellite")
    Xtr, Xte, ytr, yte = datasets.split(X, y, seed=0, stratify=True)
    assert ytr.dtype.kind == "U" and set(ytr.tolist()) == SATELLITE_CLASSES
    assert Xtr.shape[0] + Xte.shape[0] == 6435
    for c in SATELLITE_CLASSES:
        assert abs(np.mean(ytr == c) - np.mean(y == c)) < 0.01
    # a plain random split keeps every class in the training part, even a rare one
    small = np.array(["a"] * 9 + ["b"])
    for seed in range(20):
        _, _, ytr, _ = datasets.split(np.arange(20.0).reshape(10, 2), small, 0.2, seed=seed)
        assert set(ytr.tolist()) == {"a", "b"}


def test_split_mixed_label_types():
    X = np.arange(8.0).reshape(4, 2)
    with pytest.raises(TypeError, match="y holds class labels"):
        datasets.split(X, np.array([1, "a", 2, "b"], dtype=object))


def test_split_needs_two_samples():
    with pytest.raises(ValueError, match="at least two"):
        datasets.split(np.ones((1, 2)), np.array([0.5]))


def test_papers_sets_are_the_six_binary_sets_listed_first():
    assert datasets.PAPERS == datasets.names()[:6]
    assert all(datasets.info(n).task == "binary" for n in datasets.PAPERS)
