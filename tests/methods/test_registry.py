"""The method registry: names, presets and their errors."""

import pytest

from mklopt.methods import (
    METHODS,
    PRESETS,
    AnalyticLp,
    Boosting,
    CuttingPlane,
    Subgradient,
    add_preset,
    get_preset,
    method_names,
)


def test_method_names_filter_by_oracle_kind():
    dual = method_names(oracle_kind="dual")
    boosting = method_names(oracle_kind="weak_learners")
    assert set(dual) | set(boosting) == set(method_names()) == set(METHODS)
    assert not set(dual) & set(boosting)
    assert {"level", "silp", "simplemkl", "lp", "mirror"} <= set(dual)
    assert set(boosting) == {"mkboost", "boosting"}


def test_presets_make_fresh_configured_methods():
    sd = get_preset("sd")
    a, b = sd.make(), sd.make()
    assert isinstance(a, Subgradient) and a is not b and a.direction == "reduced"
    assert sd.label == "SD (SimpleMKL)" and sd.cls is Subgradient
    assert isinstance(get_preset("silp").make(), CuttingPlane)
    for key, p in (("lp4/3", 4.0 / 3.0), ("lp2", 2.0), ("lp4", 4.0)):
        m = get_preset(key).make()
        assert isinstance(m, AnalyticLp) and m.p == pytest.approx(p, rel=1e-15)
    d2 = get_preset("mkboost-d2").make()
    assert isinstance(d2, Boosting) and d2.variant == "D2"
    # every preset names a registered method and builds one with valid parameters
    for preset in PRESETS.values():
        method = preset.make()
        assert type(method) is METHODS[preset.method]
        method.check_params(n_kernels=3)


def test_preset_errors_name_the_key():
    with pytest.raises(ValueError, match=r"unknown method 'lp3'; choose from sd, silp"):
        get_preset("lp3")
    with pytest.raises(ValueError, match="preset 'sd' is already registered"):
        add_preset("sd", "subgradient", "again")
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        add_preset("new-key", "nope", "label")
    assert "new-key" not in PRESETS
