"""The one registry type (mklopt._registry.Registry) and the tables built on it."""

import pathlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mklopt import plugins
from mklopt._registry import Registry


class _Factory:
    """A stand-in entry with an identity of its own (as an oracle's factory)."""

    def __init__(self, factory, params=()):
        self.factory, self.params = factory, params


# ---------------------------------------------------------------- collisions
def test_a_taken_name_is_refused_unless_replace():
    reg = Registry("widget")
    first, other = object(), object()
    assert reg.register("a", first) is first
    with pytest.raises(ValueError, match=r"^widget 'a' is already registered \(to .*\); "
                                         r"pass replace=True to take it over$"):
        reg.register("a", other)
    assert reg["a"] is first
    assert reg.register("a", other, replace=True) is other
    assert reg.get("a") is other


def test_the_same_entry_again_changes_nothing():
    reg = Registry("widget")
    entry = object()
    reg.register("a", entry)
    reg.register("b", object())
    reg.register("a", entry)  # a notebook cell run twice, a module imported twice
    assert reg["a"] is entry and reg.names() == ["a", "b"]
    # equal entries are the same registration too (two equal presets)
    reg.register("t", (1, 2))
    reg.register("t", (1, 2))
    assert reg["t"] == (1, 2)


def test_entries_of_one_identity_are_one_registration():
    # an oracle re-registered with other parameters: same factory, new entry
    reg = Registry("oracle", identity=lambda e: e.factory)
    f, g = (lambda: 0), (lambda: 1)
    reg.register("x", _Factory(f, ("C",)))
    newer = reg.register("x", _Factory(f, ("C", "tol")))
    assert reg["x"] is newer
    with pytest.raises(ValueError, match="already registered"):
        reg.register("x", _Factory(g))


def test_replacing_keeps_the_place_in_the_order():
    reg = Registry("widget")
    for name in "abc":
        reg.register(name, object())
    reg.register("a", object(), replace=True)
    assert reg.names() == ["a", "b", "c"]


def test_frozen_names_are_never_taken_over():
    reg = Registry("kernel family", plural="families")
    builtin = object()
    reg.register("rbf", builtin)
    reg.freeze("rbf")
    with pytest.raises(ValueError, match="^kernel family 'rbf' is built in and cannot be replaced$"):
        reg.register("rbf", object(), replace=True)
    with pytest.raises(ValueError, match="built in"):
        reg["rbf"] = object()
    reg.register("rbf", builtin)  # the same family again is fine
    with pytest.raises(ValueError, match="cannot freeze unregistered families"):
        reg.freeze("nope")


@given(st.lists(st.sampled_from("abcdefg"), max_size=20))
def test_names_are_in_the_order_of_first_registration(keys):
    reg = Registry("widget")
    for k in keys:
        reg.register(k, k.upper())  # equal entries: re-registering is harmless
    assert reg.names() == list(dict.fromkeys(keys)) == list(reg)
    assert len(reg) == len(set(keys))
    assert dict(reg.items()) == {k: k.upper() for k in keys}


# ------------------------------------------------------------------- lookups
def test_an_unknown_name_lists_the_registered_ones():
    reg = Registry("method")
    for name in ("level", "silp", "lp"):
        reg.register(name, name)
    msg = "unknown method 'newton'; registered methods: 'level', 'silp', 'lp'"
    with pytest.raises(ValueError, match=f"^{re.escape(msg)}$"):
        reg.get("newton")
    with pytest.raises(ValueError, match="unknown method"):
        reg.get(["not", "hashable"])
    assert reg.get("newton", None) is None and reg.get(["x"], 7) == 7
    assert ["x"] not in reg and "newton" not in reg and "lp" in reg
    with pytest.raises(ValueError, match="^unknown thing 'x'; registered things: none$"):
        Registry("thing").get("x")


def test_a_registry_may_word_its_own_error():
    reg = Registry("oracle", unknown=lambda key, keys: f"{key[1]!r} is not among {keys}")
    reg.register(("regression", "squared"), 1)
    with pytest.raises(ValueError, match=r"^'nu' is not among \[\('regression', 'squared'\)\]$"):
        reg.get(("regression", "nu"))


def test_the_mapping_protocol_is_a_dict_of_what_is_registered(monkeypatch):
    reg = Registry("widget")
    a = reg.register("a", object())
    reg["b"] = b = object()  # assignment takes a name over, as a dict does
    reg["b"] = c = object()
    assert reg["b"] is c and b is not c
    assert list(reg.keys()) == ["a", "b"] and list(reg.values()) == [a, c]
    monkeypatch.setitem(reg, "t", 1)
    monkeypatch.delitem(reg, "a")
    assert list(reg) == ["b", "t"]
    monkeypatch.undo()  # (a deleted name comes back last, as in a dict)
    assert list(reg) == ["b", "a"] and reg["a"] is a
    assert reg.pop("b") is c and reg.pop("b", None) is None
    del reg["a"]
    assert len(reg) == 0
    with pytest.raises(KeyError):
        reg["a"]
    assert "Registry of 0 widgets" in repr(reg)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="group must be one of mklopt.methods"):
        Registry("widget", group="mklopt.widgets")
    with pytest.raises(ValueError, match="read must be one of lookup, miss"):
        Registry("widget", read="always")


# -------------------------------------------------------------- entry points
class _EntryPoint:
    """What importlib.metadata returns, as far as mklopt.plugins reads it."""

    def __init__(self, name, load, dist="fake_dist"):
        self.name, self.value, self._load = name, f"fake_module:{name}", load
        self.dist = type("Dist", (), {"name": dist})()

    def load(self):
        return self._load()


@pytest.fixture
def entry_points(monkeypatch):
    """``{group: [entry point, ...]}`` that mklopt.plugins reads instead of the installed ones."""
    declared = {}
    monkeypatch.setattr(plugins, "_entry_points", lambda group: list(declared.get(group, ())))
    monkeypatch.setattr(plugins, "_loaded", {})
    return declared


def test_the_group_is_read_once_on_the_first_lookup(entry_points):
    reg = Registry("method", group="mklopt.methods")
    calls = []

    def load():
        calls.append(1)
        reg.register("plugged", "P")

    entry_points["mklopt.methods"] = [_EntryPoint("plugged", load)]
    reg.register("built_in", "B")
    # registering, `in`, iteration and item access never read the group
    assert "plugged" not in reg and list(reg) == ["built_in"] and reg["built_in"] == "B"
    assert calls == []
    assert reg.get("built_in") == "B"  # the first lookup reads it, whatever the name
    assert calls == [1] and reg.get("plugged") == "P"
    assert reg.names() == ["built_in", "plugged"]
    assert calls == [1]
    assert [ep.name for ep in plugins.loaded("mklopt.methods")] == ["plugged"]


def test_a_miss_registry_reads_the_group_only_for_a_missing_name(entry_points):
    reg = Registry("kernel family", plural="families", group="mklopt.kernels", read="miss")
    calls = []

    def load():
        calls.append(1)
        reg.register("laplacian", "L")

    entry_points["mklopt.kernels"] = [_EntryPoint("laplacian", load)]
    reg.register("rbf", "R")
    assert reg.get("rbf") == "R" and calls == []
    assert reg.get("laplacian") == "L" and calls == [1]
    with pytest.raises(ValueError, match="registered families: 'rbf', 'laplacian'"):
        reg.get("sigmoid")
    assert calls == [1]


def test_names_read_the_group(entry_points):
    reg = Registry("storage", group="mklopt.storages", read="miss")
    entry_points["mklopt.storages"] = [_EntryPoint("disk", lambda: reg.register("disk", "D"))]
    assert reg.names() == ["disk"]


def test_a_broken_plugin_is_named_and_tried_again(entry_points):
    reg = Registry("oracle", group="mklopt.oracles")
    reg.register("hinge", "H")
    fixed = []

    def load():
        if not fixed:
            raise ImportError("no module named fake")
        reg.register("ridge", "R")

    entry_points["mklopt.oracles"] = [_EntryPoint("ridge", load, dist="extras")]
    with pytest.raises(plugins.PluginError,
                       match=r"mklopt.oracles plugin 'ridge' .*\(from extras\) failed to load"):
        reg.get("hinge")
    fixed.append(1)
    assert reg.get("ridge") == "R"


# ------------------------------------------------- the tables of the package
def test_every_table_of_mklopt_is_a_registry():
    from mklopt import tasks
    from mklopt.kernels import factory, families
    from mklopt.methods import METHODS, PRESETS
    from mklopt.persist import _archive, _codecs, _protocol

    tables = {
        "METHODS": METHODS, "PRESETS": PRESETS, "ORACLES": tasks.ORACLES,
        "ESTIMATORS": tasks.ESTIMATORS, "storages": factory._REGISTRY,
        "KERNEL_FAMILIES": families.KERNEL_FAMILIES, "kinds": _protocol._BY_KIND,
        "classes": _protocol._BY_NAME, "upgrades": _archive._UPGRADES,
        "codecs": _codecs._BY_KIND, "codec classes": _codecs._BY_CLASS,
    }
    assert {k for k, t in tables.items() if not isinstance(t, Registry)} == set()
    groups = {t.group for t in tables.values()} - {None}
    assert groups == set(plugins.GROUPS)


def test_only_the_registry_reads_entry_points():
    root = pathlib.Path(__file__).resolve().parent.parent / "mklopt"
    readers = sorted(str(p.relative_to(root)) for p in root.rglob("*.py")
                     if "plugins.load(" in p.read_text(encoding="utf-8"))
    assert readers == ["_registry.py"]


def test_the_public_functions_keep_their_messages():
    from mklopt.kernels import get_kernel_family, get_storage
    from mklopt.methods import get_method
    from mklopt.tasks import estimator_entry, get_oracle

    with pytest.raises(ValueError, match="^unknown method 'newton'; registered methods: 'active"):
        get_method("newton")
    with pytest.raises(ValueError, match=r"^loss must name an oracle registered for the "
                                         r"regression task \('epsilon_insensitive', .*got 'x'$"):
        get_oracle("regression", "x")
    with pytest.raises(ValueError, match=r"^storage must be one of 'auto', 'dense'.*got 'disk'$"):
        get_storage("disk")
    with pytest.raises(ValueError, match="^unknown kernel family 'x'; registered families: 'rbf'"):
        get_kernel_family("x")
    import mklopt.estimators  # noqa: F401 (registers the estimator classes)

    with pytest.raises(ValueError, match="^unknown estimator 'X'; registered estimators: 'MKL"):
        estimator_entry("X")
