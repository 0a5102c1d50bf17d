"""A user's storage is one class and one registration line; "auto" is one rule.

The storage below is written as a user would, in plain NumPy against the
documented protocol (``mklopt.kernels.Storage``), registered once, and then
used through ``KernelBank.from_specs``, both estimators, one-vs-one views,
saved models and a sharded bank, giving the dense storage's answers. The
"auto" policy is one function that the unsharded and the sharded bank both
apply; its decisions are checked here, and the shards' kernels are built
from the client's normalisation constants, never recomputed.
"""

import ast
import pathlib
from collections import Counter

import numpy as np
import pytest

from mklopt import (
    KernelBank,
    MKBoostClassifier,
    MKLClassifier,
    MKLClassifierCV,
    MKLRegressor,
    plugins,
    solve,
)
from mklopt.kernels import (
    STORAGES,
    Storage,
    auto_storage,
    get_storage,
    grid,
    linear,
    make_storage,
    poly,
    rbf,
    register_storage,
    storage_names,
)
from mklopt.kernels import factory as factory_module
from mklopt.kernels.functions import KernelFunctions
from mklopt.kernels.storage import DenseStorage, OnTheFlyStorage, table_share
from mklopt.methods import LevelBundle
from mklopt.oracles import SVMDual
from mklopt.persist import load_model, save_model
from mklopt.stopping import DualityGap, MaxIter

ROOT = pathlib.Path(__file__).resolve().parents[2]


# ------------------------------------------------------------- the user's storage
class CountingStorage:
    """The normalised kernels in one float64 array, read with NumPy; counts every read."""

    name = "counting"

    def __init__(self, functions, max_memory=None):
        self.K = functions.matrices()
        self.n_kernels, self.n_samples = functions.n_kernels, functions.n_samples
        self.reads = Counter()

    @property
    def nbytes(self):
        return int(self.K.nbytes)

    def diag(self, w):
        self.reads["diag"] += 1
        return np.einsum("k,kii->i", w, self.K)

    def rows(self, w, idx, out):
        self.reads["rows"] += 1
        nz = np.flatnonzero(w)
        out[...] = np.tensordot(w[nz], self.K[nz][:, idx, :], axes=1)
        return out

    def combine(self, w, out):
        self.reads["combine"] += 1
        nz = np.flatnonzero(w)
        out[...] = np.tensordot(w[nz], self.K[nz], axes=1)
        return out

    def quad_forms(self, v, support, kernels=None):
        self.reads["quad_forms"] += 1
        ks = np.arange(self.n_kernels) if kernels is None else kernels
        vS = v[support]
        return np.einsum("i,kij,j->k", vS, self.K[np.ix_(ks, support, support)], vS)

    def blocks(self, kernels, rows, cols):
        self.reads["blocks"] += 1
        return self.K[np.ix_(kernels, rows, cols)]


register_storage("counting", CountingStorage)  # the one registration line


def rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def problem(n=60, d=3, seed=0, classes=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    cuts = np.quantile(score, np.linspace(0, 1, classes + 1)[1:-1])
    return X, np.searchsorted(cuts, score)


SPECS = [rbf(0.5), rbf(2.0), poly(2), linear([0]), rbf(1.0, [1, 2])]


# ------------------------------------------------------------- registry
def test_a_registered_storage_serves_every_verb_as_dense_does():
    X, _ = problem()
    mine = KernelBank.from_specs(X, SPECS, storage="counting")
    dense = KernelBank.from_specs(X, SPECS, storage="dense")
    assert isinstance(mine.storage, CountingStorage) and "storage='counting'" in repr(mine)
    assert isinstance(mine.storage, Storage) and isinstance(dense.storage, Storage)
    np.testing.assert_array_equal(mine.scales, dense.scales)
    rng = np.random.default_rng(1)
    w = np.array([0.3, 0.0, 0.5, 0.2, 0.0])
    idx = rng.choice(60, 9)
    v = rng.normal(size=60)
    S = np.sort(rng.choice(60, 20, replace=False))
    assert rel(mine.combine(w), dense.combine(w)) <= 1e-14
    assert rel(mine.rows(w, idx), dense.rows(w, idx)) <= 1e-14
    assert rel(mine.diag(w), dense.diag(w)) <= 1e-14
    assert rel(mine.quad_forms(v, S), dense.quad_forms(v, S)) <= 1e-12
    assert rel(mine.quad_forms(v, S, [4, 0]), dense.quad_forms(v, S, [4, 0])) <= 1e-12
    # single kernels are the same numbers: the same functions, the same constants
    np.testing.assert_array_equal(mine.blocks([1, 3], idx, S), dense.blocks([1, 3], idx, S))
    # and an oracle run on it reaches the dense run's certified optimum
    y = np.where(X[:, 0] > 0, 1, -1)
    stop = DualityGap(1e-8) | MaxIter(300)
    a = solve(SVMDual(mine, y, C=10.0, tol=1e-8), LevelBundle(), stop=stop)
    b = solve(SVMDual(dense, y, C=10.0, tol=1e-8), LevelBundle(), stop=stop)
    assert a.converged and b.converged
    assert rel(a.value, b.value) <= 1e-7
    assert mine.storage.reads["combine"] >= 1 and mine.storage.reads["quad_forms"] >= 1


def test_unknown_names_are_refused_with_the_registered_ones_listed():
    X, y = problem()
    with pytest.raises(ValueError) as info:
        KernelBank.from_specs(X, SPECS, storage="sparse")
    msg = str(info.value)
    assert "'sparse'" in msg
    for name in ("auto", "dense", "on_the_fly", "feature_map", "counting"):
        assert repr(name) in msg
    with pytest.raises(ValueError, match=r"storage must be one of .*'counting'.*got 'disk'"):
        MKLClassifier(storage="disk").fit(X, y)
    with pytest.raises(ValueError, match="'counting'"):
        get_storage("nope")
    with pytest.raises(TypeError, match="storage must be one of .*got int"):
        KernelBank.from_specs(X, SPECS, storage=3)


def test_registration_rules():
    assert storage_names()[:5] == ["auto", "dense", "on_the_fly", "products", "feature_map"]
    assert "counting" in storage_names() and set(STORAGES) <= set(storage_names())
    entry = get_storage("counting")
    assert entry.factory is CountingStorage and entry.options == ("max_memory",)
    # registering the same factory again is harmless (re-importing a module)
    assert register_storage("counting", CountingStorage).factory is CountingStorage

    class Other(CountingStorage):
        pass

    with pytest.raises(ValueError, match="'counting' is already registered.*replace=True"):
        register_storage("counting", Other)
    with pytest.raises(ValueError, match="reserved"):
        register_storage("auto", Other)
    with pytest.raises(TypeError, match="factory must be callable"):
        register_storage("x", 3)
    with pytest.raises(TypeError, match="name"):
        register_storage("", Other)
    try:
        assert register_storage("counting", Other, replace=True).factory is Other
        # as a decorator, with the options the factory names
        @register_storage("float32_test")
        def float32(functions, dtype, max_memory):
            return CountingStorage(functions)

        assert get_storage("float32_test").options == ("dtype", "max_memory")
    finally:
        register_storage("counting", CountingStorage, replace=True)
        factory_module._REGISTRY.pop("float32_test", None)


def test_storages_from_an_entry_point(tmp_path, monkeypatch):
    pkg = tmp_path / "src"
    pkg.mkdir()
    (pkg / "my_storages_ep.py").write_text(
        "from mklopt.kernels import register_storage\n"
        "from mklopt.kernels.storage import OnTheFlyStorage\n"
        "register_storage('fly_ep', OnTheFlyStorage)\n"
    )
    info = tmp_path / "site" / "my_storages-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: my_storages\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[mklopt.storages]\nfly = my_storages_ep\n")
    monkeypatch.syspath_prepend(str(pkg))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(plugins, "_loaded", {})
    try:
        X, _ = problem()
        bank = KernelBank.from_specs(X, SPECS, storage="fly_ep")
        assert isinstance(bank.storage, OnTheFlyStorage)
        assert [ep.name for ep in plugins.loaded("mklopt.storages")] == ["fly"]
    finally:
        factory_module._REGISTRY.pop("fly_ep", None)


# ------------------------------------------------------------- estimators
def test_estimators_take_a_registered_name_and_give_the_dense_model(tmp_path, monkeypatch):
    X, y = problem(n=70, classes=3)
    Xt = np.random.default_rng(5).normal(size=(15, 3))
    kw = dict(kernels=SPECS, C=10.0, tol=1e-6)
    mine = MKLClassifier(storage="counting", **kw).fit(X, y)
    dense = MKLClassifier(storage="dense", **kw).fit(X, y)
    # three classes: the pairs read views of one bank, built by the factory
    np.testing.assert_allclose(mine.weights_, dense.weights_, atol=1e-6)
    assert rel(mine.decision_function(Xt), dense.decision_function(Xt)) <= 1e-6
    np.testing.assert_array_equal(mine.predict(Xt), dense.predict(Xt))
    yb = np.where(y == 0, -1, 1)
    boost = MKBoostClassifier(kernels=SPECS, n_rounds=5, random_state=0, storage="counting")
    ref = MKBoostClassifier(kernels=SPECS, n_rounds=5, random_state=0, storage="dense")
    np.testing.assert_allclose(boost.fit(X, yb).decision_function(Xt),
                               ref.fit(X, yb).decision_function(Xt), atol=1e-8)
    # the task estimators and the cross-validating ones (folds read views)
    t = X[:, 0] - 0.5 * X[:, 1]
    reg = dict(kernels=SPECS, C=10.0, tol=1e-6)
    r_mine = MKLRegressor(storage="counting", **reg).fit(X, t)
    r_dense = MKLRegressor(storage="dense", **reg).fit(X, t)
    assert r_mine.gap_ <= 1e-6 and rel(r_mine.result_.value, r_dense.result_.value) <= 2e-6
    # the predictions agree as well as the built-in storages' do at this gap (1e-4)
    assert rel(r_mine.predict(Xt), r_dense.predict(Xt)) <= 1e-3
    cv = dict(kernels=SPECS, Cs=[1.0, 10.0], cv=3, tol=1e-4)
    a = MKLClassifierCV(storage="counting", **cv).fit(X, yb)
    b = MKLClassifierCV(storage="dense", **cv).fit(X, yb)
    assert a.best_C_ == b.best_C_
    assert rel(a.decision_function(Xt), b.decision_function(Xt)) <= 1e-6
    # a model saved with a user's storage loads where that storage is not registered
    path = tmp_path / "m.npz"
    save_model(mine, path)
    monkeypatch.delitem(factory_module._REGISTRY, "counting")
    back, _ = load_model(path)
    assert back.storage == "counting"
    np.testing.assert_array_equal(back.decision_function(Xt), mine.decision_function(Xt))
    with pytest.raises(ValueError, match="storage must be one of"):
        back.fit(X, y)


def test_a_view_of_a_user_storage_is_built_by_its_factory():
    X, _ = problem(n=50)
    rows = np.arange(0, 50, 3)
    bank = KernelBank.from_specs(X, SPECS, storage="counting", normalize=None)
    sub = bank.view(rows, normalize="trace")
    own = KernelBank.from_specs(X[rows], SPECS, storage="dense")
    assert isinstance(sub.storage, CountingStorage)
    w = [0.2, 0.2, 0.2, 0.2, 0.2]
    assert rel(sub.combine(w), own.combine(w)) <= 1e-13


# ------------------------------------------------------------- the "auto" rule
def coded_and_continuous(n=120, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 3, size=(n, 4)).astype(float), rng.normal(size=(n, 4))


def test_the_auto_rule():
    coded, cont = coded_and_continuous()
    fc = KernelFunctions.from_data(cont, grid(4))
    fk = KernelFunctions.from_data(coded, grid(4))
    # dense only when it fits, and never when most kernels are read from tables
    assert auto_storage(fc, True) == "dense"
    assert auto_storage(fc, False) == "on_the_fly"
    assert auto_storage(fk, True) == "on_the_fly"
    assert auto_storage(fk, False) == "on_the_fly"
    # the threshold is half of the kernels, inclusive
    X = np.column_stack([coded[:, 0], cont[:, 0]])
    half = KernelFunctions.from_data(X, [rbf(1.0, [0]), rbf(1.0, [1])])
    third = KernelFunctions.from_data(X, [rbf(1.0, [0]), rbf(1.0, [1]), rbf(2.0, [1])])
    assert table_share(half) == 0.5 and auto_storage(half, True) == "on_the_fly"
    assert table_share(third) == pytest.approx(1 / 3) and auto_storage(third, True) == "dense"
    # the share is the one the on-the-fly storage then reads from tables
    for fn in (fc, fk, half, third):
        assert table_share(fn) == OnTheFlyStorage(fn).table_share
    # small banks have no tables
    assert table_share(KernelFunctions.from_data(coded[:40], grid(4))) == 0.0


def test_the_auto_rule_and_the_storage_find_the_tables_once(monkeypatch):
    # "auto" weighs the table share, then builds the on-the-fly storage on
    # the same kernel functions: one search for distinct values between them
    from mklopt.kernels import on_the_fly as st_mod

    calls = []
    real = st_mod._find_table_groups
    monkeypatch.setattr(st_mod, "_find_table_groups", lambda fn: calls.append(fn) or real(fn))
    coded, _ = coded_and_continuous()
    bank = KernelBank.from_specs(coded, grid(4))
    assert bank.storage.name == "on_the_fly" and bank.storage.table_share >= 0.5
    assert len(calls) == 1
    # another functions object (other features) searches afresh
    KernelBank.from_specs(coded[::-1].copy(), grid(4))
    assert len(calls) == 2


def test_an_unsharded_bank_applies_the_auto_rule():
    coded, cont = coded_and_continuous()
    assert KernelBank.from_specs(cont, grid(4)).storage.name == "dense"
    assert KernelBank.from_specs(coded, grid(4)).storage.name == "on_the_fly"
    # too large for max_memory: on the fly (78 x 120^2 x 8 bytes > 1 MB)
    assert KernelBank.from_specs(cont, grid(4), max_memory=10**6).storage.name == "on_the_fly"
    # the factory builds what auto decided; nothing is normalised again
    fn = KernelFunctions.from_data(cont, grid(4))
    st = make_storage(auto_storage(fn, True), fn)
    np.testing.assert_array_equal(st.K, fn.matrices())


# ------------------------------------------------------------- no import circle
def _imported_modules(path):
    mods = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            mods.add(("." * node.level) + (node.module or ""))
        elif isinstance(node, ast.Import):
            mods.update(a.name for a in node.names)
    return mods


def test_bank_and_shards_share_the_factory_without_importing_each_other():
    kernels = ROOT / "mklopt" / "kernels"
    sharded = _imported_modules(kernels / "sharded.py")
    factory = _imported_modules(kernels / "factory.py")
    assert ".factory" in sharded and ".factory" in _imported_modules(kernels / "bank.py")
    for mods in (sharded, factory):
        assert not {".bank", "mklopt.kernels.bank", ".sharded"} & mods, mods


def test_a_shard_uses_the_constants_it_is_given(monkeypatch):
    pytest.importorskip("distributed")
    from mklopt.kernels.sharded import _Shard

    X, _ = problem(n=40)
    fn = KernelFunctions.from_data(X, SPECS)

    def never(*args, **kwargs):
        raise AssertionError("a shard must not normalise the kernels again")

    monkeypatch.setattr(KernelFunctions, "from_data", never)
    ks = np.array([1, 2, 4])
    scales = 2.0 * fn.scales[ks]  # not what the shard's points would give
    for name in ("dense", "on_the_fly", "counting"):
        shard = _Shard(X, [SPECS[k] for k in ks], scales, get_storage(name), np.float64, None)
        assert shard.info()["storage"] == name
        got = shard.blocks(np.arange(3), np.arange(40), np.arange(40))
        np.testing.assert_allclose(got, 0.5 * fn.matrices(ks), rtol=1e-13, atol=0)


# ------------------------------------------------------------- a sharded bank
@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from tests._cluster import local_client

    with local_client() as c:
        yield c


def test_sharded_banks_build_through_the_factory_and_apply_the_same_rule(client):
    from tests._cluster import no_hang

    coded, cont = coded_and_continuous()
    specs = grid(4)
    with no_hang(240):
        dense = KernelBank.from_specs(cont, specs, storage="dense")
        sharded = KernelBank.from_specs(cont, specs, client=client)  # "auto"
        try:
            assert {s.storage for s in sharded.storage.shards} == {"dense"}
            assert sharded.storage.n_shards == 2
            # the client's constants, and the dense bank's kernels to the last bit
            np.testing.assert_array_equal(sharded.scales, dense.scales)
            m, n = dense.n_kernels, dense.n_samples
            everything = np.arange(n)
            np.testing.assert_array_equal(sharded.blocks(np.arange(m), everything, everything),
                                          dense.K)
        finally:
            sharded.storage.close()
        one = KernelBank.from_specs(cont, specs, storage="dense", client=client, n_shards=1)
        try:
            w = np.zeros(m)
            w[[0, 5, 17, 40]] = [0.1, 0.4, 0.3, 0.2]  # sparse: the jitted sum, in kernel order
            np.testing.assert_array_equal(one.combine(w), dense.combine(w))
        finally:
            one.storage.close()
        # the unsharded rule: most kernels on coded features are computed on the fly
        fly = KernelBank.from_specs(coded, specs, client=client)
        try:
            assert {s.storage for s in fly.storage.shards} == {"on_the_fly"}
            assert KernelBank.from_specs(coded, specs).storage.name == "on_the_fly"
        finally:
            fly.storage.close()
        # a user's storage on the workers: its factory travels, not its name
        mine = KernelBank.from_specs(cont, specs, storage="counting", client=client)
        try:
            assert {s.storage for s in mine.storage.shards} == {"counting"}
            rows, cols = np.arange(0, n, 7), np.arange(0, n, 3)
            np.testing.assert_array_equal(mine.blocks(np.arange(m), rows, cols),
                                          dense.blocks(np.arange(m), rows, cols))
            w = np.full(m, 1.0 / m)
            assert rel(mine.combine(w), dense.combine(w)) <= 1e-13
        finally:
            mine.storage.close()


def test_storage_traits_come_from_the_registry_not_from_names():
    from mklopt.kernels import nystroem
    from mklopt.kernels.factory import storage_traits

    assert storage_traits("auto") == (True, False)
    assert storage_traits("dense") == (True, False)
    assert storage_traits("products") == (True, False)
    assert storage_traits("feature_map") == (False, True)
    assert storage_traits(nystroem(n_components=5)) == (False, True)
    try:
        register_storage("ordered_doc", lambda functions: DenseStorage(functions.matrices()),
                         replace=True)
        assert storage_traits("ordered_doc") == (False, False)  # a user's: order kept
        register_storage("free_doc", lambda functions: DenseStorage(functions.matrices()),
                         order_free=True, replace=True)
        assert storage_traits("free_doc") == (True, False)
    finally:
        for name in ("ordered_doc", "free_doc"):
            factory_module._REGISTRY.pop(name, None)


@pytest.mark.parametrize("make", ["MKLClassifierCV", "MKLRegressorCV"])
def test_cv_estimators_refuse_approximate_storages_naming_the_option(make):
    import mklopt
    from mklopt.kernels import nystroem

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0).astype(int) if make == "MKLClassifierCV" else X[:, 0]
    with pytest.raises(ValueError, match="storage=.*brings approximate kernels.*'auto'"):
        getattr(mklopt, make)(storage=nystroem(n_components=5), cv=3, Cs=2).fit(X, y)
