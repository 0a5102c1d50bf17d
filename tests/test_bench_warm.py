"""The bench warms every method up before it times anything (numba compiles on first use)."""

import pytest

from mklopt import _bench
from mklopt.methods import PRESETS


def test_every_preset_warms_up_on_a_tiny_problem():
    _bench._WARMED.clear()
    _bench.warm_up(sorted(PRESETS))
    assert _bench._WARMED == {(k, "auto", None) for k in PRESETS}
    # the scale bench warms both storages and the row-cached SMO (a tiny cache)
    _bench.warm_up(["level"], storages=("dense", "on_the_fly"), cache_size=0.01)
    assert {("level", "dense", 0.01), ("level", "on_the_fly", 0.01)} <= _bench._WARMED


def test_a_split_warms_its_methods_before_the_first_timed_run(monkeypatch):
    order = []
    real_warm, real_solve = _bench.warm_up, _bench.solve
    monkeypatch.setattr(_bench, "warm_up", lambda keys: (order.append(("warm", tuple(keys))),
                                                          real_warm(keys)))
    monkeypatch.setattr(_bench, "solve", lambda *a, **k: (order.append(("solve",)),
                                                          real_solve(*a, **k))[1])
    runs, _ = _bench.run_split("sonar", 0, ["level", "lp2"], max_iter=3)
    assert order[0] == ("warm", ("level", "lp2"))
    assert all(o == ("solve",) for o in order[1:]) and len(order) == 3
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
    _bench.warm_up(["level"])
    before = _jit_signatures()
    _bench.run_split("ionosphere", 0, ["level"], max_iter=8)
    after = _jit_signatures()
    new = {k: after[k] - before.get(k, set()) for k in after if after[k] - before.get(k, set())}
    assert not new, f"compiled during the timed split: {sorted(new)}"
