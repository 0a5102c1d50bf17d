"""Render every table of ``benchmarks/README.md`` from the results files of ``benchmarks/results/``.

    python benchmarks/tables.py            # rewrite the README's generated blocks
    python benchmarks/tables.py --check    # exit 1 if a block differs from its results file

A generated block is the text between ``<!-- results: NAME.json -->`` and
``<!-- end results -->``; it becomes :func:`mklopt.bench.results.render_markdown`
of that file (its command, where and when it was measured, its tables).
The prose around the blocks is written by hand; no figure is.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from mklopt.bench import results

HERE = Path(__file__).resolve().parent
BLOCK = re.compile(r"(<!-- results: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- end results -->)",
                   re.S)


def render(text, results_dir):
    def one(m):
        data = results.read(results_dir / m["name"])
        return f"{m[1]}{results.render_markdown(data)}\n{m[4]}"

    return BLOCK.sub(one, text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that the README is current")
    ap.add_argument("--readme", type=Path, default=HERE / "README.md")
    ap.add_argument("--results", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    text = args.readme.read_text()
    new = render(text, args.results)
    missing = {p.name for p in args.results.glob("*.json")} - set(block_names(text))
    if missing:
        print(f"results files with no block in {args.readme.name}: {', '.join(sorted(missing))}",
              file=sys.stderr)
    if args.check:
        if new != text:
            print(f"{args.readme} is not current: run python benchmarks/tables.py",
                  file=sys.stderr)
            return 1
        return 0
    args.readme.write_text(new)
    return 0


def block_names(text):  # noqa: N802
    return [m["name"] for m in BLOCK.finditer(text)]


if __name__ == "__main__":
    sys.exit(main())
