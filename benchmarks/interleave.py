"""Timing contestants side by side: run by run in turn, so that load from other processes on a
shared machine falls on all of them alike."""
from __future__ import annotations

import statistics
import time


def interleaved_median_ms(fns, repeat: int, warmup: int = 2, min_time: float = 0.0,
                          max_repeat: int | None = None) -> list[float]:
    """Median milliseconds of each function. Runs at least `repeat` rounds and, for fast
    functions, keeps going until `min_time` seconds have passed (at most `max_repeat` rounds,
    20 x repeat by default)."""
    for fn in fns:
        for _ in range(warmup):
            fn()
    max_repeat = max_repeat or 20 * repeat
    times = [[] for _ in fns]
    t_end = time.perf_counter() + min_time
    rounds = 0
    while rounds < repeat or (time.perf_counter() < t_end and rounds < max_repeat):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
        rounds += 1
    return [statistics.median(t) * 1e3 for t in times]
