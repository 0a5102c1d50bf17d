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
    "custom_storage.py": "float32_numpy against dense",
    "groups.py": "group weights gamma",
    "mkboost_vs_mkl.py": "MKBoost-S2",
    "precomputed_kernels.py": "cross-validation accuracy",
    "user_plugin.py": "check_method(BBSPG) and check_oracle(KernelRidgeOracle) passed",
    "custom_kernel.py": "chi2(gamma=-1.0) refused: gamma must be > 0",
    "conformance_kit.py": "PairwiseFrankWolfe and SquaredHingeOracle pass the conformance kit",
    "multiview.py": "sigmoid kernels clipped; names ['sigmoid green'",
}


# Values the scripts print that can be checked: (regex with one number, bound).
# quickstart: level on ionosphere reaches its 1e-2 gap and SVC-like accuracy;
# custom_method: every method it compares stops on the duality gap below 1e-2;
# custom_stopping: SimpleMKL on breast stops on its 1e-3 duality gap;
# groups: the estimator reaches its 5e-2 gap with SVC-like accuracy (a linear
# SVM scores about 0.96 on breast), mirror descent by hand its 2e-2 gap, and
# the group weights gamma are a point of the simplex;
# mkboost_vs_mkl: every model classifies breast at SVC-like accuracy and the
# level method certifies its default 1e-2 gap.
NUMBER = r"([0-9.]+(?:e[+-]?\d+)?)"
VALUES = {
    # multiview: every model on the four bands classifies satellite near its
    # usual 0.88, the uniform average included, and the psd='clip' fit too
    "multiview.py": [
        (r"uniform average \(p = inf\) +test accuracy (\d\.\d+)", lambda v: v >= 0.85),
        (r"weights per pair +test accuracy (\d\.\d+)", lambda v: v >= 0.85),
        (r"psd='clip' +test accuracy (\d\.\d+)", lambda v: v >= 0.8),
        # the formulation CV: as accurate as the fixed formulations
        (r"MKLClassifierCV chose .*: test accuracy (\d\.\d+)", lambda v: v >= 0.85),
    ],
    "quickstart.py": [
        (r"test accuracy (\d\.\d+)", lambda v: v >= 0.85),
        (r"\(relative ([0-9.e+-]+)\), converged: True", lambda v: v <= 1e-2),
    ],
    "custom_method.py": [
        (r"relative gap ([0-9.e+-]+), \d+ SVM calls, duality_gap", lambda v: v <= 1e-2)
    ],
    # custom_storage: a user's float32 storage certifies Level's 1e-3 gap and
    # gives the dense storage's model to float32 rounding
    "custom_storage.py": [
        (r"Level on it: relative gap " + NUMBER, lambda v: 0 <= v <= 1e-3),
        (r"test accuracy (\d\.\d+) and", lambda v: v >= 0.9),
        (r"decision values within " + NUMBER + " relative", lambda v: v <= 1e-2),
    ],
    "custom_stopping.py": [
        (r"stopped by 'duality_gap' \(converged: True\) after \d+ SVM calls; relative gap "
         + NUMBER, lambda v: 0 <= v <= 1e-3),
    ],
    "groups.py": [
        (r"groups='features'\): \d+ kernels in \d+ groups, \d+ SVM calls, relative gap "
         + NUMBER, lambda v: 0 <= v <= 5e-2),
        (r"test accuracy (\d\.\d+)", lambda v: v >= 0.93),
        (r"stopped by 'duality_gap' after \d+ SVM calls, relative gap " + NUMBER,
         lambda v: 0 <= v <= 2e-2),
        (r"\n    (\d\.\d+)  ", lambda v: 0 < v < 1),
    ],
    "mkboost_vs_mkl.py": [
        (r"\n(?:L1-MKL \(level\)|MKBoost-[DS][12]) +\d+\.\d+ +(\d\.\d+)  ", lambda v: v >= 0.93),
        (r"certified: relative duality gap " + NUMBER + r" after", lambda v: 0 <= v <= 1e-2),
    ],
    # custom_kernel: the user's chi2 family equals scikit-learn's chi2_kernel in
    # both storages, classifies breast at SVC-like accuracy, and its model
    # survives saving unchanged
    "custom_kernel.py": [
        (r"bank: largest difference from sklearn's chi2_kernel " + NUMBER, lambda v: v <= 1e-12),
        (r"test accuracy (\d\.\d+)", lambda v: v >= 0.9),
        (r"largest prediction change " + NUMBER, lambda v: v <= 1e-12),
    ],
    # user_plugin: the user's method certifies the toy optimum to 1e-8 and
    # lands within its gap of the exact value; through the estimator it
    # certifies 1e-6 and predicts as the built-in squared loss; the model
    # survives saving unchanged
    "user_plugin.py": [
        (r"BBSPG on a toy: relative gap " + NUMBER, lambda v: 0 <= v <= 1e-8),
        (r"\|J - J\*\| = " + NUMBER, lambda v: v <= 1e-7),
        (r"method='bb_spg'\): relative gap " + NUMBER, lambda v: 0 <= v <= 1e-6),
        (r"predictions within " + NUMBER + " std", lambda v: v <= 1e-3),
        (r"largest prediction change " + NUMBER, lambda v: v <= 1e-12),
    ],
    # conformance_kit: the user's pair certifies its 1e-3 gap (the script
    # itself exits with an error if the kit lets a flawed copy through)
    "conformance_kit.py": [
        (r"together: relative gap " + NUMBER + r" after \d+ calls, converged: True",
         lambda v: 0 <= v <= 1e-3),
    ],
}
# How many values each pattern must find (one unless said here).
COUNTS = {
    ("groups.py", 3): 6,  # the six largest group weights
    ("mkboost_vs_mkl.py", 0): 5,  # L1-MKL and four MKBoost variants
    ("custom_kernel.py", 0): 2,  # the dense and the on-the-fly bank
}


def check_monotone_gaps(script, stdout):
    """custom_stopping prints the best relative gap every few calls: it never grows."""
    if script != "custom_stopping.py":
        return
    gaps = [float(v) for v in re.findall(r"^call .* relative gap " + NUMBER + "$", stdout, re.M)]
    assert len(gaps) >= 2 and all(b <= a for a, b in zip(gaps, gaps[1:])), gaps


def test_every_example_is_listed():
    assert sorted(p.name for p in SCRIPTS) == sorted(EXPECTED)


# Each script runs in its own interpreter (3-6 s each, about 45 s for all of
# them, a tenth of the default run): the default run keeps the quickstart,
# the README's own workflow, and the slow run (`--runslow`, a step of
# .ci/run) runs every one.
DEFAULT_RUN = {"quickstart.py"}


@pytest.mark.parametrize("script", [
    s if s.name in DEFAULT_RUN else pytest.param(s, marks=pytest.mark.slow) for s in SCRIPTS
], ids=lambda p: p.name)
def test_example_runs(script, tmp_path):
    # Run from an empty directory so that an example cannot depend on (or
    # write into) the source tree.
    # The package under test is this source tree, not whatever is installed.
    path = os.pathsep.join(filter(None, [str(EXAMPLES.parent), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": path}
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
    for i, (pattern, ok) in enumerate(VALUES.get(script.name, [])):
        found = [float(v) for v in re.findall(pattern, proc.stdout)]
        assert len(found) >= COUNTS.get((script.name, i), 1), (pattern, proc.stdout[-2000:])
        assert all(ok(v) for v in found), (pattern, found, proc.stdout[-2000:])
    check_monotone_gaps(script.name, proc.stdout)
    assert "Traceback" not in proc.stderr
    assert "Warning" not in proc.stderr, proc.stderr[-3000:]
