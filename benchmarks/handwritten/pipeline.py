"""Software pipelining with virtual threads: the dependence-token protocol of a tiled loop.

Iteration i of a loop runs load(i) -> compute(i) -> store(i). With `virtual_threads` = T,
iteration i uses SRAM slot i % T, so iteration i's loads only have to wait until compute
has finished with iteration i - T (token compute->load), and its compute until the store
stage has drained the accumulators of iteration i - T (token store->compute). With T = 1
loads and compute alternate; with T = 2 the load of one tile overlaps the compute of the
other (double buffering), which is how VTA hides memory latency.

Tokens are pushed only when a later iteration pops them, so none is left at FINISH.
"""
from __future__ import annotations

from typing import Callable

from vdla.driver.runtime import Stage


def emit_pipelined(cq, iterations: int, virtual_threads: int,
                   load: Callable[[int, int], None],
                   compute: Callable[[int, int], None],
                   store: Callable[[int, int], None]) -> None:
    """Emit `iterations` load/compute/store steps; each callback gets (iteration, slot)."""
    if virtual_threads < 1:
        raise ValueError(f"virtual_threads must be at least 1, got {virtual_threads}")
    t = virtual_threads
    for i in range(iterations):
        slot = i % t
        reuses_slot = i >= t              # slot held data of iteration i - t
        slot_reused_later = i + t < iterations
        if reuses_slot:
            cq.dep_pop(Stage.COMPUTE, Stage.LOAD)
        load(i, slot)
        cq.dep_push(Stage.LOAD, Stage.COMPUTE)

        cq.dep_pop(Stage.LOAD, Stage.COMPUTE)
        if reuses_slot:
            cq.dep_pop(Stage.STORE, Stage.COMPUTE)
        compute(i, slot)
        if slot_reused_later:
            cq.dep_push(Stage.COMPUTE, Stage.LOAD)
        cq.dep_push(Stage.COMPUTE, Stage.STORE)

        cq.dep_pop(Stage.COMPUTE, Stage.STORE)
        store(i, slot)
        if slot_reused_later:
            cq.dep_push(Stage.STORE, Stage.COMPUTE)
