"""First contact: a first fit after install, later start-ups, ``mklopt predict``, ``mklopt bench``.

    python benchmarks/bench_startup.py --python /tmp/after/bin/python \\
        --python /tmp/before/bin/python --repeats 3

Each ``--python`` is a virtualenv's interpreter with mklopt from ``pip
install /path/to/clone`` (not editable, no scikit-learn). Interleaved over
them, each figure is the wall time of a new process:

- ``first fit``: load ionosphere and ``MKLClassifier().fit`` with a new,
  empty ``NUMBA_CACHE_DIR``; ``second fit``: the same on the filled cache;
- ``import``: ``python -c "import mklopt"``;
- ``first predict``, ``predict``: ``mklopt predict model.npz new.csv`` (50
  rows, a model saved by ``mklopt fit``), the first and a later process;
- ``bench first line``: a first ``mklopt bench`` (empty cache) until its
  first line other than the compile message (``--no-bench``: skipped).

``..., CPU`` rows are the user and system seconds of the process and the
helpers it waited for. Medians over ``--repeats``, each with its own cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIT = ("from mklopt import MKLClassifier, datasets\n"
       "X, y = datasets.load('ionosphere')\n"
       "clf = MKLClassifier().fit(X, y)\n"
       "assert clf.result_.rel_gap <= 1e-2\n")


def _mklopt(python):
    return os.path.join(os.path.dirname(python), "mklopt")


CPU = {}  # the last command's CPU seconds (user + system, its children included)


def wall(cmd, env=None, cwd=None):
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, use = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)
    CPU["last"] = use.ru_utime + use.ru_stime
    return time.perf_counter() - t


def first_line(cmd, env, cwd):
    """Seconds until ``cmd`` writes its first line that is not the compile message."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    seen = []
    try:
        for line in proc.stdout:
            seen.append(line.rstrip())
            if line.strip() and "compiling mklopt's kernels" not in line \
                    and "Warning" not in line:
                return time.perf_counter() - t, line.strip()
        proc.wait()
        return float("nan"), f"exit {proc.returncode}: " + " / ".join(seen[-5:])
    finally:
        proc.kill()
        proc.wait()


def measure(python, work, bench=True):
    out = {}
    cache = tempfile.mkdtemp(prefix="numba-", dir=work)
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    for key in ("first fit", "second fit"):
        out[key] = wall([python, "-c", FIT], env=env, cwd=work)
        out[f"{key}, CPU"] = CPU["last"]
    out["import"] = wall([python, "-c", "import mklopt"], env=env, cwd=work)
    data = os.path.join(work, "ionosphere.csv")
    model = os.path.join(work, "model.npz")  # saved by the first --python, read by all
    if not os.path.exists(model):
        subprocess.run([_mklopt(python), "fit", data, "--model", model], env=env, cwd=work,
                       check=True, capture_output=True)
    predict = [_mklopt(python), "predict", model, os.path.join(work, "new.csv")]
    out["first predict"] = wall(predict, env=env, cwd=work)
    out["predict"] = wall(predict, env=env, cwd=work)
    out["predict, CPU"] = CPU["last"]
    if not bench:
        out["bench first line"], out["bench line"] = float("nan"), "skipped"
        return out
    bench_env = dict(os.environ,
                     NUMBA_CACHE_DIR=tempfile.mkdtemp(prefix="numba-", dir=work))
    out["bench first line"], out["bench line"] = first_line(
        [_mklopt(python), "bench", "--out", os.path.join(work, "bench-out")], bench_env, work)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-bench", action="store_true", help="skip the first `mklopt bench`")
    args = ap.parse_args(argv)
    print("load before:", os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="mklopt-startup-") as work:
        src = subprocess.run(
            [args.python[0], "-c", "from mklopt.datasets import data; import os; "
             "print(os.path.dirname(data.__file__))"],
            check=True, capture_output=True, text=True, cwd=work).stdout.strip()
        lines = Path(src, "ionosphere.csv").read_text().splitlines(keepends=True)
        Path(work, "ionosphere.csv").write_text("".join(lines))
        Path(work, "new.csv").write_text("".join(lines[:51]))
        results = {p: [] for p in args.python}
        for r in range(args.repeats):
            for p in args.python:
                res = measure(p, work, bench=not args.no_bench)
                results[p].append(res)
                print(f"repeat {r + 1} {p}: " + ", ".join(
                    f"{k} {v:.2f} s" for k, v in res.items() if k != "bench line"),
                    flush=True)
                if res["bench first line"] != res["bench first line"]:
                    print("  bench gave no line:", res["bench line"], flush=True)
    keys = [k for k in results[args.python[0]][0] if k != "bench line"]
    print("\n| figure | " + " | ".join(args.python) + " |")
    print("|---|" + "---:|" * len(args.python))
    for k in keys:
        cells = []
        for p in args.python:
            vals = [r[k] for r in results[p] if r[k] == r[k]]
            cells.append(f"{statistics.median(vals):.2f} s ({min(vals):.2f}–{max(vals):.2f})"
                         if vals else "–")
        print(f"| {k} | " + " | ".join(cells) + " |")
    print("load after:", os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main())
