"""The README's test command in a fresh clone and virtualenv, quiet or under load.

    python benchmarks/bench_tests.py                          # one run of this checkout's HEAD
    python benchmarks/bench_tests.py --coretype Prescott      # another OpenBLAS kernel
    python benchmarks/bench_tests.py --burners 2 --runs 3     # three runs in a row, both cores busy

Each run clones the repository (``--repo``, default this checkout) at its
committed HEAD, makes a virtualenv with this Python and runs the README's
test command there word for word in ``bash`` (numba's cache starts empty).
``--burners N`` keeps N CPU-bound processes running through the whole run,
the install included. Prints the runs (seconds, pytest's summary) and the
ten slowest tests pytest reports; wrap it in ``python -m
mklopt.bench.results OUT.json -- ...`` for a results file. Exits 1 if a run
failed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def readme_test_command(readme):
    """The README's test command: its first line that runs pytest (the comment cut)."""
    for line in Path(readme).read_text().splitlines():
        if "pytest" in line and "pip install" in line:
            return line.split("#", 1)[0].strip()
    raise SystemExit(f"{readme}: no line installs and runs pytest")


def _burn(n):
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def one_run(repo, coretype, burners):
    """``dict`` of one run: seconds, pytest's summary and its slowest tests."""
    work = Path(tempfile.mkdtemp(prefix="mklopt-tests-"))
    clone = work / "clone"
    subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "--short=12", "HEAD"],
                            check=True, capture_output=True, text=True).stdout.strip()
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--upgrade",
                    "pip"], check=True)
    command = readme_test_command(clone / "README.md")
    env = dict(os.environ, PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
               VIRTUAL_ENV=str(venv))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("NUMBA_CACHE_DIR", None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    hot = _burn(burners)
    try:
        t = time.perf_counter()
        proc = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True,
                              text=True)
        wall = time.perf_counter() - t
    finally:
        for p in hot:
            p.kill()
            p.wait()
    out = proc.stdout + proc.stderr
    (work / "log.txt").write_text(out)
    summary = re.findall(r"^=+ (.*? in ([\d.]+)s.*?) =+$", out, re.M)
    slow = re.findall(r"^([\d.]+)s (call|setup|teardown) +(.+)$", out, re.M)
    return dict(commit=commit, command=command, wall=wall, returncode=proc.returncode,
                summary=summary[-1][0] if summary else "no pytest summary",
                pytest=float(summary[-1][1]) if summary else float("nan"),
                slowest=[(float(s), f"{what} {name}") for s, what, name in slow[:10]],
                log=str(work / "log.txt"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", default=str(HERE.parent), help="repository to clone (default: this)")
    ap.add_argument("--coretype", help="OPENBLAS_CORETYPE for the run (e.g. Prescott)")
    ap.add_argument("--burners", type=int, default=0, help="CPU-bound processes alongside")
    ap.add_argument("--runs", type=int, default=1, help="runs in a row")
    args = ap.parse_args(argv)
    print("load before:", os.getloadavg(), flush=True)
    runs = []
    for k in range(args.runs):
        runs.append(one_run(args.repo, args.coretype, args.burners))
        r = runs[-1]
        print(f"run {k + 1}: exit {r['returncode']}, {r['summary']} (log {r['log']})", flush=True)
    what = (f"OPENBLAS_CORETYPE={args.coretype or 'default'}, "
            f"{args.burners} CPU-bound processes alongside")
    print(f"\n### The README's test command in a fresh clone ({what})\n")
    print("| run | commit | exit | pytest s | command s (with the install) | pytest summary |")
    print("|---|---|---|---|---|---|")
    for k, r in enumerate(runs, 1):
        print(f"| {k} | `{r['commit']}` | {r['returncode']} | {r['pytest']:.1f} | {r['wall']:.1f} "
              f"| {r['summary']} |")
    print(f"\n### The ten slowest tests (run 1, {what})\n")
    print("| s | test |")
    print("|---|---|")
    for s, name in runs[0]["slowest"]:
        print(f"| {s:.2f} | `{name}` |")
    return 1 if any(r["returncode"] for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
