"""The memory policy's reading of the available memory (mklopt._memory)."""

import math

from mklopt import _memory


def test_a_recent_reading_is_reused_and_an_old_one_is_not(monkeypatch):
    reads = []

    def fake():
        reads.append(1)
        return 1000 * len(reads)

    monkeypatch.setattr(_memory, "_read_available_memory", fake)
    monkeypatch.setattr(_memory, "_last_reading", (-math.inf, None))
    assert _memory.available_memory() == 1000
    assert _memory.available_memory() == 1000  # within REUSE_SECONDS: no new read
    assert len(reads) == 1
    taken, value = _memory._last_reading
    monkeypatch.setattr(_memory, "_last_reading", (taken - 2 * _memory.REUSE_SECONDS, value))
    assert _memory.available_memory() == 2000
    assert len(reads) == 2
    limit, where = _memory.memory_limit(None)
    assert limit == _memory.MEMORY_FRACTION * 2000 and "available" in where


def test_the_reading_is_a_positive_byte_count():
    value = _memory._read_available_memory()
    assert value is None or (isinstance(value, int) and value > 0)
