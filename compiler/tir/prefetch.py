"""Software prefetch in the loop IR: E.Call(CALL, [load, locality]) asks the cache for the line
that `load` (a BufferLoad, never performed) would read. LLVM's llvm.prefetch, which never faults,
so an address past the buffer's end (the last iteration's "next" slice) is harmless.

Locality as LLVM counts it: 3 keeps the line in every level (x86 prefetcht0), 2 in L2 and
beyond (prefetcht1), 1 in the outer cache (prefetcht2), 0 non-temporal."""
from __future__ import annotations

from . import expr as E

CALL = "prefetch"
INTRINSIC = "llvm.prefetch.p0"
LOCALITY_L2 = 2


def prefetch(load: E.BufferLoad, locality: int = LOCALITY_L2) -> E.Call:
    if not isinstance(load, E.BufferLoad):
        raise TypeError(f"prefetch takes a BufferLoad, got {type(load).__name__}")
    if locality not in (0, 1, 2, 3):
        raise ValueError(f"prefetch locality is 0-3 (3: every cache level), got {locality}")
    return E.Call(CALL, [load, E.Const(locality, "int32")], "int32")
