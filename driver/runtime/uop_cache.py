"""Placement of micro-op kernels in the micro-op SRAM for one launch (SPEC §6).

Kernels are laid out one after another; one that does not fit before the end of the SRAM
wraps around to index 0 and evicts every resident kernel it overlaps. A resident kernel is
not loaded again. SRAM contents are not assumed to survive a launch, so the runtime clears
the cache after each one.
"""
from __future__ import annotations

from .errors import KernelError


class UopSramCache:
    def __init__(self, depth: int):
        self.depth = depth
        self.resident: dict = {}   # kernel -> begin index
        self.next_free = 0

    def lookup(self, kernel) -> int | None:
        return self.resident.get(kernel)

    def place(self, kernel) -> tuple[int, bool]:
        """(begin index, newly placed?) of `kernel`; a newly placed kernel must be loaded."""
        begin = self.resident.get(kernel)
        if begin is not None:
            return begin, False
        size = len(kernel.uops)
        if size > self.depth:
            raise KernelError(f"{kernel.describe()}: {size} micro-ops exceed the micro-op SRAM "
                              f"({self.depth} entries)")
        begin = self.next_free if self.next_free + size <= self.depth else 0
        end = begin + size
        for other, b in list(self.resident.items()):
            if b < end and begin < b + len(other.uops):
                del self.resident[other]
        self.resident[kernel] = begin
        self.next_free = end
        return begin, True

    def clear(self) -> None:
        self.resident.clear()
        self.next_free = 0
