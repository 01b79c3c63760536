"""Micro-op kernels in the micro-op SRAM (vdla.driver.runtime.uop_cache): kernels are laid out one
after another, a resident one is not placed again, one that does not fit before the end wraps to
0 and evicts exactly the kernels it overlaps, and one larger than the SRAM is a KernelError."""
import pytest

from vdla.driver.runtime import KernelError
from vdla.driver.runtime.uop_cache import UopSramCache


class Kernel:
    def __init__(self, name, size):
        self.name, self.uops = name, [None] * size

    def describe(self):
        return f"kernel {self.name!r}"


def test_kernels_are_laid_out_in_order_and_placed_once():
    cache = UopSramCache(16)
    a, b = Kernel("a", 5), Kernel("b", 7)
    assert cache.place(a) == (0, True) and cache.place(b) == (5, True)
    assert cache.place(a) == (0, False) and cache.lookup(b) == 5


def test_a_kernel_that_does_not_fit_wraps_and_evicts_what_it_overlaps():
    cache = UopSramCache(16)
    a, b, c, d = Kernel("a", 5), Kernel("b", 6), Kernel("c", 4), Kernel("d", 7)
    for k in (a, b, c):
        cache.place(k)                            # a [0, 5), b [5, 11), c [11, 15)
    assert cache.place(d) == (0, True)            # 15 + 7 > 16: wraps, takes [0, 7)
    assert cache.lookup(a) is None and cache.lookup(b) is None   # both overlap [0, 7)
    assert cache.lookup(c) == 11                  # untouched
    assert cache.place(a) == (7, True)            # after d: [7, 12) overlaps c
    assert cache.lookup(c) is None and cache.lookup(d) == 0


def test_a_kernel_that_fills_the_sram_exactly_fits():
    cache = UopSramCache(8)
    assert cache.place(Kernel("full", 8)) == (0, True)


def test_a_kernel_larger_than_the_sram_and_clearing():
    cache = UopSramCache(8)
    with pytest.raises(KernelError, match=r"kernel 'big': 9 micro-ops exceed the micro-op SRAM \(8 entries\)"):
        cache.place(Kernel("big", 9))
    k = Kernel("k", 3)
    cache.place(k)
    cache.clear()
    assert cache.lookup(k) is None and cache.place(k) == (0, True)
