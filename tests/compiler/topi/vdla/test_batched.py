"""vdla.compiler.topi.vdla.batched: G products as one dense program with a group axis
(compile_batched_dense), a grouped conv's groups as copies of one conv kernel in one program,
each copy's grouped buffers one group further on (compile_grouped_conv)."""
import numpy as np
import pytest

from vdla.compiler.topi import vdla as V
from vdla.driver.devices import SimulatorDevice
from vdla.driver.runtime import ProgramRunner
from vdla.driver.runtime.layout import pack_matrix_lhs, pack_matrix_rhs, pack_qparams, unpack_matrix
from vdla.hw import load_config

from vdla_kernels import dense_reference


@pytest.mark.parametrize("knobs", [None, V.DenseKnobs(4, 2, 0, 2, "n"), V.DenseKnobs(3, 2, 0, 2, "m"),
                                   V.DenseKnobs(10, 1, 1, 1, "m")],
                         ids=["default", "threads-over-columns", "threads-over-rows", "one-thread-over-rows-chunked"])
def test_products_on_the_requantizer_are_each_their_own(knobs, rng):
    """Three products of 10 rows in one dense program, the group axis outermost, on the
    requantizer with a bias and multiplier per column (shared by the products): the race
    checker proves the tokens order every cross-module SRAM conflict, also where a product's
    tiles follow the previous one's, and each product equals numpy's of its own operands."""
    config = load_config("pynq")
    B, L = config.batch, config.block
    layer = V.BatchedDenseLayer(3, 10, 2, 4)
    ep = V.Epilogue(requantizer=True, shift=20, zero=-3, lo=-128, hi=127)
    prog, _ = V.compile_batched_dense(config, layer, ep, knobs)
    a = rng.integers(-128, 128, (3, layer.m * B, layer.k * L)).astype(np.int8)
    b = rng.integers(-128, 128, (3, layer.k * L, layer.n * L)).astype(np.int8)
    bias = rng.integers(-3000, 3000, layer.n * L).astype(np.int32)
    mult = rng.integers(1 << 8, 1 << 12, layer.n * L).astype(np.int32)
    device = SimulatorDevice(config, dram_bytes=1 << 24)
    bufs = [device.alloc(p.nbytes, align=max(64, p.elem_bytes)) for p in prog.params]
    device.write(bufs[0], np.concatenate([pack_matrix_lhs(a[g], B, L) for g in range(3)]))
    device.write(bufs[1], np.stack([pack_matrix_rhs(b[g], L) for g in range(3)]))
    device.write(bufs[2], pack_qparams(bias, mult, ep.shift, ep.zero, ep.lo, ep.hi, B, L))
    ProgramRunner(device, check_races=True).run(prog, bufs)
    out = device.read(bufs[-1], np.int8, (3 * layer.m, layer.n, B, L))
    for g in range(3):
        got = unpack_matrix(out[g * layer.m:(g + 1) * layer.m], layer.m * B, layer.n * L)
        np.testing.assert_array_equal(got, dense_reference(a[g], b[g], ep, bias=bias, scale=mult))
        assert len(np.unique(got)) > 50


def test_a_grouped_conv_is_race_free_and_each_group_its_own_conv(rng):
    """Two groups of two channel blocks: each copy reads its own input blocks, weights and
    biases and writes its own output blocks (against numpy's convolution per group)."""
    config = load_config("pynq")
    L = config.block
    conv = V.ConvLayer(1, 2, 6, 6, 2, 3, 3, 1, (1, 1, 1, 1))
    prog, _ = V.compile_grouped_conv(config, V.GroupedConvLayer(2, conv), V.Epilogue(lo=None, hi=None))
    x = rng.integers(-3, 4, (1, 4 * L, 6, 6)).astype(np.int8)
    w = rng.integers(-2, 3, (4 * L, 2 * L, 3, 3)).astype(np.int8)
    from vdla.driver.runtime.layout import pack_activation, pack_conv_weight
    device = SimulatorDevice(config, dram_bytes=1 << 24)
    bufs = [device.alloc(p.nbytes, align=max(64, p.elem_bytes)) for p in prog.params]
    device.write(bufs[0], pack_activation(x, 1, L))
    device.write(bufs[1], np.concatenate([pack_conv_weight(w[g * 2 * L:(g + 1) * 2 * L], L) for g in range(2)]))
    ProgramRunner(device, check_races=True).run(prog, bufs)
    out = device.read(bufs[-1], np.int8, (1, 4, 6, 6, 1, L)).transpose(0, 1, 5, 2, 3, 4).reshape(1, 4 * L, 6, 6)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    for g in range(2):
        xs, ws = xp[:, g * 2 * L:(g + 1) * 2 * L], w[g * 2 * L:(g + 1) * 2 * L].astype(np.int64)
        want = np.zeros((1, 2 * L, 6, 6), np.int64)
        for i in range(3):
            for j in range(3):
                want += np.einsum("nchw,oc->nohw", xs[:, :, i:i + 6, j:j + 6], ws[:, :, i, j])
        np.testing.assert_array_equal(out[:, g * 2 * L:(g + 1) * 2 * L], want.astype(np.int32).astype(np.int8))
