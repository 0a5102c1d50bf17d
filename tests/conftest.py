import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

from mklopt import _compile

# The "compiling mklopt's kernels" line is said at most once per process; in
# this one it would land in whichever test compiles first (a fresh clone)
# and change that test's output. tests/test_startup.py checks it in fresh
# interpreters.
_compile._state.said = True

# In a fresh clone numba's cache is empty, and this process compiles
# mklopt's kernels as the tests first call them: about a third of the
# default run's time, on one core. Meanwhile a second process compiles
# into the same cache, on the core the tests leave idle, the kernels of
# tests/compile_plan.json (what a cold run compiles, in the order it first
# needs them) from the end of the list: the two processes meet in the
# middle, and each test loads from the cache what the other compiled
# (tests/_compile_plan.py). It changes nothing a test sees (loading and
# compiling give the same dispatchers); it is stopped when the session
# ends, and MKLOPT_TEST_PREFETCH=0 turns it off.
_PREFETCH = []
_TESTS = os.path.dirname(os.path.abspath(__file__))
_PREFETCH_CODE = """
import runpy
runpy.run_path({module!r})["prefetch"]({plan!r})
"""


def pytest_sessionstart(session):
    if os.environ.get("MKLOPT_TEST_PREFETCH", "1") == "0" or (os.cpu_count() or 1) < 2:
        return
    import subprocess
    import sys

    import mklopt

    root = os.path.dirname(os.path.dirname(os.path.abspath(mklopt.__file__)))
    path = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "MKLOPT_COMPILE_JOBS": "1"}
    try:
        code = _PREFETCH_CODE.format(module=os.path.join(_TESTS, "_compile_plan.py"),
                                     plan=os.path.join(_TESTS, "compile_plan.json"))
        _PREFETCH.append(subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    except OSError:
        pass


def pytest_sessionfinish(session, exitstatus):
    for proc in _PREFETCH:
        proc.kill()
        proc.wait()


settings.register_profile(
    "default", deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci",
    deadline=None,
    max_examples=40,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "exhaustive", deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "default"))


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
