"""Render the generated tables of ``benchmarks/README.md`` and ``docs/benchmarks.md``.

    python benchmarks/tables.py            # rewrite the generated blocks of both pages
    python benchmarks/tables.py --check    # exit 1 if a block differs from its results file

A generated block is the text between ``<!-- results: NAME.json -->`` and
``<!-- end results -->``; it becomes :func:`mklopt.bench.results.render_markdown`
of that file (its command, where and when it was measured, its tables).
The prose around the blocks is written by hand; no figure is. ``--page``
(repeatable) renders other pages instead of the two.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from mklopt.bench import results

HERE = Path(__file__).resolve().parent
PAGES = (HERE / "README.md", HERE.parent / "docs" / "benchmarks.md")
BLOCK = re.compile(r"(<!-- results: (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- end results -->)",
                   re.S)


def render(text, results_dir):
    def one(m):
        data = results.read(results_dir / m["name"])
        return f"{m[1]}{results.render_markdown(data)}\n{m[4]}"

    return BLOCK.sub(one, text)


def block_names(text):
    return [m["name"] for m in BLOCK.finditer(text)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only check that the pages are current")
    ap.add_argument("--page", "--readme", dest="pages", type=Path, action="append",
                    help="a page with generated blocks (repeatable; default: "
                         "benchmarks/README.md and docs/benchmarks.md)")
    ap.add_argument("--results", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    pages = args.pages or list(PAGES)
    stale, used = [], set()
    for page in pages:
        text = page.read_text()
        used.update(block_names(text))
        try:
            new = render(text, args.results)
        except FileNotFoundError as exc:
            print(f"{page}: a block names a missing results file: {exc.filename}",
                  file=sys.stderr)
            return 1
        if new == text:
            continue
        if args.check:
            stale.append(page)
        else:
            page.write_text(new)
    missing = {p.name for p in args.results.glob("*.json")} - used
    if missing:
        print(f"results files with no block in {', '.join(p.name for p in pages)}: "
              f"{', '.join(sorted(missing))}", file=sys.stderr)
    for page in stale:
        print(f"{page} is not current: run python benchmarks/tables.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
