"""compile_batched_dense (vdla.compiler.topi.vdla.batched): G products as copies of one dense
kernel in one program, each copy's grouped buffers one group further on."""
import numpy as np

from vdla.compiler.topi import vdla as V
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import ProgramRunner
from vdla.driver.runtime.layout import pack_matrix_lhs, pack_matrix_rhs, unpack_matrix
from vdla.hw import load_config


def test_grouped_program_orders_every_sram_conflict(rng):
    """Three products as copies of one dense kernel: the race checker proves the barrier
    between copies orders every cross-module SRAM conflict, and each copy's output equals
    numpy's product of its own operands."""
    config = load_config("pynq")
    B, L = config.batch, config.block
    layer = V.BatchedDenseLayer(3, 4, 2, 2)
    ep = V.Epilogue()
    prog, _ = V.compile_batched_dense(config, layer, ep)
    a = rng.integers(-3, 4, (3, layer.m * B, layer.k * L)).astype(np.int8)
    b = rng.integers(-3, 4, (3, layer.k * L, layer.n * L)).astype(np.int8)
    device = SimulatorDevice(config, dram_bytes=1 << 24)
    bufs = [device.alloc(p.nbytes, align=max(64, p.elem_bytes)) for p in prog.params]
    device.write(bufs[0], np.concatenate([pack_matrix_lhs(a[g], B, L) for g in range(3)]))
    device.write(bufs[1], np.stack([pack_matrix_rhs(b[g], L) for g in range(3)]))
    ProgramRunner(device, check_races=True).run(prog, bufs)
    out = device.read(bufs[-1], np.int8, (3 * layer.m, layer.n, B, L))
    for g in range(3):
        got = unpack_matrix(out[g * layer.m:(g + 1) * layer.m], layer.m * B, layer.n * L)
        want = np.clip(a[g].astype(np.int64) @ b[g], -128, 127)
        np.testing.assert_array_equal(got, want)
