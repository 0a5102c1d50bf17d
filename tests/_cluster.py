"""A two-process Dask cluster for the tests that need one (sharded banks, parallel fits)."""

import contextlib
import os
from pathlib import Path

import mklopt


@contextlib.contextmanager
def local_client():
    """A ``Client`` on ``LocalCluster(n_workers=2, processes=True)``, closed on exit."""
    import distributed  # optional: the modules using this importorskip it first

    # Workers are new interpreters: make them import the mklopt under test
    # (a source tree may shadow an installed copy only on this side).
    root = str(Path(mklopt.__file__).resolve().parents[1])
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = root + ("" if old is None else os.pathsep + old)
    try:
        cluster = distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=50,
        )
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()
