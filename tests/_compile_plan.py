"""What the default test run compiles, in the order it first needs it.

In a fresh clone numba's cache is empty, and pytest's process compiles
mklopt's kernels as the tests first call them, on one core. The conftest's
helper process compiles the same list on the other core, from its end (the
kernels the last test files need first), so that the two meet in the middle
and each later test loads from the cache what the other compiled.

``tests/compile_plan.json`` is the list, recorded from a cold run::

    NUMBA_CACHE_DIR=$(mktemp -d) MKLOPT_TEST_PREFETCH=0 \\
        MKLOPT_RECORD_COMPILES=tests/compile_plan.json python -m pytest -p tests._compile_plan

A stale entry costs the helper a compile nobody loads; a missing one is
compiled by pytest's process when a test needs it. Neither changes what a
test sees (a dispatcher loaded from the cache is the one compiled).
"""

import json
import os
import re

_ARRAY = re.compile(r"^(readonly )?array\((\w+), (\d+)d, ([CFA])\)$")
_LITERAL = re.compile(r"^Literal\[(int|bool)\]\((.+)\)$")
_UNITUPLE = re.compile(r"^UniTuple\((\w+) x (\d+)\)$")


def _split(text):
    """``text`` cut at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def decode(text):
    """A numba type from its ``str``, for the types a kernel's signature holds (else None)."""
    from numba import types as t

    if m := _ARRAY.match(text):
        dtype = getattr(t, m[2], None)
        return None if dtype is None else t.Array(dtype, int(m[3]), m[4], readonly=bool(m[1]))
    if m := _LITERAL.match(text):
        return t.IntegerLiteral(int(m[2])) if m[1] == "int" else t.BooleanLiteral(m[2] == "True")
    if m := _UNITUPLE.match(text):
        dtype = getattr(t, m[1], None)
        return None if dtype is None else t.UniTuple(dtype, int(m[2]))
    if text.startswith("Tuple(") and text.endswith(")"):
        items = [decode(part) for part in _split(text[6:-1])]
        return None if any(i is None for i in items) else t.Tuple(items)
    if text == "none":
        return t.none
    if text == "omitted(default=None)":
        return t.Omitted(None)
    ty = getattr(t, "boolean" if text == "bool" else text, None)
    return ty if isinstance(ty, t.Type) else None


def load(path):
    """``[(module, name, signature)]`` of the plan at ``path`` (undecodable entries left out)."""
    try:
        with open(path) as fh:
            entries = json.load(fh)["compiles"]
    except (OSError, ValueError, KeyError):
        return []
    plan = []
    for module, name, args in entries:
        sig = tuple(decode(a) for a in args)
        if all(a is not None for a in sig):
            plan.append((module, name, sig))
    return plan


def prefetch(path):
    """Compile the plan into numba's cache, last-needed first (the helper's work)."""
    import importlib

    for module, name, sig in reversed(load(path)):
        try:
            disp = getattr(importlib.import_module(module), name)
            if sig not in disp.overloads:
                disp.compile(sig)
        except Exception:  # noqa: BLE001, S112 - stale entry: pytest's process compiles it
            continue


# ---- the recorder (a pytest plugin: -p tests._compile_plan) ----------------------
_RECORD = []


def pytest_configure(config):
    if not os.environ.get("MKLOPT_RECORD_COMPILES"):
        return
    import numba.core.dispatcher as nd

    real = nd.Dispatcher.compile
    depth = [0]
    seen = set()

    def compile(self, sig):
        args = tuple(sig.args) if hasattr(sig, "args") else tuple(sig)
        fn = self.py_func
        key = (fn.__module__, fn.__qualname__, tuple(str(a) for a in args))
        top = depth[0] == 0 and args not in self.overloads
        depth[0] += 1
        try:
            return real(self, sig)
        finally:
            depth[0] -= 1
            if top and key not in seen and fn.__module__.startswith("mklopt._jit"):
                seen.add(key)
                _RECORD.append([key[0], key[1], list(key[2])])

    nd.Dispatcher.compile = compile


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("MKLOPT_RECORD_COMPILES")
    if path:
        lines = ",\n".join(json.dumps(entry) for entry in _RECORD)
        with open(path, "w") as fh:
            fh.write('{"recorded": "a cold default test run, in order of first use",\n'
                     f' "compiles": [\n{lines}\n]}}\n')
