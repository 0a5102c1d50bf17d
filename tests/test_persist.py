"""Model files: exact round trips and refusal of bad files (mklopt.persist)."""

import io
import json
import warnings
import zipfile

import numpy as np
import pytest

from mklopt import MKBoostClassifier, MKLClassifier, datasets
from mklopt.estimators import ConvergenceWarning
from mklopt.kernels import grid, linear, poly, rbf
from mklopt.persist import FORMAT_VERSION, ModelFormatError, load_model, save_model


@pytest.fixture(scope="module")
def sonar():
    X, y = datasets.load("sonar")
    return datasets.split(X, y, seed=0)


@pytest.fixture(scope="module")
def binary(sonar):
    X_tr, _, y_tr, _ = sonar
    specs = [rbf(4.0), rbf(8.0), linear(), poly(2, features=[0, 1, 2])]
    return MKLClassifier(kernels=specs, method="level", C=10.0).fit(X_tr, y_tr)


@pytest.fixture(scope="module")
def multiclass(sonar):
    X_tr, _, y_tr, _ = sonar
    X = X_tr[:, :6]
    # three string classes: the sonar label split further by the first feature
    y = np.where(y_tr > 0, "rock", np.where(X[:, 0] > 0, "mine-a", "mine-b"))
    clf = MKLClassifier(kernels="grid", method="mirror", groups="features", C=10.0, tol=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # the gap is not what is tested
        clf.fit(X, y)
    return clf


@pytest.fixture
def saved(binary, tmp_path):
    path = tmp_path / "model.npz"
    save_model(binary, path, feature_names=[f"f{i}" for i in range(60)], label="label")
    return path


def _arrays(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _write(path, arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


# ---------------------------------------------------------------- round trips
def test_binary_round_trip_is_exact(binary, sonar, saved):
    _, X_te, _, _ = sonar
    clf, meta = load_model(saved)
    np.testing.assert_array_equal(clf.decision_function(X_te), binary.decision_function(X_te))
    np.testing.assert_array_equal(clf.predict(X_te), binary.predict(X_te))
    np.testing.assert_array_equal(clf.weights_, binary.weights_)
    np.testing.assert_array_equal(clf.support_, binary.support_)
    np.testing.assert_array_equal(clf.dual_coef_, binary.dual_coef_)
    np.testing.assert_array_equal(clf.intercept_, binary.intercept_)
    np.testing.assert_array_equal(clf.classes_, binary.classes_)
    assert clf.kernel_specs_ == binary.kernel_specs_
    assert (clf.n_iter_, clf.n_oracle_calls_, clf.gap_, clf.converged_) == (
        binary.n_iter_,
        binary.n_oracle_calls_,
        binary.gap_,
        binary.converged_,
    )
    params = clf.get_params()
    assert params["kernels"] == list(binary.kernel_specs_)
    assert params["C"] == 10.0 and params["method"] == "level"
    # A model without feature maps is written in format 1, which older mklopt reads.
    assert meta["format"] == "mklopt-model" and meta["format_version"] == 1 < FORMAT_VERSION
    assert meta["label"] == "label" and meta["feature_names"][59] == "f59"
    assert meta["standardize"] is None


def test_multiclass_round_trip_is_exact(multiclass, sonar, tmp_path):
    _, X_te, _, _ = sonar
    X_te = X_te[:, :6]
    path = tmp_path / "three.model"  # any name: nothing is appended
    save_model(multiclass, path)
    assert path.exists()
    clf, meta = load_model(path)
    assert list(clf.classes_) == ["mine-a", "mine-b", "rock"]
    np.testing.assert_array_equal(
        clf.pairwise_decision_function(X_te), multiclass.pairwise_decision_function(X_te)
    )
    np.testing.assert_array_equal(clf.decision_function(X_te), multiclass.decision_function(X_te))
    np.testing.assert_array_equal(clf.predict(X_te), multiclass.predict(X_te))
    for a, b in zip(clf.support_, multiclass.support_, strict=True):
        np.testing.assert_array_equal(a, b)
    assert clf.get_params()["kernels"] == "grid"
    assert clf.get_params()["groups"] == "features"
    assert meta["n_pairs"] == 3


def test_refit_from_loaded_parameters(binary, sonar, saved):
    X_tr, X_te, y_tr, _ = sonar
    clf, _ = load_model(saved)
    refit = MKLClassifier(**clf.get_params()).fit(X_tr, y_tr)
    np.testing.assert_allclose(refit.decision_function(X_te), binary.decision_function(X_te))


def test_numeric_and_float_labels_and_standardize(sonar, tmp_path):
    X_tr, X_te, y_tr, _ = sonar
    y = np.where(y_tr > 0, 2.0, -7.0)
    clf = MKLClassifier(kernels=grid(60, "mkboost2013"), method="lp", p=2.0, C=5.0)
    clf.fit(X_tr, y)
    mean, scale = np.zeros(60), np.full(60, 2.0)
    save_model(clf, tmp_path / "m.npz", standardize=(mean, scale))
    clf2, meta = load_model(tmp_path / "m.npz")
    assert clf2.classes_.dtype == np.float64
    np.testing.assert_array_equal(clf2.predict(X_te), clf.predict(X_te))
    np.testing.assert_array_equal(meta["standardize"][1], scale)
    assert clf2.get_params()["p"] == 2.0


def test_save_refuses_what_it_cannot_store(binary, tmp_path):
    with pytest.raises(ValueError, match="not fitted"):
        save_model(MKLClassifier(), tmp_path / "x.npz")
    with pytest.raises(ValueError, match="not fitted"):
        save_model(MKBoostClassifier(), tmp_path / "x.npz")
    with pytest.raises(TypeError, match="to_arrays"):
        save_model(object(), tmp_path / "x.npz")
    with pytest.raises(ValueError, match="feature_names"):
        save_model(binary, tmp_path / "x.npz", feature_names=["a"])
    assert not (tmp_path / "x.npz").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


# ------------------------------------------------------------------ bad files
def test_missing_empty_random_and_npy_files(tmp_path):
    with pytest.raises(ModelFormatError, match="does not exist"):
        load_model(tmp_path / "nope.npz")
    (tmp_path / "empty.npz").write_bytes(b"")
    with pytest.raises(ModelFormatError, match="empty"):
        load_model(tmp_path / "empty.npz")
    (tmp_path / "random.npz").write_bytes(np.random.default_rng(0).bytes(2000))
    with pytest.raises(ModelFormatError, match="not an .npz archive"):
        load_model(tmp_path / "random.npz")
    np.save(tmp_path / "a.npy", np.arange(3))
    with pytest.raises(ModelFormatError, match="single .npy"):
        load_model(tmp_path / "a.npy")
    with pytest.raises(ModelFormatError, match="directory"):
        load_model(tmp_path)
    assert issubclass(ModelFormatError, ValueError)


@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9, 0.999])
def test_truncated_file(saved, fraction):
    data = saved.read_bytes()
    saved.write_bytes(data[: int(len(data) * fraction)])
    with pytest.raises(ModelFormatError, match="truncated or corrupt"):
        load_model(saved)


def test_flipped_bytes_inside_an_array(saved):
    data = bytearray(saved.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("sv_X.npy")
    # flip bytes in the middle of the member's data: its CRC no longer matches
    at = info.header_offset + 200
    data[at : at + 8] = bytes(b ^ 0xFF for b in data[at : at + 8])
    saved.write_bytes(bytes(data))
    with pytest.raises(ModelFormatError, match="corrupt"):
        load_model(saved)


def test_npz_without_metadata(tmp_path):
    _write(tmp_path / "m.npz", {"weights": np.ones(3)})
    with pytest.raises(ModelFormatError, match="no metadata"):
        load_model(tmp_path / "m.npz")


_PICKLE_RAN = []


def _side_effect():
    _PICKLE_RAN.append(True)
    return "ran"


class _Evil:
    def __reduce__(self):
        return (_side_effect, ())


def test_pickled_objects_are_refused_and_never_run(saved):
    arrays = _arrays(saved)
    arrays["evil"] = np.array([_Evil()], dtype=object)
    _write(saved, arrays)  # np.savez pickles object arrays
    with pytest.raises(ModelFormatError, match="pickled"):
        load_model(saved)
    assert _PICKLE_RAN == []


def test_pickled_metadata_is_refused(saved):
    arrays = _arrays(saved)
    arrays["metadata"] = np.array([json.loads(str(arrays["metadata"]))], dtype=object)
    _write(saved, arrays)
    with pytest.raises(ModelFormatError, match="pickled"):
        load_model(saved)


def _edit_meta(path, **changes):
    arrays = _arrays(path)
    meta = json.loads(str(arrays["metadata"]))
    meta.update(changes)
    arrays["metadata"] = np.array(json.dumps(meta))
    _write(path, arrays)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"format": "something-else"}, "not an mklopt model"),
        ({"format_version": FORMAT_VERSION + 1}, "upgrade mklopt"),
        ({"format_version": "1"}, "format_version"),
        ({"estimator": "MKLSomethingElse"}, "unsupported estimator"),
        ({"estimator": "MKBoostClassifier"}, "unknown parameters"),
        ({"n_kernels": 5}, "kernel_specs"),
        ({"n_features": 0}, "n_features"),
        ({"kernel_specs": [{"kind": "rbf", "sigma": -1.0, "features": None}] * 4}, "spec 0"),
        ({"kernel_specs": [{"kind": "sigmoid"}] * 4}, "unknown kind"),
        ({"feature_names": ["a", "b"]}, "feature_names"),
        ({"params": {"C": "lots"}}, "corrupt"),
        ({"params": {"verbose": "loud"}}, "verbose"),
        ({"params": {"verbose": -1}}, "verbose"),
    ],
)
def test_bad_metadata(saved, changes, message):
    _edit_meta(saved, **changes)
    with pytest.raises(ModelFormatError, match=message):
        load_model(saved)


def test_metadata_that_is_not_json(saved):
    arrays = _arrays(saved)
    arrays["metadata"] = np.array("{not json")
    _write(saved, arrays)
    with pytest.raises(ModelFormatError, match="JSON"):
        load_model(saved)


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda a: a.pop("dual_coef"), "missing arrays: dual_coef"),
        (lambda a: a.__setitem__("weights", a["weights"][:, :2]), "'weights' has shape"),
        (lambda a: a.__setitem__("weights", a["weights"].astype(np.float32) + 0j), "dtype"),
        (lambda a: a.__setitem__("sv_X", a["sv_X"][:-1]), "'sv_X' has shape"),
        (lambda a: a["dual_coef"].__setitem__(0, np.nan), "NaN or infinity"),
        (lambda a: a["kernel_scale"].__setitem__(0, -1.0), "scales must be positive"),
        (lambda a: a["kernel_index"].__setitem__(0, 99), "kernel indices outside"),
        (lambda a: a.__setitem__("classes", a["classes"][:1]), "classes"),
        (lambda a: a.__setitem__("pairs", a["pairs"][:, ::-1].copy()), "pairs"),
        (lambda a: a.__setitem__("sv_offsets", a["sv_offsets"][::-1].copy()), "offset"),
    ],
)
def test_inconsistent_arrays(saved, edit, message):
    arrays = _arrays(saved)
    edit(arrays)
    _write(saved, arrays)
    with pytest.raises(ModelFormatError, match=message):
        load_model(saved)


def test_estimator_scaler_round_trip_and_older_files(sonar, tmp_path):
    X_tr, X_te, y_tr, _ = sonar
    # raw features on another scale: the default grid standardises them itself
    raw_tr, raw_te = 100.0 * X_tr + 3.0, 100.0 * X_te + 3.0
    clf = MKLClassifier(max_iter=50).fit(raw_tr[:, :8], y_tr)
    np.testing.assert_allclose(clf.scaler_mean_, raw_tr[:, :8].mean(axis=0), rtol=1e-12)
    path = tmp_path / "scaled.npz"
    save_model(clf, path)
    clf2, meta = load_model(path)
    assert meta["standardize"] is None and clf2.get_params()["standardize"] == "auto"
    np.testing.assert_array_equal(clf2.scaler_scale_, clf.scaler_scale_)
    np.testing.assert_allclose(
        clf2.decision_function(raw_te[:, :8]), clf.decision_function(raw_te[:, :8]), atol=1e-12
    )
    # a file written before the estimator had a scaler: no scaler arrays, no
    # "standardize" parameter; it loads as a model of the features as given
    a = _arrays(path)
    meta_json = json.loads(str(a["metadata"]))
    del meta_json["params"]["standardize"]
    a["metadata"] = np.array(json.dumps(meta_json))
    del a["scaler_mean"], a["scaler_scale"]
    _write(tmp_path / "old.npz", a)
    old, _ = load_model(tmp_path / "old.npz")
    assert old.scaler_mean_ is None and old.get_params()["standardize"] is False
    Z = (raw_te[:, :8] - clf.scaler_mean_) / clf.scaler_scale_
    np.testing.assert_allclose(
        old.decision_function(Z), clf.decision_function(raw_te[:, :8]), atol=1e-9
    )


def test_p_inf_models_save_and_load(tmp_path):
    # p = inf is the sum kernel; JSON has no infinity, so it is saved by name.
    import math

    from mklopt import MKLClassifier, datasets
    from mklopt.kernels import linear, rbf
    from mklopt.persist import load_model, save_model

    X, y = datasets.load("sonar")
    X, y = X[::2], y[::2]
    clf = MKLClassifier(kernels=[rbf(2.0), rbf(8.0), linear()], method="lp", p=np.inf).fit(X, y)
    path = tmp_path / "inf.npz"
    save_model(clf, path)
    back, _ = load_model(path)
    assert back.get_params()["p"] == math.inf
    np.testing.assert_allclose(back.decision_function(X), clf.decision_function(X), rtol=1e-12,
                               atol=1e-12)
