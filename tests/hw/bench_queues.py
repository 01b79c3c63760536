"""cocotb unit benches of the queues, against cycle-level Python models of their contract.

Run by test_queues.py (one Verilator build per block and parameter set). Inputs are driven
at falling edges; registered outputs are compared before the inputs change, combinational
ones (empty, overflow) after they settle.
"""
import os
import random
from collections import deque

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly

CYCLES = 3000


class TokenQueueModel:
    def __init__(self, depth, delay):
        self.depth, self.delay = depth, delay
        self.count, self.line = 0, [0] * delay

    def step(self, push, pop):
        """Combinational outputs for this cycle's inputs, then the clock edge."""
        arrive = self.line[-1] if self.delay else push
        avail = self.count != 0
        taken = pop and avail
        overflow = bool(arrive and self.count == self.depth and not taken)
        empty = self.count == int(taken) and not any(self.line)
        self.count += int(arrive and not overflow) - int(taken)
        if self.delay:
            self.line = [push] + self.line[:-1]
        return empty, overflow


async def _start(dut):
    Clock(dut.clk, 10, unit="ns").start()
    dut.rst.value = 1
    dut.flush.value = 0
    dut.push.value = 0
    dut.pop.value = 0
    for _ in range(2):
        await FallingEdge(dut.clk)
    dut.rst.value = 0


@cocotb.test()
async def token_queue_matches_model(dut):
    depth, delay = int(os.environ["QUEUE_DEPTH"]), int(os.environ["QUEUE_DELAY"])
    await _start(dut)
    # a lone push is visible delay + 1 cycles after the cycle it was made in (timing.py:
    # pushed in an instruction's last cycle e - 1, visible at e + token_delay)
    await FallingEdge(dut.clk)
    dut.push.value = 1
    await FallingEdge(dut.clk)
    dut.push.value = 0
    waited = 1
    while not int(dut.avail.value):
        await FallingEdge(dut.clk)
        waited += 1
    assert waited == delay + 1, f"token visible after {waited} cycles, expected {delay + 1}"
    dut.pop.value = 1
    await FallingEdge(dut.clk)
    dut.pop.value = 0
    for _ in range(delay + 2):
        await FallingEdge(dut.clk)
    assert not int(dut.avail.value) and int(dut.empty.value)

    model = TokenQueueModel(depth, delay)
    rng = random.Random(1)
    overflows = 0
    for cycle in range(CYCLES):
        phase = (cycle // 200) % 3            # fill, drain, mixed
        assert int(dut.avail.value) == (model.count != 0), f"cycle {cycle}: avail"
        push = int(rng.random() < (0.8, 0.2, 0.5)[phase])
        pop = int(rng.random() < (0.2, 0.8, 0.5)[phase])
        dut.push.value, dut.pop.value = push, pop
        empty, overflow = model.step(push, pop)
        await ReadOnly()
        assert int(dut.empty.value) == empty, f"cycle {cycle}: empty"
        assert int(dut.overflow.value) == overflow, f"cycle {cycle}: overflow"
        overflows += overflow
        await FallingEdge(dut.clk)
    assert overflows > 0, "the random stimulus never filled the queue"


@cocotb.test()
async def cmd_fifo_matches_model(dut):
    depth = int(os.environ["QUEUE_DEPTH"])
    await _start(dut)
    entries = deque()
    rng = random.Random(2)
    fulls = 0
    for cycle in range(CYCLES):
        phase = (cycle // 100) % 3
        full, valid = len(entries) == depth, bool(entries)
        assert int(dut.full.value) == full, f"cycle {cycle}: full"
        assert int(dut.valid.value) == valid, f"cycle {cycle}: valid"
        if valid:
            assert int(dut.rdata.value) == entries[0], f"cycle {cycle}: head"
        fulls += full
        push = int(rng.random() < (0.8, 0.2, 0.5)[phase])
        pop = int(rng.random() < (0.2, 0.8, 0.5)[phase])
        flush = int(rng.random() < 0.003)
        data = rng.getrandbits(len(dut.wdata))
        dut.push.value, dut.pop.value, dut.flush.value, dut.wdata.value = push, pop, flush, data
        # the edge: a pop frees the head, a push into a full queue is refused (full is registered)
        if flush:
            entries.clear()
        else:
            if pop and valid:
                entries.popleft()
            if push and not full:
                entries.append(data)
        await FallingEdge(dut.clk)
    assert fulls > 0, "the random stimulus never filled the FIFO"
