"""Codecs save the estimators (``to_arrays`` / ``from_arrays``); mklopt.persist keeps the archive.

Checked here: every estimator kind's codec without a file, feature
maps saving themselves and kernel specs through their family, a user's subclass with a
parameter of its own saving and loading as itself with no edit in mklopt,
what happens when its class is not defined at load time, a codec registered
for a user's own kind, the estimators' class hierarchy holding no
persistence, the upgrade path for older layouts, and MKBoost ensembles
(model format 4).
"""

import json
import warnings
from dataclasses import dataclass

import numpy as np
import pytest

import mklopt.persist._protocol as persistence
from mklopt import MKBoostClassifier, MKLClassifier, MKLOneClass, MKLRegressor
from mklopt.kernels import linear, nystroem, poly, rbf
from mklopt.persist import (
    Codec,
    ModelFormatError,
    Persistent,
    codec_for,
    load_model,
    register_codec,
    save_model,
)
from mklopt.persist import _archive as archive
from mklopt.tasks import register_estimator


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(36, 3))
    Xt = rng.normal(size=(9, 3))
    y = np.where(X[:, 0] - 0.4 * X[:, 1] > 0, "up", "down")
    y3 = np.array(["a", "b", "c"])[(X[:, 0] > 0).astype(int) + (X[:, 2] > 0.3).astype(int)]
    return X, Xt, y, y3, np.cos(X[:, 0]) + X[:, 1]


def _fit(est, X, y=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X) if y is None else est.fit(X, y)


def _estimators(data):
    X, _, y, y3, yr = data
    specs = [rbf(1.0), linear(), poly(2, features=[1, 2])]
    return {
        "binary": _fit(MKLClassifier(kernels=specs, C=5.0), X, y),
        "ovo": _fit(MKLClassifier(kernels=specs, C=5.0), X, y3),
        "shared": _fit(MKLClassifier(kernels=specs, multiclass="shared"), X, y3),
        "grid": _fit(MKLClassifier(max_iter=20), X, y),
        "feature_map": _fit(MKLClassifier(kernels=[rbf(1.0), linear()],
                                          storage=nystroem(10, random_state=3)), X, y),
        "regressor": _fit(MKLRegressor(kernels=specs, epsilon=0.1), X, yr),
        "one_class": _fit(MKLOneClass(kernels=[rbf(1.0), rbf(2.0)], nu=0.3), X),
    }


def _outputs(est, X):
    out = [np.asarray(est.predict(X))]
    if hasattr(est, "decision_function"):
        out.append(est.decision_function(X))
    return out


@pytest.mark.parametrize("kind", ["binary", "ovo", "shared", "grid", "feature_map",
                                  "regressor", "one_class"])
def test_every_estimator_round_trips_through_its_codec(data, kind):
    est = _estimators(data)[kind]
    codec = codec_for(est)
    state = codec.to_arrays(est)
    arrays = {k: v for k, v in state.items() if isinstance(v, np.ndarray)}
    header = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    # Nothing that needs pickle: plain arrays and JSON.
    assert all(a.dtype.kind in "biufU" for a in arrays.values())
    json.dumps(header, allow_nan=False)
    back = codec.from_arrays(type(est), state)
    assert type(back) is type(est)
    for got, want in zip(_outputs(back, data[1]), _outputs(est, data[1]), strict=True):
        np.testing.assert_array_equal(got, want)
    assert back.kernel_specs_ == est.kernel_specs_
    params = est.get_params(deep=False)
    for name, value in back.get_params(deep=False).items():
        if name == "kernels" and not isinstance(params[name], str):
            assert value == list(est.kernel_specs_)
        else:
            assert value == params[name], name


def test_parameters_come_from_get_params(data):
    X, _, y, _, _ = data
    clf = _fit(MKLClassifier(kernels=[rbf(1.0)], C=3.0, n_jobs=2, callback=print), X, y)
    params = codec_for(clf).to_arrays(clf)["params"]
    # every constructor parameter but the run-time ones, found by get_params
    assert set(params) == set(clf.get_params()) - {"callback", "client", "n_jobs",
                                                    "elastic_net", "multiclass", "verbose",
                                                    "kernel_names", "kernel_axis", "psd"}
    assert params["C"] == 3.0
    # parameters newer than format 1 appear only when set
    clf.set_params(verbose=1)
    assert codec_for(clf).to_arrays(clf)["params"]["verbose"] == 1


def test_feature_maps_save_themselves_and_specs_through_their_family():
    from mklopt.persist._json import spec_from_json, spec_to_json

    fm = nystroem(12, random_state=4)
    assert type(fm).from_arrays(fm.to_arrays()) == fm
    assert persistence.kind_of(fm) == "feature_map"
    assert persistence.persistent_kind("feature_map") is type(fm)
    with pytest.raises(ValueError, match=r"feature_map has fields \['n_components'\], expected"):
        type(fm).from_arrays({"n_components": 3})
    for k, spec in enumerate((rbf(0.5), rbf(2.0, features=[0, 2]), poly(3), linear([1]))):
        assert spec_from_json(spec_to_json(spec), k) == spec


# ------------------------------------------------------ a user's own classes
class ScaledMKL(MKLClassifier):
    """A user's subclass with a parameter of its own (here: scales the decision values)."""

    # its own parameters join the estimator's constraint table (checked by fit)
    _parameter_constraints = {**MKLClassifier._parameter_constraints,
                              "margin": "no_validation", "note": "no_validation"}

    def __init__(self, kernels="grid", C=1.0, margin=1.0, note="plain"):
        super().__init__(kernels=kernels, C=C)
        self.margin = margin
        self.note = note

    def decision_function(self, X):
        return self.margin * super().decision_function(X)


def test_a_user_subclass_with_its_own_parameter_saves_and_loads_as_itself(data, tmp_path):
    X, Xt, y, _, _ = data
    clf = _fit(ScaledMKL(kernels=[rbf(1.0), linear()], C=2.0, margin=3.5, note="mine"), X, y)
    save_model(clf, tmp_path / "m.npz")
    back, meta = load_model(tmp_path / "m.npz")
    assert type(back) is ScaledMKL
    assert (back.margin, back.note, back.C) == (3.5, "mine", 2.0)
    assert meta["estimator"] == "MKLClassifier"
    assert meta["class"] == f"{__name__}.ScaledMKL"
    np.testing.assert_array_equal(back.decision_function(Xt), clf.decision_function(Xt))
    np.testing.assert_array_equal(back.predict(Xt), clf.predict(Xt))


def test_an_undefined_subclass_loads_as_its_base_or_says_what_to_import(data, tmp_path,
                                                                         monkeypatch):
    X, Xt, y, _, _ = data

    class Plain(MKLClassifier):  # no parameter of its own
        pass

    plain = _fit(Plain(kernels=[rbf(1.0)]), X, y)
    save_model(plain, tmp_path / "plain.npz")
    scaled = _fit(ScaledMKL(kernels=[rbf(1.0)], margin=2.0), X, y)
    save_model(scaled, tmp_path / "scaled.npz")
    # as in a new session that has not imported the module of these classes
    monkeypatch.setattr(archive, "find_class", lambda name, base=None: None)
    with pytest.warns(UserWarning, match="loaded as its registered base MKLClassifier"):
        back, _ = load_model(tmp_path / "plain.npz")
    assert type(back) is MKLClassifier
    np.testing.assert_array_equal(back.decision_function(Xt), plain.decision_function(Xt))
    with pytest.raises(ModelFormatError, match="ScaledMKL.*import the module"):
        load_model(tmp_path / "scaled.npz")


def test_a_parameter_that_is_not_data_is_refused_by_name(data, tmp_path):
    X, _, y, _, _ = data
    clf = _fit(ScaledMKL(kernels=[rbf(1.0)], note=object()), X, y)
    with pytest.raises(TypeError, match="parameter note"):
        save_model(clf, tmp_path / "m.npz")
    assert list(tmp_path.iterdir()) == []


def test_a_user_persistent_dataclass_registers_its_kind():
    @dataclass(frozen=True)
    class Shrinkage(Persistent):
        factor: float
        features: tuple | None = None

    assert persistence.persistent_kind("shrinkage") is Shrinkage
    assert Shrinkage.from_arrays(Shrinkage(0.5).to_arrays()) == Shrinkage(0.5)


# A user's own estimator kinds: not mklopt estimators, saved by their own codecs.
class _Centroids:
    """Predicts the class of the nearest class mean."""

    def __init__(self, shrink=0.0):
        self.shrink = shrink

    def get_params(self, deep=True):
        return {"shrink": self.shrink}

    def fit(self, X, y):
        self.classes_ = np.unique(y)
        self.centroids_ = np.stack([(1 - self.shrink) * X[y == c].mean(axis=0)
                                    for c in self.classes_])
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        d = ((X[:, None, :] - self.centroids_[None]) ** 2).sum(axis=-1)
        return self.classes_[np.argmin(d, axis=1)]


class NearestCentroid(_Centroids):
    pass


class FarthestCentroid(_Centroids):  # the same model, as a kind of its own
    pass


class NearestCentroidCodec(Codec):
    kind = "nearest_centroid"

    def to_arrays(self, est):
        return {"classes": est.classes_.astype(str), "centroids": est.centroids_,
                "n_features": est.n_features_in_, "params": est.get_params()}

    def from_arrays(self, cls, arrays):
        if arrays["centroids"].shape != (arrays["classes"].size, arrays["n_features"]):
            raise ValueError("one centroid per class, of n_features numbers")
        est = cls(**arrays["params"])
        est.classes_, est.centroids_ = arrays["classes"], arrays["centroids"]
        est.n_features_in_ = arrays["n_features"]
        return est


def test_a_codec_registered_for_a_users_kind_saves_and_loads(data, tmp_path):
    X, Xt, y, y3, _ = data
    register_estimator(NearestCentroid, "classification", replace=True)
    register_codec(NearestCentroid, NearestCentroidCodec(), replace=True)

    class Shrunk(NearestCentroid):  # a subclass: saved by its base's codec
        pass

    for est in (NearestCentroid(shrink=0.25).fit(X, y3), Shrunk(shrink=0.5).fit(X, y)):
        assert codec_for(est).kind == "nearest_centroid"
        save_model(est, tmp_path / "nc.npz", label="y")
        back, meta = load_model(tmp_path / "nc.npz")
        assert type(back) is type(est) and back.shrink == est.shrink
        assert meta["estimator"] == "NearestCentroid" and meta["label"] == "y"
        np.testing.assert_allclose(back.centroids_, est.centroids_, rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    with pytest.raises(ValueError, match="already registered"):
        register_codec(NearestCentroid, NearestCentroidCodec())


def test_a_kind_with_a_codec_and_no_registered_estimator_loads_by_its_class_name(data,
                                                                                 tmp_path):
    X, Xt, _, y3, _ = data

    class FarthestCodec(NearestCentroidCodec):
        kind = "farthest_centroid"

    register_codec(FarthestCentroid, FarthestCodec(), replace=True)
    est = FarthestCentroid(shrink=0.1).fit(X, y3)
    save_model(est, tmp_path / "f.npz")
    back, meta = load_model(tmp_path / "f.npz")
    assert type(back) is FarthestCentroid
    assert meta["estimator"] == meta["class"] == f"{__name__}.FarthestCentroid"
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))


@pytest.mark.parametrize("cls", [MKLClassifier, MKLRegressor, MKLOneClass, MKBoostClassifier])
def test_no_persistence_class_in_an_estimators_hierarchy(cls):
    # The estimators are saved by codecs, not by mixins in their bases.
    assert not issubclass(cls, Persistent)
    assert not [b for b in cls.__mro__ if b.__module__.startswith("mklopt.persist")]
    assert codec_for(cls) is not None


def test_an_object_that_does_not_save_itself_is_refused(tmp_path):
    from mklopt import MKLClassifierCV

    with pytest.raises(TypeError, match="implement to_arrays.*MKLClassifierCV does not"):
        save_model(MKLClassifierCV(), tmp_path / "m.npz")
    assert list(tmp_path.iterdir()) == []


def test_an_older_layout_goes_through_its_upgrade(data, tmp_path, monkeypatch):
    X, Xt, y, _, _ = data
    clf = _fit(MKLClassifier(kernels=[rbf(1.0), linear()]), X, y)
    save_model(clf, tmp_path / "m.npz")
    seen = []

    def upgrade(arrays, meta):  # a pretend version 4 that renamed "intercept"
        seen.append(meta["format_version"])
        arrays = dict(arrays, bias=arrays.pop("intercept"))
        return arrays, dict(meta, format_version=meta["format_version"] + 1)

    def downgrade_name(codec_from_arrays):
        def read(cls, arrays):
            arrays = dict(arrays)
            arrays["intercept"] = arrays.pop("bias")
            return codec_from_arrays(cls, arrays)
        return read

    codec = codec_for(MKLClassifier)
    monkeypatch.setattr(archive, "FORMAT_VERSION", 2)
    monkeypatch.setitem(archive._UPGRADES, 1, upgrade)
    monkeypatch.setattr(codec, "from_arrays", downgrade_name(codec.from_arrays))
    back, _ = load_model(tmp_path / "m.npz")
    assert seen == [1]
    np.testing.assert_array_equal(back.decision_function(Xt), clf.decision_function(Xt))


# ------------------------------------------------------------------ MKBoost
@pytest.fixture(scope="module")
def boosted(data):
    X, _, y, y3, _ = data
    return {
        "d1_binary": _fit(MKBoostClassifier(n_rounds=6, random_state=0), X, y),
        "d2_three": _fit(MKBoostClassifier(kernels=[rbf(1.0), rbf(3.0), linear()],
                                           variant="D2", n_rounds=5, random_state=1), X, y3),
        "s1_feature_map": _fit(MKBoostClassifier(kernels=[rbf(1.0), linear()], variant="S1",
                                                 n_rounds=5, random_state=2,
                                                 storage=nystroem(12, random_state=0)), X, y3),
    }


@pytest.mark.parametrize("kind", ["d1_binary", "d2_three", "s1_feature_map"])
def test_mkboost_ensembles_save_and_load(boosted, data, kind, tmp_path):
    _, Xt, _, _, _ = data
    clf = boosted[kind]
    save_model(clf, tmp_path / "boost.npz", label="y")
    back, meta = load_model(tmp_path / "boost.npz")
    assert type(back) is MKBoostClassifier and meta["format_version"] == 4
    np.testing.assert_array_equal(back.decision_function(Xt), clf.decision_function(Xt))
    np.testing.assert_array_equal(back.predict(Xt), clf.predict(Xt))
    np.testing.assert_array_equal(back.classes_, clf.classes_)
    np.testing.assert_array_equal(back.weights_, clf.weights_)
    np.testing.assert_array_equal(back.n_iter_, clf.n_iter_)
    assert back.stop_reason_ == clf.stop_reason_
    assert back.get_params() == clf.get_params()
    for a, b in zip(np.atleast_1d(back.ensemble_), np.atleast_1d(clf.ensemble_), strict=True):
        np.testing.assert_array_equal(a.alphas, b.alphas)
        np.testing.assert_array_equal(a.kernel_weights(), b.kernel_weights())
    if kind == "s1_feature_map":
        with np.load(tmp_path / "boost.npz") as z:
            assert "map_kind" in z.files  # the Nyström maps went with the model


def test_mkboost_with_a_generator_seed_saves_it_as_none(data, tmp_path):
    X, Xt, y, _, _ = data
    clf = _fit(MKBoostClassifier(kernels=[rbf(1.0)], n_rounds=3,
                                 random_state=np.random.default_rng(0)), X, y)
    save_model(clf, tmp_path / "m.npz")
    back, _ = load_model(tmp_path / "m.npz")
    assert back.random_state is None
    np.testing.assert_array_equal(back.decision_function(Xt), clf.decision_function(Xt))


def _rewrite(path, edit):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["metadata"]))
    edit(arrays, meta)
    arrays["metadata"] = np.array(json.dumps(meta))
    np.savez(path, **arrays)


@pytest.mark.parametrize("edit, message", [
    (lambda a, m: a.pop("round_alpha"), "missing arrays: round_alpha"),
    (lambda a, m: a["learner_kernel"].__setitem__(0, 99), "kernel indices outside"),
    (lambda a, m: a["round_offsets"].__setitem__(-1, 0), "round_offsets"),
    (lambda a, m: a.__setitem__("n_iter", a["n_iter"] + 1), "n_iter does not count"),
    (lambda a, m: a["kernel_scale"].__setitem__(0, 0.0), "scales must be positive"),
    (lambda a, m: a.__setitem__("sv_X", a["sv_X"][:-1]), "sv_offsets"),
    (lambda a, m: a["round_alpha"].__setitem__(0, np.inf), "NaN or infinity"),
    (lambda a, m: m.update(format_version=3), "MKBoost model in a format 3"),
    (lambda a, m: m.update(format_version=5), "upgrade mklopt"),
])
def test_corrupt_mkboost_files_are_refused(boosted, tmp_path, edit, message):
    path = tmp_path / "boost.npz"
    save_model(boosted["d2_three"], path)
    _rewrite(path, edit)
    with pytest.raises(ModelFormatError, match=message):
        load_model(path)


def test_a_model_of_a_method_that_is_no_longer_registered_loads_and_keeps_its_name(tmp_path):
    import warnings

    import numpy as np

    from mklopt import MKLClassifier
    from mklopt.kernels import linear, rbf
    from mklopt.methods import METHODS, LevelBundle, register
    from mklopt.persist import load_model, save_model

    @register("plugin_level_doc")
    class PluginLevel(LevelBundle):
        """A plugin's method (here: the level method under another name)."""

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] > 0).astype(int)
    try:
        clf = MKLClassifier(kernels=[rbf(1.0), linear()], method="plugin_level_doc").fit(X, y)
        save_model(clf, tmp_path / "m.npz")
    finally:
        METHODS.pop("plugin_level_doc", None)  # the plugin is gone
    with pytest.warns(UserWarning, match="method='plugin_level_doc'.*not registered here"):
        back, meta = load_model(tmp_path / "m.npz")
    assert back.method == "plugin_level_doc" and meta["params"]["method"] == "plugin_level_doc"
    np.testing.assert_array_equal(back.decision_function(X), clf.decision_function(X))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="plugin_level_doc"):
            back.fit(X, y)  # refitting needs the method: the error names it
