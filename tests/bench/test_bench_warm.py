"""The bench warms every method up before it times anything (numba compiles on first use)."""

import pytest

from mklopt.bench import runs as _bench
from mklopt.methods import PRESETS


@pytest.mark.slow  # compiles every method (45 s loaded); the split tests below cover level
def test_every_preset_warms_up_on_a_tiny_problem():
    _bench._WARMED.clear()
    _bench.warm_up(sorted(PRESETS))
    assert _bench._WARMED == {(k, "auto", None) for k in PRESETS}
    # the scale bench warms both storages and the row-cached SMO (a tiny cache)
    _bench.warm_up(["level"], storages=("dense", "on_the_fly"), cache_size=0.01)
    assert {("level", "dense", 0.01), ("level", "on_the_fly", 0.01)} <= _bench._WARMED


def test_a_split_warms_its_methods_before_the_first_timed_run(monkeypatch):
    order = []
    real_solve = _bench.solve
    # The warm-up is recorded, not run: what it compiles is the business of
    # the tests below, and running it here compiled both storages' paths.
    monkeypatch.setattr(_bench, "warm_up", lambda keys, **kw: order.append(("warm", tuple(keys))))
    monkeypatch.setattr(_bench, "solve", lambda *a, **k: (order.append(("solve",)),
                                                          real_solve(*a, **k))[1])
    runs, _ = _bench.run_split("sonar", 0, ["level", "lp2"], max_iter=3)
    # each method is warmed up just before its own timed solve
    warms = [i for i, o in enumerate(order) if o[0] == "warm"]
    assert [order[i] for i in warms] == [("warm", ("level",)), ("warm", ("lp2",))]
    assert warms[0] == 0 and order[warms[1] - 1] == ("solve",) and order[-1] == ("solve",)
    assert [r.method for r in runs] == ["level", "lp2"]


def test_warm_up_refuses_unknown_keys():
    with pytest.raises((KeyError, ValueError), match="nosuch"):
        _bench.warm_up(["nosuch"])


def _jit_signatures():
    """Every jitted routine's compiled (or cache-loaded) signatures in this process."""
    import importlib
    import pkgutil

    import numba.core.registry

    import mklopt._jit as jit

    out = {}
    for mod in pkgutil.iter_modules(jit.__path__):
        module = importlib.import_module(f"mklopt._jit.{mod.name}")
        for name, obj in vars(module).items():
            if isinstance(obj, numba.core.registry.CPUDispatcher):
                out[f"{mod.name}.{name}"] = set(obj.signatures)
    return out


def test_a_warmed_level_split_compiles_nothing_new():
    # The tiny warm-up problem takes the BLAS paths of quad_forms and combine
    # (large support, dense weights); a real split takes the jitted ones.
    # Everything a split runs, prediction included, must be ready before
    # its first timed solve.
    _bench._WARMED.clear()
    _bench.warm_up(["level"], storages=("dense",))  # what the split itself warms: its bank's
    before = _jit_signatures()
    _bench.run_split("ionosphere", 0, ["level"], max_iter=8)
    after = _jit_signatures()
    new = {k: after[k] - before.get(k, set()) for k in after if after[k] - before.get(k, set())}
    assert not new, f"compiled during the timed split: {sorted(new)}"


@pytest.mark.slow  # compiles the parallel boosting round (19 s of the default run)
def test_a_warmed_boosting_run_compiles_nothing_new_when_its_rounds_go_parallel(monkeypatch):
    # Only rounds of 20 ms and more take the parallel loop; the warm-up
    # compiles it for both forms the oracle passes (a dense bank read in
    # place with the query's read-only indices, and computed blocks).
    import numpy as np

    import mklopt.oracles.weak_learners as wl
    from mklopt import KernelBank
    from mklopt.kernels import poly, rbf

    _bench._WARMED.clear()
    _bench.warm_up(["mkboost-d1"])
    before = _jit_signatures()
    monkeypatch.setattr(wl, "PARALLEL_ROUND_SECONDS", 1e-12)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    used = []
    real = wl._run_round
    monkeypatch.setattr(wl, "_run_round", lambda c, *a: (used.append(c is not None), real(c, *a)))
    for storage in ("dense", "on_the_fly"):
        bank = KernelBank.from_specs(X, [rbf(1.0), poly(2)], storage=storage)
        oracle = wl.WeakLearners(bank, y, C=1.0)
        for _ in range(3):
            oracle(wl.BoostQuery.make(rng.choice(60, 20), np.arange(2)))
    after = _jit_signatures()
    rounds = [k for k in after if k.startswith(("boost.weak_svm_round", "boost._weak_svm"))]
    assert "boost.weak_svm_round_parallel" in rounds
    new = {k: after[k] - before.get(k, set()) for k in rounds if after[k] - before.get(k, set())}
    assert any(used) and not new, f"compiled after the warm-up: {sorted(new)}"


def test_dual_methods_lists_each_class_once_presets_first():
    from mklopt.methods import get_method, method_names

    keys = _bench.dual_methods()
    presets = [k for k in PRESETS if getattr(PRESETS[k].cls, "oracle_kind", "dual") == "dual"]
    assert keys[: len(presets)] == presets
    classes = [type(_bench.make_method(k)) for k in keys]
    assert set(classes) == {get_method(n) for n in method_names(oracle_kind="dual")}
    assert len(classes[len(presets):]) == len(set(classes[len(presets):]))
