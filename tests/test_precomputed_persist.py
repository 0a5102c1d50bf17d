"""Saving models fitted on precomputed kernels: round trips, older files, corrupt files."""

import json

import numpy as np
import pytest

from mklopt import MKLClassifier, MKLClassifierCV
from mklopt.kernels import rbf
from mklopt.persist import FORMAT_VERSION, ModelFormatError, load_model, save_model
from tests.estimators.test_precomputed import _data, _raw_kernels


@pytest.fixture(scope="module")
def three():
    X, y = _data("satellite", 150, seed=2, n_classes=3)
    K = _raw_kernels(X)
    tr, te = np.arange(0, 110), np.arange(110, 150)
    return K[:, tr][:, :, tr], y[tr], K[:, te][:, :, tr], y[te]


@pytest.mark.parametrize("kw", [{}, dict(multiclass="shared"), dict(loss="logistic"),
                                dict(elastic_net=0.5, C=10.0)])
def test_round_trip_predicts_identically(three, tmp_path, kw):
    K_tr, y_tr, K_te, y_te = three
    clf = MKLClassifier(kernels="precomputed", **kw).fit(K_tr, y_tr)
    path = tmp_path / "model.npz"
    save_model(clf, path, label="class")
    loaded, meta = load_model(path)
    assert meta["format_version"] == 3 <= FORMAT_VERSION
    assert meta["n_features"] == K_tr.shape[1]  # the training samples
    assert loaded.kernels == "precomputed" and loaded.n_features_in_ == clf.n_features_in_
    np.testing.assert_array_equal(loaded.decision_function(K_te), clf.decision_function(K_te))
    np.testing.assert_array_equal(loaded.predict(K_te), clf.predict(K_te))
    for a, b in zip(loaded.support_, clf.support_, strict=True):
        np.testing.assert_array_equal(a, b)  # indices into the training samples
    np.testing.assert_array_equal(loaded.weights_, clf.weights_)
    assert loaded.kernel_names_ == clf.kernel_names_
    # The loaded model checks its test kernels as the fitted one does.
    with pytest.raises(ValueError, match="n_train"):
        loaded.predict(K_te[:, :, :-1])


def test_binary_and_cv_best_estimator(three, tmp_path):
    K_tr, y_tr, K_te, _ = three
    keep = y_tr != y_tr[0]
    Kb = K_tr[:, keep][:, :, keep]
    cv = MKLClassifierCV(kernels="precomputed", Cs=[0.1, 10.0], cv=3).fit(Kb, y_tr[keep])
    save_model(cv.best_estimator_, tmp_path / "best.npz")
    loaded, _ = load_model(tmp_path / "best.npz")
    K_new = K_te[:, :, keep]
    np.testing.assert_array_equal(loaded.decision_function(K_new), cv.decision_function(K_new))


def test_feature_models_still_write_version_1(tmp_path):
    X, y = _data("ionosphere", 60)
    clf = MKLClassifier(kernels=[rbf(2.0)]).fit(X, y)
    save_model(clf, tmp_path / "m.npz")
    _, meta = load_model(tmp_path / "m.npz")
    assert meta["format_version"] == 1


def test_no_features_to_name_or_scale(three, tmp_path):
    K_tr, y_tr, _, _ = three
    clf = MKLClassifier(kernels="precomputed").fit(K_tr, y_tr)
    with pytest.raises(ValueError, match="no features"):
        save_model(clf, tmp_path / "m.npz", feature_names=[str(i) for i in range(110)])


def _rewrite(path, edit_meta=None, edit_arrays=None):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["metadata"]))
    if edit_meta:
        edit_meta(meta)
    if edit_arrays:
        edit_arrays(arrays)
    arrays["metadata"] = np.array(json.dumps(meta))
    np.savez(path, **arrays)


@pytest.mark.parametrize("edit_meta, edit_arrays, message", [
    (lambda m: m.update(format_version=2), None, "precomputed model in a format 2"),
    (lambda m: m["kernel_specs"][1].update(index=0), None, "expected index 1"),
    (lambda m: m["params"].update(kernels=None), None, "sv_X"),
    (None, lambda a: a["sv_index"].__setitem__(0, 10_000), "outside the 110 training"),
    (None, lambda a: a.update(sv_X=np.zeros((a["sv_X"].shape[0], 3))), "sv_X"),
])
def test_corrupt_precomputed_files(three, tmp_path, edit_meta, edit_arrays, message):
    K_tr, y_tr, _, _ = three
    path = tmp_path / "m.npz"
    save_model(MKLClassifier(kernels="precomputed").fit(K_tr, y_tr), path)
    _rewrite(path, edit_meta, edit_arrays)
    with pytest.raises(ModelFormatError, match=message):
        load_model(path)
