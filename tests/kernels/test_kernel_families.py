"""A user's kernel family in one file plus one registration line (mklopt.kernels.families).

The Laplacian family below is written as a user would, against the public
names only; ``register_kernel_family`` is the one line that makes it
available to banks, estimators, saved models and the command line. Its
kernels are compared with scikit-learn's ``laplacian_kernel`` and scipy's
``cdist``; the built-in families are checked to go through the registry
with exactly the jitted codes they had before it existed.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.metrics.pairwise import laplacian_kernel

from mklopt import MKLClassifier, datasets
from mklopt.kernels import (
    FeatureMap,
    KernelBank,
    KernelFamily,
    KernelFunctions,
    get_kernel_family,
    grid,
    kernel,
    kernel_family_names,
    linear,
    nystroem,
    parse_kernel,
    poly,
    random_rbf,
    rbf,
    register_kernel_family,
)
from mklopt.kernels.families import KERNEL_FAMILIES
from mklopt.persist import ModelFormatError, load_model, save_model


# ------------------------------------------------------------ the user's file
class Laplacian(KernelFamily):
    """``exp(-gamma |x - z|_1)``, evaluated by scipy's cdist (one entry per pair)."""

    name = "laplacian"
    params = ("gamma",)

    def check(self, gamma):
        return {"gamma": self.check_real(gamma, "gamma", low=0.0, strict_low=True)}

    def block(self, A, B, gamma):
        return np.exp(-gamma * cdist(A, B, "cityblock"))

    def diag(self, A, gamma):
        return np.ones(A.shape[0])


laplacian = register_kernel_family(Laplacian(), replace=True)  # the registration line


class ScaledLinear(KernelFamily):
    """``c x.z`` with its exact feature map ``sqrt(c) x`` (and the default diag)."""

    name = "scaled_linear"
    params = ("c",)

    def check(self, c):
        return {"c": self.check_real(c, "c", low=0.0, strict_low=True)}

    def block(self, A, B, c):
        return c * (A @ B.T)

    def feature_map_rank(self, n_used, c):
        return n_used

    def feature_map(self, A, c):
        return np.sqrt(c) * A


scaled_linear = register_kernel_family(ScaledLinear(), replace=True)


# ------------------------------------------------------------------ helpers
@pytest.fixture(scope="module")
def X():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((90, 5))
    X[:, 4] = rng.integers(0, 3, size=90)  # few distinct values: the table path
    return X


def _raw_laplacian(A, B, gamma, features=None):
    if features is not None:
        A, B = A[:, features], B[:, features]
    return laplacian_kernel(A, B, gamma=gamma)


SPECS = [
    rbf(1.0),
    laplacian(0.5),
    laplacian(gamma=0.3, features=[1, 2]),
    poly(2, features=[0]),
    laplacian(2.0, features=[4]),
    linear(),
]


def _reference(X, specs, normalize):
    """Every kernel from an independent formula, normalised to unit trace (or not)."""
    Ks = []
    for s in specs:
        F = slice(None) if s.features is None else list(s.features)
        A = X[:, F]
        if s in (rbf(1.0),):
            K = np.exp(-cdist(A, A, "sqeuclidean") / 2.0)
        elif type(s).__name__ == "Poly":
            K = (A @ A.T + 1.0) ** s.degree
        elif type(s).__name__ == "Linear":
            K = A @ A.T
        else:
            K = _raw_laplacian(X, X, s.gamma, F)
        Ks.append(K / np.trace(K) if normalize else K)
    return np.array(Ks)


# -------------------------------------------------------------- evaluation
@pytest.mark.parametrize("storage", ["dense", "on_the_fly"])
@pytest.mark.parametrize("normalize", ["trace", None])
def test_a_user_family_matches_scikit_learn_in_every_storage(X, storage, normalize):
    bank = KernelBank.from_specs(X, SPECS, storage=storage, normalize=normalize)
    m, n = len(SPECS), X.shape[0]
    ref = _reference(X, SPECS, normalize)
    K = bank.blocks(np.arange(m), np.arange(n), np.arange(n))
    lap = [1, 2, 4]
    np.testing.assert_allclose(K[lap], ref[lap], rtol=0, atol=1e-12)
    np.testing.assert_allclose(K, ref, rtol=1e-12, atol=1e-12)
    # The Laplacian blocks are exactly symmetric, with a unit raw diagonal.
    assert np.array_equal(K[1], K[1].T)
    w = np.linspace(0.1, 1.0, m)
    Kw = np.tensordot(w, ref, axes=1)
    np.testing.assert_allclose(bank.combine(w), Kw, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bank.diag(w), np.diag(Kw), rtol=0, atol=1e-12)
    idx = np.array([3, 0, 77])
    np.testing.assert_allclose(bank.rows(w, idx), Kw[idx], rtol=0, atol=1e-12)
    v = np.random.default_rng(1).standard_normal(n)
    S = np.arange(0, n, 3)
    q_ref = np.einsum("i,kij,j->k", v[S], ref[:, S][:, :, S], v[S])
    np.testing.assert_allclose(bank.quad_forms(v, S), q_ref, rtol=1e-12, atol=1e-12)


def test_quadratic_forms_of_a_large_support_are_summed_by_blocks(X, monkeypatch):
    from mklopt.kernels import functions

    bank = KernelBank.from_specs(X, SPECS, storage="on_the_fly")
    v = np.random.default_rng(3).standard_normal(X.shape[0])
    S = np.arange(1, X.shape[0], 2)
    whole = bank.quad_forms(v, S)
    monkeypatch.setattr(functions, "_HOST_BLOCK", 100)  # blocks of 2 rows of K[S, S]
    np.testing.assert_allclose(bank.quad_forms(v, S), whole, rtol=1e-13, atol=1e-13)
    ref = np.einsum("i,ij,j->", v[S], _reference(X, SPECS, "trace")[1][np.ix_(S, S)], v[S])
    np.testing.assert_allclose(whole[1], ref, rtol=1e-12)


def test_built_in_families_numpy_twins_match_their_jitted_kernels(X):
    """The NumPy block and diag the built-in families declare are what the jitted path computes."""
    specs = [rbf(0.7), rbf(2.0, [1, 3]), poly(3, [0, 2]), poly(1), linear([4]), linear()]
    K = KernelBank.from_specs(X, specs, normalize=None).blocks(
        np.arange(6), np.arange(90), np.arange(90))
    for k, s in enumerate(specs):
        fam = get_kernel_family(type(s).__name__.lower())
        A = X if s.features is None else X[:, list(s.features)]
        np.testing.assert_allclose(fam.block(A, A, **fam.values(s)), K[k], rtol=1e-12,
                                   atol=1e-12)
        np.testing.assert_allclose(fam.diag(A, **fam.values(s)), np.diag(K[k]), rtol=1e-12)


def test_on_the_fly_reads_a_user_family_from_tables_and_directly(X):
    # Feature 4 takes three values over 90 points: its group is tabulated.
    otf = KernelBank.from_specs(X, SPECS, storage="on_the_fly")
    assert otf.storage.table_share > 0
    dense = KernelBank.from_specs(X, SPECS, storage="dense")
    w = np.array([0.0, 1.0, 0.5, 0.0, 2.0, 0.0])  # only Laplacian kernels active
    np.testing.assert_allclose(otf.combine(w), dense.combine(w), rtol=0, atol=1e-14)
    idx = np.arange(10)
    np.testing.assert_allclose(otf.rows(w, idx), dense.rows(w, idx), rtol=0, atol=1e-14)


def test_prediction_kernels_match_scikit_learn(X):
    fn = KernelFunctions.from_data(X, SPECS)
    X_new = np.random.default_rng(5).standard_normal((7, 5))
    C = fn.cross(X_new, [1, 2])
    np.testing.assert_allclose(C[0], laplacian_kernel(X_new, X, gamma=0.5) / fn.scales[1],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        C[1], _raw_laplacian(X_new, X, 0.3, [1, 2]) / fn.scales[2], rtol=0, atol=1e-12)
    # Scales are the raw traces: n for a kernel with a unit diagonal.
    assert fn.scales[1] == X.shape[0]
    w = np.array([0.2, 0.3, 0.5, 0.0, 0.0, 1.0])
    full = fn.cross(X_new)
    np.testing.assert_allclose(fn.combine_cross(X_new, w), np.tensordot(w, full, axes=1),
                               rtol=0, atol=1e-12)


def test_a_family_with_a_feature_map_is_stored_as_its_map(X):
    specs = [scaled_linear(2.5, features=[0, 3]), linear()]
    fm = KernelBank.from_specs(X, specs, storage=FeatureMap(), normalize=None)
    assert fm.storage.fn.kinds == ("exact", "exact")
    A = X[:, [0, 3]]
    K = fm.blocks(np.array([0]), np.arange(90), np.arange(90))[0]
    np.testing.assert_allclose(K, 2.5 * A @ A.T, rtol=1e-12, atol=1e-12)


def test_a_family_without_a_map_is_approximated_or_refused(X):
    with pytest.raises(ValueError, match="no finite feature map"):
        KernelBank.from_specs(X, [laplacian(0.5)], storage="feature_map")
    # Nystroem with every point a landmark reproduces the kernel.
    bank = KernelBank.from_specs(X, [laplacian(0.5)], storage=nystroem(90), normalize=None)
    K = bank.blocks(np.array([0]), np.arange(90), np.arange(90))[0]
    np.testing.assert_allclose(K, laplacian_kernel(X, X, gamma=0.5), atol=1e-8)


# ------------------------------------------------------- estimators and files
@pytest.fixture(scope="module")
def sonar():
    X, y = datasets.load("sonar")
    return datasets.split(X, y, seed=0)


def test_estimator_fits_saves_and_loads_a_user_family(sonar, tmp_path):
    X_tr, X_te, y_tr, _ = sonar
    specs = [laplacian(0.05), laplacian(0.02, features=list(range(10))), rbf(8.0)]
    clf = MKLClassifier(kernels=specs, C=10.0).fit(X_tr, y_tr)
    assert clf.kernel_specs_ == specs
    assert clf.weights_.shape == (3,)
    # Prediction from the support vectors equals the kernel by hand.
    path = tmp_path / "lap.npz"
    save_model(clf, path)
    loaded, meta = load_model(path)
    assert loaded.kernel_specs_ == specs
    np.testing.assert_array_equal(loaded.decision_function(X_te), clf.decision_function(X_te))
    assert meta["kernel_specs"][0] == {"kind": "laplacian", "gamma": 0.05, "features": None}


def test_a_model_of_an_unregistered_family_names_it_when_loaded(sonar, tmp_path):
    X_tr, _, y_tr, _ = sonar

    class Tmp(Laplacian):
        name = "tmp_laplacian"

    tmp = register_kernel_family(Tmp(), replace=True)
    clf = MKLClassifier(kernels=[tmp(0.05), rbf(8.0)], C=10.0).fit(X_tr, y_tr)
    path = tmp_path / "tmp.npz"
    save_model(clf, path)
    del KERNEL_FAMILIES["tmp_laplacian"]
    with pytest.raises(ModelFormatError, match="tmp_laplacian.*registered families: 'rbf'"):
        load_model(path)


def test_saved_specs_of_the_built_in_families_keep_their_json():
    # the estimators' codecs write their specs through the families
    from mklopt.persist._json import spec_from_json as _spec_from_json
    from mklopt.persist._json import spec_to_json as _spec_to_json

    assert _spec_to_json(rbf(2.0, features=[1])) == {"kind": "rbf", "sigma": 2.0,
                                                     "features": [1]}
    assert _spec_to_json(poly(3)) == {"kind": "poly", "degree": 3, "features": None}
    assert _spec_to_json(linear([0, 2])) == {"kind": "linear", "features": [0, 2]}
    for s in (rbf(2.0, features=[1]), poly(3), linear([0, 2]), laplacian(0.5, features=[2])):
        assert _spec_from_json(_spec_to_json(s), 0) == s
    with pytest.raises(ValueError, match=r"has fields \['features', 'kind', 'sigma', "
                                               r"'width'\]"):
        _spec_from_json({"kind": "rbf", "sigma": 1.0, "width": 2, "features": None}, 0)
    with pytest.raises(ValueError, match="spec 3 is invalid: gamma must be > 0"):
        _spec_from_json({"kind": "laplacian", "gamma": -1.0, "features": None}, 3)
    with pytest.raises(ValueError, match="sigma must be a number"):
        _spec_from_json({"kind": "rbf", "sigma": True, "features": None}, 0)


# ---------------------------------------------------------------- bad input
def test_bad_parameters_name_the_argument():
    with pytest.raises(ValueError, match="gamma must be > 0"):
        laplacian(-1.0)
    with pytest.raises(TypeError, match="gamma must be a real number"):
        laplacian(gamma="wide")
    with pytest.raises(TypeError, match="unknown parameter 'sigma'.*gamma"):
        laplacian(sigma=1.0)
    with pytest.raises(TypeError, match="missing parameter.*gamma"):
        laplacian()
    with pytest.raises(TypeError, match="takes 1 parameter"):
        laplacian(1.0, [0], [1])
    with pytest.raises(ValueError, match="features must hold non-negative"):
        laplacian(1.0, features=[-1])
    with pytest.raises(ValueError, match="sigma must be > 0"):
        kernel("rbf", 0.0)


def test_an_unknown_family_lists_the_registered_ones():
    with pytest.raises(ValueError, match="unknown kernel family 'sigmoid'; registered "
                                         "families: 'rbf', 'poly', 'linear'.*'laplacian'"):
        kernel("sigmoid", 1.0)
    with pytest.raises(ValueError, match="registered families"):
        get_kernel_family("Laplacian")


def test_registration_refuses_clashes_and_malformed_families():
    with pytest.raises(ValueError, match="already registered.*replace=True"):
        register_kernel_family(Laplacian())
    assert register_kernel_family(Laplacian(), replace=True).name == "laplacian"
    with pytest.raises(ValueError, match="built in"):
        register_kernel_family(type("R", (Laplacian,), {"name": "rbf"})(), replace=True)

    class NoName(KernelFamily):
        name = "not a name"

    with pytest.raises(TypeError, match="family.name"):
        register_kernel_family(NoName())

    class Reserved(KernelFamily):
        name = "reserved"
        params = ("features",)

    with pytest.raises(ValueError, match="reserved"):
        register_kernel_family(Reserved())
    with pytest.raises(TypeError, match="must be a KernelFamily"):
        register_kernel_family(object())
    assert "reserved" not in kernel_family_names()


def test_a_block_of_the_wrong_shape_is_reported(X):
    class Broken(Laplacian):
        name = "broken_laplacian"

        def block(self, A, B, gamma):
            return np.ones((A.shape[0], 1))

    broken = register_kernel_family(Broken(), replace=True)
    try:
        with pytest.raises(ValueError, match="'broken_laplacian': block\\(\\) returned shape"):
            KernelBank.from_specs(X, [broken(1.0)], storage="dense")
    finally:
        del KERNEL_FAMILIES["broken_laplacian"]


# --------------------------------------------------- text form (command line)
def test_parse_kernel_reads_every_registered_family():
    assert parse_kernel("laplacian(0.5)") == laplacian(0.5)
    assert parse_kernel(" laplacian(gamma=0.5, features=[1, 2]) ") == laplacian(0.5, [1, 2])
    assert parse_kernel("rbf(2.0)") == rbf(2.0)
    assert parse_kernel("poly(degree=2, features=[0])") == poly(2, [0])
    assert parse_kernel("linear") == linear()
    with pytest.raises(ValueError, match="unknown kernel family 'gauss'"):
        parse_kernel("gauss(1.0)")
    with pytest.raises(ValueError, match="not of the form"):
        parse_kernel("rbf(")
    with pytest.raises(ValueError, match="literal"):
        parse_kernel("rbf(sigma=x)")
    with pytest.raises(ValueError, match="unknown parameter 'width'"):
        parse_kernel("rbf(width=1)")


ROOT = pathlib.Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "examples" / "plugin"


def _dist_info(folder, entry_points, name):
    """An installed distribution declaring ``entry_points``, as pip would write it."""
    info = folder / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(entry_points)
    return folder


def test_cli_fits_and_predicts_with_a_plugin_family(tmp_path):
    # A fresh process that imports nothing by hand: the family comes from the
    # mklopt.kernels entry point of examples/plugin.
    site = _dist_info(tmp_path / "site", "[mklopt.kernels]\nlaplacian = mkl_extras.laplacian\n",
                      "mkl_extras")
    X, y = datasets.load("sonar")
    X, y = X[::3, :6], y[::3]
    data = tmp_path / "d.csv"
    rows = [",".join([f"f{i}" for i in range(6)] + ["label"])]
    rows += [",".join([*(repr(float(v)) for v in x), str(int(t))]) for x, t in zip(X, y)]
    data.write_text("\n".join(rows) + "\n")
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(map(str, (ROOT, PLUGIN, site)))}
    model = tmp_path / "m.npz"

    def run(*args):
        return subprocess.run([sys.executable, "-m", "mklopt", *map(str, args)],
                              capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=300)

    fit = run("fit", data, "--kernels", "laplacian(gamma=0.2); rbf(4.0)", "--model", model)
    assert fit.returncode == 0, fit.stderr
    pred = run("predict", model, data)
    assert pred.returncode == 0, pred.stderr
    clf, meta = load_model(model)
    assert clf.kernel_specs_ == [laplacian(0.2), rbf(4.0)]
    assert meta["kernel_specs"][0] == {"kind": "laplacian", "gamma": 0.2, "features": None}
    bad = run("fit", data, "--kernels", "laplace(1)", "--model", model)
    assert bad.returncode == 2
    assert "unknown kernel family 'laplace'" in bad.stderr and "'laplacian'" in bad.stderr


def test_an_entry_point_feeds_the_family_registry(tmp_path, monkeypatch):
    from mklopt import plugins

    site = _dist_info(tmp_path / "site",
                      "[mklopt.kernels]\nlaplacian_ep = mkl_extras_ep.laplacian\n",
                      "mkl_extras_ep")
    # A copy of the plugin under another name, so that this test imports it afresh.
    pkg = tmp_path / "src" / "mkl_extras_ep"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    src = (PLUGIN / "mkl_extras" / "laplacian.py").read_text()
    (pkg / "laplacian.py").write_text(src.replace('name = "laplacian"', 'name = "laplacian_ep"'))
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(plugins, "_loaded", {})
    try:
        assert "laplacian_ep" not in KERNEL_FAMILIES
        spec = kernel("laplacian_ep", gamma=0.5)  # loads the group on first miss
        assert [ep.name for ep in plugins.loaded("mklopt.kernels")] == ["laplacian_ep"]
        X = np.random.default_rng(0).standard_normal((12, 3))
        K = KernelBank.from_specs(X, [spec], normalize=None).blocks(
            np.array([0]), np.arange(12), np.arange(12))[0]
        np.testing.assert_allclose(K, laplacian_kernel(X, gamma=0.5), rtol=0, atol=1e-12)
    finally:
        KERNEL_FAMILIES.pop("laplacian_ep", None)
        for mod in [m for m in sys.modules if m.startswith("mkl_extras_ep")]:
            del sys.modules[mod]


# ------------------------------------------------------ built-ins unchanged
def test_built_in_specs_keep_their_jitted_codes():
    """The plan of the built-in families is what the spec switch wrote before the registry."""
    from mklopt._jit.groups import GAUSSIAN, POLY
    from mklopt.kernels.functions import _Plan

    specs = [*grid(3), *random_rbf(5, 3, subset_size=(1, 2), seed=0), linear([2]), poly(4)]
    plan = _Plan(specs, 3)
    for k, s in enumerate(specs):
        name = type(s).__name__
        want = {
            "RBF": (GAUSSIAN, getattr(s, "sigma", None), 0.0),
            "Poly": (POLY, float(getattr(s, "degree", 0)), 1.0),
            "Linear": (POLY, 1.0, 0.0),
        }[name]
        assert (plan.kind[k], plan.param[k], plan.offset[k]) == want
    # Groups: one per feature subset, in order of first appearance.
    first = list(dict.fromkeys(s.features for s in specs))
    assert plan.features == first and not plan.is_host.any()


def test_a_user_family_gets_groups_of_its_own():
    from mklopt.kernels.functions import _Plan

    specs = [rbf(1.0), laplacian(1.0), laplacian(2.0), rbf(1.0, [0]), laplacian(1.0, [0])]
    plan = _Plan(specs, 2)
    assert plan.features == [None, None, (0,), (0,)]
    assert plan.is_host.tolist() == [False, True, False, True]
    narrow, wide = plan.split(np.arange(4))
    assert set(narrow.tolist()) | set(wide.tolist()) == {0, 2}
    assert plan.host(np.arange(4)).tolist() == [1, 3]


# ------------------------------------------------------------- Dask workers
def test_sharded_banks_evaluate_a_user_family_on_the_workers(X):
    pytest.importorskip("distributed")
    import importlib

    from tests._cluster import local_client

    specs = [laplacian(0.5), laplacian(0.3, features=[1, 2]), rbf(1.0), poly(2, [0])]
    serial = KernelBank.from_specs(X, specs, storage="on_the_fly")
    with local_client() as client:
        # A worker is a new interpreter: without the family it says so.
        with pytest.raises(ValueError, match="'laplacian', which is not registered in this "
                                             "process"):
            KernelBank.from_specs(X, specs, storage="on_the_fly", client=client)
        # What an entry point in the mklopt.kernels group does on each worker.
        client.run(importlib.import_module, __name__)
        for storage in ("on_the_fly", "dense"):
            bank = KernelBank.from_specs(X, specs, storage=storage, client=client)
            w = np.array([0.4, 0.3, 0.2, 0.1])
            idx = np.array([5, 1, 60])
            np.testing.assert_allclose(bank.rows(w, idx), serial.rows(w, idx), rtol=0,
                                       atol=1e-15)
            v = np.random.default_rng(2).standard_normal(X.shape[0])
            S = np.arange(0, X.shape[0], 2)
            np.testing.assert_allclose(bank.quad_forms(v, S), serial.quad_forms(v, S),
                                       rtol=1e-13, atol=1e-13)
