"""One results format for ``mklopt bench`` and the scripts of ``benchmarks/``.

A results file is a JSON object::

    {"schema": 1, "name": "compare", "command": "mklopt bench --protocol compare",
     "environment": {...}, "source": "measured", "tables": [...], "records": [...]}

``environment`` says where and when the figures were measured
(:func:`environment`: machine, versions, commit, date, load average);
``source`` is ``"measured"`` or says where figures carried over from an
earlier journal came from. ``tables`` holds rendered tables (``title``,
``columns``, ``rows`` of cells, optional ``notes``), ``records`` the raw
measurements a protocol keeps. ``benchmarks/tables.py`` renders the tables
into ``benchmarks/README.md`` and ``docs/benchmarks.md``. A script that
prints markdown tables writes one through
``python -m mklopt.bench.results OUT.json -- python SCRIPT ...``.

The helpers :func:`median_time`, :func:`peak_memory_mb` and
:func:`blas_threads` are the shared timer of the benchmarks: medians over
repeats, the peak memory a call adds, one BLAS thread for like-for-like
figures.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import statistics
import subprocess
import time
import tracemalloc

__all__ = [
    "SCHEMA",
    "environment",
    "median_time",
    "peak_memory_mb",
    "blas_threads",
    "table",
    "write",
    "read",
    "render_markdown",
    "from_markdown",
]

SCHEMA = 1


def _commit(path):
    try:
        out = subprocess.run(["git", "-C", path, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=True)
        dirty = subprocess.run(["git", "-C", path, "status", "--porcelain", "-uno"],
                               capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def _version(module):
    try:
        mod = __import__(module)
    except ImportError:
        return None
    version = getattr(mod, "__version__", None)
    if version is None:  # MKLpy has no __version__: the installed distribution's
        from importlib import metadata

        try:
            version = metadata.version(module)
        except metadata.PackageNotFoundError:
            version = "?"
    return version


def environment():
    """Where and when: machine, versions, the mklopt commit, date and load average."""
    import mklopt

    try:
        load = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = None
    versions = {m: _version(m) for m in ("numpy", "scipy", "numba", "sklearn", "threadpoolctl",
                                         "MKLpy")}
    if versions["MKLpy"] is not None:  # MKLpy's speed is torch's
        versions["torch"] = _version("torch")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(os.path.dirname(os.path.dirname(os.path.abspath(mklopt.__file__)))),
        "machine": {"node": platform.node(), "platform": platform.platform(),
                    "processor": platform.machine(), "cpus": os.cpu_count()},
        "load_average": load,
        "versions": {"python": platform.python_version(), "mklopt": mklopt.__version__,
                     **versions},
    }


def median_time(fn, repeats=3):
    """Median wall time of ``repeats`` calls of ``fn()``, the times, and the last result."""
    times, out = [], None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times, out


def _status_kb(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(field)


def peak_memory_mb(fn):
    """Peak memory ``fn()`` adds to the process (MB), how it was measured, and its result.

    On Linux: the resident high-water mark (``VmHWM``), reset through
    ``/proc/self/clear_refs`` before the call, less the resident size
    before it; it sees every allocation, NumPy's, numba's and the BLAS's.
    Elsewhere: the peak of ``tracemalloc``'s traced allocations, which
    misses what jitted code allocates and slows Python down (never time a
    call measured here).
    """
    try:
        before = _status_kb("VmRSS")
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        before = None
    if before is not None:
        out = fn()
        return max(0, _status_kb("VmHWM") - before) / 1024, "peak RSS", out
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        if started:
            tracemalloc.stop()
    return peak / 2**20, "tracemalloc", out


@contextlib.contextmanager
def blas_threads(n):
    """``n`` BLAS/OpenMP threads, ``n`` numba threads and, when torch is imported, ``n`` torch
    threads inside; ``None``: leave the defaults.

    Needs ``threadpoolctl`` (installed with scikit-learn) for the BLAS part.
    torch (MKLpy computes with it) keeps its own thread pool, which
    threadpoolctl does not limit.
    """
    if n is None:
        yield
        return
    import sys

    import numba
    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch")
    old = numba.get_num_threads()
    old_torch = torch.get_num_threads() if torch is not None else None
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    if torch is not None:
        torch.set_num_threads(n)
    try:
        with threadpool_limits(n):
            yield
    finally:
        numba.set_num_threads(old)
        if torch is not None:
            torch.set_num_threads(old_torch)


def table(title, columns, rows, notes=None):
    """A rendered table of a results file."""
    return {"title": title, "columns": list(columns), "rows": [list(r) for r in rows],
            "notes": notes or ""}


def write(path, name, command, tables=(), records=(), source="measured", env=None):
    """Write a results file (see the module's docstring); returns ``path``."""
    data = {"schema": SCHEMA, "name": name, "command": command,
            "environment": env if env is not None else environment(), "source": source,
            "tables": list(tables), "records": list(records)}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1, default=float)
        fh.write("\n")
    return path


def read(path):
    """Read a results file, refusing another schema."""
    with open(path) as fh:
        data = json.load(fh)
    if data.get("schema") != SCHEMA:
        raise ValueError(f"{path}: results schema {data.get('schema')!r}, expected {SCHEMA}")
    return data


def _cell(v):
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def render_markdown(data):
    """The markdown of a results file: its command, environment line and tables."""
    env = data["environment"]
    load = env.get("load_average")
    where = (f"commit `{env.get('commit')}`, {env.get('date', '?')[:10]}, "
             f"{env.get('machine', {}).get('cpus', '?')} CPUs"
             + (f", load {load[0]:.1f}" if load else ""))
    out = [f"`{data['command']}` — {where}"
           + ("" if data["source"] == "measured" else f"; {data['source']}")]
    for t in data["tables"]:
        out.append("")
        if t.get("title"):
            out.append(f"**{t['title']}**")
            out.append("")
        out.append("| " + " | ".join(t["columns"]) + " |")
        out.append("|" + "---|" * len(t["columns"]))
        out.extend("| " + " | ".join(_cell(c) for c in r) + " |" for r in t["rows"])
        if t.get("notes"):
            out.append("")
            out.append(t["notes"])
    return "\n".join(out)


def from_markdown(text):
    """The markdown tables in ``text`` (a script's output) as results-file tables.

    A line in bold (``**...**``), a markdown heading (``## ...``) or an HTML
    comment above a table becomes its title; other lines are dropped.
    """
    tables, title, lines = [], "", text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("|") and i + 1 < len(lines) and set(lines[i + 1].strip()) <= set("|-: "):
            cells = [[c.strip() for c in x.strip().strip("|").split("|")]
                     for x in lines[i:] if x.strip().startswith("|")]
            n = next((k for k, x in enumerate(lines[i:]) if not x.strip().startswith("|")),
                     len(lines) - i)
            tables.append(table(title, cells[0], cells[2:n]))
            title, i = "", i + n
            continue
        if line.startswith("**") or line.startswith("<!--"):
            title = line.strip("*").removeprefix("<!--").removesuffix("-->").strip()
        elif line.startswith("#"):
            title = line.lstrip("#").strip()
        i += 1
    return tables


def main(argv=None):
    """``python -m mklopt.bench.results OUT.json -- COMMAND ...``: run a script, keep its tables.

    The command's standard output passes through; its markdown tables are
    written to ``OUT.json`` with the environment at the start of the run.
    """
    import shlex
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 3 or argv[1] != "--":
        print("usage: python -m mklopt.bench.results OUT.json -- COMMAND ...", file=sys.stderr)
        return 2
    out, cmd = argv[0], argv[2:]
    env = environment()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode:
        return proc.returncode
    env["load_average_end"] = environment()["load_average"]
    name = os.path.splitext(os.path.basename(out))[0]
    write(out, name, shlex.join(cmd), from_markdown(proc.stdout), env=env)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
