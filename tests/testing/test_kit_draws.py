"""The kit's drawn problems are the same in every process, whatever it imported."""

import hashlib
import json
import os
import subprocess
import sys
import textwrap

import mklopt

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(mklopt.__file__)))

_DIGEST = """
import hashlib, sys
from mklopt.testing import _problems
if len(sys.argv) > 1:
    import literals  # a module of the user's own, full of numbers
h = hashlib.sha256()
for p in _problems.drawn(1, 0):
    for a in p.args:
        h.update(a.tobytes())
print(h.hexdigest())
"""


def _digest(cwd, *args):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
        _ROOT, str(cwd), os.environ.get("PYTHONPATH")]))}
    out = subprocess.run([sys.executable, "-c", _DIGEST, *args], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    return out.stdout.strip().splitlines()[-1]


def test_draws_do_not_depend_on_the_literals_of_the_callers_modules(tmp_path):
    # Hypothesis also draws the numbers written in the caller's own
    # (non-installed) modules; the kit turns that off, or a seed would give
    # other toys in a process that imported other code.
    numbers = [0.5, 1e-300, -2.75, 3.0e8, 7.125, 1e-12, 0.999, 42.0, -1e6, 2.5e-7]
    (tmp_path / "literals.py").write_text(textwrap.dedent(f"""
        VALUES = {json.dumps(numbers)}
        A, B, C, D, E = 0.3125, 1e-9, 17.0, -0.0625, 123456.75
    """))
    plain = _digest(tmp_path)
    assert len(plain) == len(hashlib.sha256().hexdigest())
    assert _digest(tmp_path, "import") == plain
