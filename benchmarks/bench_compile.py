"""What numba compiles, and loads from its cache, on the default fit's path.

    python benchmarks/bench_compile.py                  # ionosphere, MKLClassifier() defaults
    python benchmarks/bench_compile.py --dataset sonar  # another bundled set

Two fresh processes share one new, empty ``NUMBA_CACHE_DIR``: the first
compiles, the second loads from the cache. Each (``MKLOPT_COMPILE_JOBS=1``:
no helper process) times ``import mklopt``, ``MKLClassifier().fit`` and
``predict``, and records every numba ``compile`` call: function, signature,
compiled or loaded, seconds. A compile's seconds include the functions
compiled with it (rows marked ``nested``); totals count the outermost.

With ``--prepared``, the second process calls
:func:`mklopt._compile.prepare` first (what a fit does before its
``time_limit`` starts) and the table shows what the fit itself still loads.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def child(dataset, prepared):
    t0 = time.perf_counter()
    import numba.core.dispatcher as nd

    records = []
    depth = [0]
    real = nd.Dispatcher.compile

    def compile(self, sig):
        args = tuple(sig.args) if hasattr(sig, "args") else tuple(sig)
        if args in self.overloads:
            return real(self, sig)
        hits = sum(self._cache_hits.values())
        depth[0] += 1
        t = time.perf_counter()
        try:
            return real(self, sig)
        finally:
            dt = time.perf_counter() - t
            depth[0] -= 1
            records.append(dict(
                function=f"{self.py_func.__module__}.{self.py_func.__qualname__}",
                signature=", ".join(str(a) for a in args),
                kind="cache" if sum(self._cache_hits.values()) > hits else "compile",
                seconds=dt,
                nested=depth[0] > 0,
            ))

    nd.Dispatcher.compile = compile
    out = dict(numba_import=time.perf_counter() - t0)

    def timed(key, fn):
        t = time.perf_counter()
        res = fn()
        out[key] = time.perf_counter() - t
        return res

    def load_mklopt():
        from mklopt import MKLClassifier, datasets  # noqa: F401  (the estimators load too)
        return sys.modules["mklopt"]

    mklopt = timed("import_mklopt", load_mklopt)
    X, y = timed("load", lambda: mklopt.datasets.load(dataset))
    out["prepare"] = 0.0
    if prepared:
        from mklopt._compile import prepare

        timed("prepare", prepare)
    out["n_before_fit"] = len(records)
    clf = timed("fit", lambda: mklopt.MKLClassifier().fit(X, y))
    timed("refit", lambda: clf.fit(X, y))
    timed("predict", lambda: clf.predict(X))
    json.dump(dict(out, version=mklopt.__version__, rel_gap=float(clf.result_.rel_gap),
                   records=records), sys.stdout)


def run(dataset, cache, prepared=False):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, MKLOPT_COMPILE_JOBS="1")
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--dataset", dataset]
        + (["--prepared"] if prepared else []),
        env=env, check=True, capture_output=True, text=True,
    )
    res = json.loads(out.stdout)
    res["process"] = time.perf_counter() - t
    return res


def table(first, second):
    rows = {}
    for tag, res in (("first", first), ("second", second)):
        for r in res["records"]:
            row = rows.setdefault(r["function"], dict(sigs=set(), compile=0.0, cache=0.0,
                                                      nested=True))
            row["sigs"].add(r["signature"])
            if not r["nested"]:
                row["nested"] = False
            if tag == "first" and r["kind"] == "compile":
                row["compile"] += r["seconds"]
            if tag == "second" and r["kind"] == "cache":
                row["cache"] += r["seconds"]
    lines = ["| function | signatures | compile s (first process) | cache load s (second) |",
             "|---|---:|---:|---:|"]
    for name, row in sorted(rows.items(), key=lambda kv: -kv[1]["compile"]):
        short = name.replace("mklopt._jit.", "")
        lines.append(f"| `{short}`{' (nested)' if row['nested'] else ''} | {len(row['sigs'])} "
                     f"| {row['compile']:.2f} | {row['cache']:.3f} |")

    def total(res, kind):
        return sum(r["seconds"] for r in res["records"] if r["kind"] == kind and not r["nested"])

    n_sigs = sum(len(r["sigs"]) for r in rows.values())
    lines.append(f"| **{len(rows)} functions** | **{n_sigs}** | **{total(first, 'compile'):.1f}**"
                 f" | **{total(second, 'cache'):.2f}** |")
    return "\n".join(lines), rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="ionosphere")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--prepared", action="store_true")
    args = ap.parse_args(argv)
    if args.child:
        return child(args.dataset, args.prepared)
    with tempfile.TemporaryDirectory(prefix="mklopt-numba-") as cache:
        first = run(args.dataset, cache)
        second = run(args.dataset, cache, prepared=args.prepared)
    text, _ = table(first, second)
    print(f"**What numba compiles on the path of MKLClassifier().fit and predict ({args.dataset}):"
          " one process, an empty cache, then a second process loading it**\n")
    print(text)
    print("\n**Where each process's time goes (one compile process, no helper)**\n")
    print("| process | whole process s | numba import s | import mklopt s | prepare s "
          "| first fit s | second fit s | predict s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for tag, res in (("first (empty cache)", first), ("second (cached)", second)):
        print(f"| {tag} | {res['process']:.2f} | {res['numba_import']:.2f} "
              f"| {res['import_mklopt']:.2f} | {res['prepare']:.2f} | {res['fit']:.2f} "
              f"| {res['refit']:.3f} | {res['predict']:.3f} |")
    if args.prepared:
        left = second["records"][second["n_before_fit"]:]
        print(f"\nafter prepare(), the fit itself loaded or compiled {len(left)} more: "
              + ", ".join(sorted({r['function'] for r in left})))
    return 0


if __name__ == "__main__":
    sys.exit(main())
