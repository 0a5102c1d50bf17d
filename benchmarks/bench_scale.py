"""The scale benchmark of the kernel-operator layer (reproducible command).

    python benchmarks/bench_scale.py                      # every case, about an hour
    python benchmarks/bench_scale.py --cases letter-level letter-svc

Runs each case of :mod:`mklopt.bench.scale` in its own process (peak RSS per
case), prints the table and writes ``bench-out/scale/`` (results.json,
table.md, scale_curves.png). See that module's docstring for the cases.
"""

import sys

from mklopt.bench.scale import main

if __name__ == "__main__":
    sys.exit(main())
