"""How long the conformance kit takes per registered method, default and thorough profiles.

    python benchmarks/bench_kit.py                 # both profiles, every registered method
    python benchmarks/bench_kit.py --profiles default

Every method in the registry that runs on the kit's toy oracles (those
that read no dual problem: not the exact active-set step) is checked with
``mklopt.testing.check_method`` once to warm numba up, then timed; the
table gives the wall seconds of each profile and whether it passed.
"""

from __future__ import annotations

import argparse
import time

from mklopt.methods import get_method, method_names
from mklopt.testing import check_method


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", nargs="+", default=["default", "thorough"],
                    choices=["default", "thorough"])
    args = ap.parse_args()
    classes = {}
    for name in method_names(oracle_kind="dual"):
        cls = get_method(name)
        if not getattr(cls, "needs_problem", False) and cls not in classes.values():
            classes[name] = cls  # the toy oracles carry no dual problem for the exact step
    check_method(get_method("level"))  # numba's caches, once
    print("| method | " + " | ".join(f"{p} (s)" for p in args.profiles) + " |")
    print("|---|" + "---|" * len(args.profiles))
    for name, cls in classes.items():
        cells = []
        for profile in args.profiles:
            t0 = time.perf_counter()
            try:
                check_method(cls, thorough=profile == "thorough")
                ok = ""
            except AssertionError as exc:
                ok = f" (fails: {str(exc).splitlines()[0][:60]})"
            cells.append(f"{time.perf_counter() - t0:.1f}{ok}")
        print(f"| {name} ({cls.__name__}) | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
