"""The test run's compile plan (tests/compile_plan.json) names real kernels in a form it can read."""

import importlib
import os

import pytest
from numba import types as t

from tests import _compile_plan

PLAN = os.path.join(os.path.dirname(__file__), "compile_plan.json")


@pytest.mark.parametrize("ty", [
    t.Array(t.float64, 2, "C"), t.Array(t.float32, 3, "C", readonly=True),
    t.Array(t.int64, 1, "A"), t.Array(t.uint8, 1, "F"), t.float64, t.int64, t.boolean,
    t.IntegerLiteral(3), t.IntegerLiteral(-1), t.BooleanLiteral(True), t.UniTuple(t.int64, 2),
    t.none, t.Omitted(None), t.Tuple([t.Array(t.uint8, 1, "C"), t.int64]),
])
def test_a_type_reads_back_from_its_string(ty):
    assert _compile_plan.decode(str(ty)) == ty


def test_an_unknown_type_is_left_out():
    assert _compile_plan.decode("Function(<class 'float'>)") is None
    assert _compile_plan.decode("array(quaternion, 2d, C)") is None


def test_the_plan_names_jitted_kernels_and_reads_back_whole():
    import json

    with open(PLAN) as fh:
        entries = json.load(fh)["compiles"]
    plan = _compile_plan.load(PLAN)
    assert len(plan) == len(entries) > 20
    for module, name, sig in plan:
        assert module.startswith("mklopt._jit.")
        disp = getattr(importlib.import_module(module), name)
        assert hasattr(disp, "compile") and hasattr(disp, "overloads"), (module, name)
        assert all(isinstance(a, t.Type) for a in sig)
