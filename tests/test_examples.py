"""Every script in examples/ runs to completion (so that none of them rots)."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"
SCRIPTS = sorted(EXAMPLES.glob("*.py"))

# A line each script must print: evidence that it got to its end.
EXPECTED = {
    "quickstart.py": "test accuracy",
    "custom_stopping.py": "stopped by",
    "custom_method.py": "FrankWolfe",
    "groups.py": "group weights gamma",
    "mkboost_vs_mkl.py": "MKBoost-S2",
}


# Values the scripts print that can be checked: (regex with one number, bound).
# quickstart: level on ionosphere reaches its 1e-2 gap and SVC-like accuracy;
# custom_method: every method it compares stops on the duality gap below 1e-2.
VALUES = {
    "quickstart.py": [
        (r"test accuracy (\d\.\d+)", lambda v: v >= 0.85),
        (r"\(relative ([0-9.e+-]+)\), converged: True", lambda v: v <= 1e-2),
    ],
    "custom_method.py": [
        (r"relative gap ([0-9.e+-]+), \d+ SVM calls, duality_gap", lambda v: v <= 1e-2)
    ],
}


def test_every_example_is_listed():
    assert sorted(p.name for p in SCRIPTS) == sorted(EXPECTED)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_example_runs(script, tmp_path):
    # Run from an empty directory so that an example cannot depend on (or
    # write into) the source tree.
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert EXPECTED[script.name] in proc.stdout
    for pattern, ok in VALUES.get(script.name, []):
        found = [float(v) for v in re.findall(pattern, proc.stdout)]
        assert found and all(ok(v) for v in found), (pattern, proc.stdout[-2000:])
    assert "Traceback" not in proc.stderr
