"""The seeded probe data a CPU kernel candidate runs on, and timing it on this host (the
candidates compile on vdla.compiler.kernel_jobs).

Timing is wall-clock in this process, one kernel at a time: a repeat runs the kernel often
enough to last `min_repeat_s` and counts its mean; a time is the fastest of its repeats
(other processes on the host only ever slow a run down). A candidate is always timed against
the default, their repeats alternating (`compare`, and `paired` with more pairs for a
finalist), so a change of the host's load between two measurements cannot decide for one of
them."""
from __future__ import annotations

import statistics
import time

import numpy as np

from vdla.driver.kernel_abi import aligned


def probe_inputs(inputs, seed: int) -> list[np.ndarray]:
    """Seeded arrays for a kernel's input tensors: floats standard normal, integers over a
    range the type holds that keeps an int32 accumulator from overflowing; aligned as the
    executor's buffers are (kernel_abi.BUFFER_ALIGN), or the timing is of other memory traffic."""
    rng = np.random.default_rng(seed)
    arrays = []
    for t in inputs:
        shape, dtype = tuple(int(d) for d in t.shape), np.dtype(t.dtype)
        if np.issubdtype(dtype, np.floating):
            arrays.append(rng.standard_normal(shape).astype(dtype))
        elif dtype == np.bool_:
            arrays.append(rng.integers(0, 2, shape).astype(dtype))
        else:
            info = np.iinfo(dtype)
            lo, hi = max(int(info.min), -128), min(int(info.max), 127 if info.min < 0 else 255)
            arrays.append(rng.integers(lo, hi + 1, shape).astype(dtype))
    return [aligned(a) for a in arrays]


def zeroed(outputs) -> list[np.ndarray]:
    return [aligned(np.zeros(tuple(int(d) for d in t.shape), t.dtype)) for t in outputs]


def same_output(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    """Float outputs equal within the rounding a different loop order may give; integer
    outputs bit for bit."""
    for x, y in zip(a, b):
        if np.issubdtype(x.dtype, np.floating):
            scale = float(np.max(np.abs(y))) if y.size else 0.0
            if not np.allclose(x, y, rtol=1e-4, atol=1e-5 * max(scale, 1.0), equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


class HostTimer:
    """Times kernels on this host (see the module's note). `knobs` name the schedule timed
    (a fake timer's key in tests; this one times whatever `run` runs)."""

    def __init__(self, repeats: int = 5, min_repeat_s: float = 0.01, screen_pairs: int = 3, confirm_pairs: int = 7):
        self.repeats, self.min_repeat_s = repeats, min_repeat_s
        self.screen_pairs, self.confirm_pairs = screen_pairs, confirm_pairs

    def _number(self, run) -> int:
        """Runs per repeat: enough for min_repeat_s (the first run, a warm-up, is not counted)."""
        run()
        number = 1
        while True:
            start = time.perf_counter()
            for _ in range(number):
                run()
            took = time.perf_counter() - start
            if took >= self.min_repeat_s or number >= 1 << 20:
                return number
            number = max(number * 2, int(number * self.min_repeat_s / max(took, 1e-9) * 1.2))

    def _repeat_ms(self, run, number: int) -> float:
        start = time.perf_counter()
        for _ in range(number):
            run()
        return (time.perf_counter() - start) / number * 1e3

    def time(self, knobs, run) -> float:
        """Milliseconds per run of `run` (the kernel with `knobs`): the fastest repeat's mean."""
        number = self._number(run)
        return min(self._repeat_ms(run, number) for _ in range(self.repeats))

    def compare(self, knobs_a, run_a, knobs_b, run_b) -> tuple[float, float]:
        """A search's measurement of a candidate b against the default a: `_paired` over
        screen_pairs pairs."""
        return self._paired(run_a, run_b, self.screen_pairs)

    def paired(self, knobs_a, run_a, knobs_b, run_b) -> tuple[float, float]:
        """A finalist b timed against the default a before it becomes a record: `_paired` over
        confirm_pairs pairs."""
        return self._paired(run_a, run_b, self.confirm_pairs)

    def _paired(self, run_a, run_b, pairs: int) -> tuple[float, float]:
        """(ms of a, ms of b), their repeats alternating (a first, then b first, ...) and each
        the fastest of its repeats; b's is raised to a times the median of b/a over the
        pairs where that is larger, so b counts as faster only if it was in most pairs."""
        na, nb = self._number(run_a), self._number(run_b)
        a_ms, b_ms = [], []
        for i in range(pairs):
            order = ((a_ms, run_a, na), (b_ms, run_b, nb))
            for into, run, number in (order if i % 2 == 0 else order[::-1]):
                into.append(self._repeat_ms(run, number))
        a, b = min(a_ms), min(b_ms)
        ratio = statistics.median(y / x for x, y in zip(a_ms, b_ms))
        return a, max(b, a * ratio)
