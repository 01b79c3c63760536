"""Helpers for tests that hand-write instruction streams."""
import numpy as np

from vdla.hw import load_config
from vdla.simulator import Simulator

INSN_BASE = 1 << 20  # instructions live at 1 MiB in the test DRAM images


def run_stream(insns, dram=None, config=None, trace=False):
    config = load_config("pynq" if config is None else config)
    if dram is None:
        dram = np.zeros(2 << 20, dtype=np.uint8)
    stream = config.isa.encode_stream(insns)
    dram[INSN_BASE:INSN_BASE + stream.size] = stream
    return Simulator(config).run(dram, INSN_BASE, len(insns), trace=trace)


def put(dram, byte_addr, array):
    raw = np.ascontiguousarray(array).view(np.uint8).ravel()
    dram[byte_addr:byte_addr + raw.size] = raw
