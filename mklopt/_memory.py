"""The one memory policy of mklopt (see the bad-input rules of docs/estimators.md).

Every allocation that grows with the problem (a dense kernel bank, a copy of
user matrices, cross-kernel blocks, row caches) is checked here *before* it
is made. The limit is ``max_memory`` bytes when the caller gives one, else
80 % of the memory available now. A refusal is a ``MemoryError`` that says
how much is needed, what the limit is, and what would work instead.
"""

from __future__ import annotations

import math
import mmap
import numbers
import os
import time

import numpy as np

__all__ = ["MEMORY_FRACTION", "available_memory", "memory_limit", "check_memory", "fmt_bytes",
           "empty_by_rows"]

#: Fraction of the currently available memory used when no ``max_memory`` is given.
MEMORY_FRACTION = 0.8

_GIB = float(2**30)


def fmt_bytes(b):
    """A byte count as ``"1.5 GiB (1,610,612,736 bytes)"``."""
    return f"{b / _GIB:.3g} GiB ({int(b):,} bytes)"


#: Seconds for which a reading of the available memory is reused. The
#: checks run before every allocation of a fit, twice for each binary
#: problem, or each point of a C path (hundreds a second), and reading
#: ``/proc/meminfo`` costs about 20-40 us. Memory that was allocated but not
#: yet written does not show in a reading anyway.
REUSE_SECONDS = 0.1
_last_reading = (-math.inf, None)


def available_memory():
    """Bytes of memory available now (``MemAvailable``), or None when unknown.

    A reading less than :data:`REUSE_SECONDS` old is reused.
    """
    global _last_reading
    now = time.monotonic()
    taken, value = _last_reading
    if now - taken < REUSE_SECONDS:
        return value
    value = _read_available_memory()
    _last_reading = (now, value)
    return value


def _read_available_memory():
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:  # pragma: no cover - non-Linux fallback
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover
        return None


def check_max_memory(max_memory, name="max_memory"):
    """Validate a ``max_memory`` argument: None or a positive number of bytes."""
    if max_memory is None:
        return None
    if isinstance(max_memory, bool) or not isinstance(max_memory, numbers.Real):
        raise TypeError(f"{name} must be a number of bytes or None, got {max_memory!r}")
    if not max_memory > 0:
        raise ValueError(f"{name} must be > 0 bytes, got {max_memory!r}")
    return float(max_memory)


def memory_limit(max_memory):
    """``(limit_bytes, where_it_comes_from)``; the limit is None when unknown."""
    mm = check_max_memory(max_memory)
    if mm is not None:
        return mm, "max_memory"
    avail = available_memory()
    if avail is None:  # pragma: no cover - no way to tell
        return None, "unknown"
    return MEMORY_FRACTION * avail, (
        f"{int(MEMORY_FRACTION * 100)}% of the {fmt_bytes(avail)} available now"
    )


def fits(needed, max_memory):
    """Whether ``needed`` bytes fit under the limit (True when the limit is unknown)."""
    limit, _ = memory_limit(max_memory)
    return limit is None or needed <= limit


def check_memory(needed, max_memory, what, advice):
    """Raise ``MemoryError`` before allocating ``needed`` bytes over the limit.

    Parameters
    ----------
    needed : float
        Bytes the allocation needs.
    max_memory : float or None
        The caller's ``max_memory`` (None: 80 % of the available memory).
    what : str
        What is being allocated, e.g. ``"A dense bank of 221 kernels on
        16000 samples (float64)"``.
    advice : str
        What would work instead (a storage, a smaller dtype, fewer rows).
    """
    limit, source = memory_limit(max_memory)
    if limit is not None and needed > limit:
        raise MemoryError(
            f"{what} needs {fmt_bytes(needed)} but the limit is {fmt_bytes(limit)} "
            f"({source}). {advice}"
        )


#: Arrays from this many bytes on are allocated by :func:`empty_by_rows`
#: itself (NumPy marks them for transparent huge pages from 4 MiB on).
BY_ROWS_MIN_BYTES = 4 * 2**20


def empty_by_rows(shape, dtype=np.float64):
    """An uninitialised array for work space that is written a few rows at a time.

    As :func:`numpy.empty`, but a large array (at least
    :data:`BY_ROWS_MIN_BYTES`) is given its own anonymous private memory
    map, marked ``MADV_NOHUGEPAGE``. NumPy asks the kernel for transparent
    huge pages on large arrays; where the system then compacts memory to
    find one at the first write of each 2 MiB (``defrag`` set to
    ``madvise``, the default of many Linux distributions), a matrix of which
    SMO writes a few hundred scattered rows paid for up to the whole of it:
    the first oracle call of a satellite pair (2,312 points, 193 rows
    combined) took 95-110 ms instead of 14 ms (benchmarks/README.md at
    commit 89ee8cc, "Work matrices on plain pages"). Plain pages cost a
    fault per 4 KiB actually written. Where ``madvise`` is unavailable this is
    :func:`numpy.empty`.

    Parameters
    ----------
    shape : tuple of int
    dtype : data-type, default=float64

    Returns
    -------
    ndarray
        C-contiguous, writable; its memory is unmapped with it.
    """
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    advise = getattr(mmap, "MADV_NOHUGEPAGE", None)
    if nbytes < BY_ROWS_MIN_BYTES or advise is None or not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.empty(shape, dtype=dtype)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        buf.madvise(advise)
    except OSError:  # pragma: no cover - a kernel without transparent huge pages
        pass
    return np.frombuffer(buf, dtype=dtype).reshape(shape)
