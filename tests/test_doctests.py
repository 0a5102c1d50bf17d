"""Every docstring example in the package runs and prints what it shows."""

import doctest
import importlib
import pkgutil

import pytest

import mklopt

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(mklopt.__path__, "mklopt.")
    if not m.name.startswith("mklopt._jit") and m.name != "mklopt.__main__"
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} failing example(s) in {name}"
