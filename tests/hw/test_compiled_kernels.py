"""Kernels compiled by the VDLA backend, on the RTL device: output identical to the
simulator device (and to numpy), cycle counter equal to the simulator's cycle count."""
import numpy as np

from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, Epilogue, compile_conv2d
from vdla.driver.devices.rtl import RtlDevice
from vdla.driver.devices.simulator import SimulatorDevice
from vdla.driver.runtime.layout import pack_activation, pack_conv_weight, unpack_activation
from vdla.driver.runtime import run_program

from .harness import STAT_KEYS


def _rtl_equals_simulator(rtl, sim, prog, inputs):
    """Run `prog` on both devices: the same output, cycles and counters; -> the output."""
    out_rtl, r_rtl = run_program(rtl, prog, inputs)
    out_sim, r_sim = run_program(sim, prog, inputs, check_races=True)
    np.testing.assert_array_equal(out_rtl, out_sim)
    assert r_rtl.cycles == r_sim.cycles
    for key in STAT_KEYS:
        assert r_rtl.stats[key] == r_sim.stats[key], key
    return out_sim


def test_compiled_conv_layer_with_epilogue_and_two_virtual_threads(rng):
    x = rng.integers(-128, 128, (1, 20, 9, 8), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 20, 3, 3), dtype=np.int8)
    bias = rng.integers(-2000, 2000, (32,), dtype=np.int32)
    layer = ConvLayer(1, 2, 9, 8, 2, 3, 3, 1, (1, 1, 1, 1))
    ep = Epilogue(bias=True, shift=9, round=True, lo=0)
    with RtlDevice() as rtl, SimulatorDevice() as sim:
        prog, _ = compile_conv2d(sim.config, layer, ep, ConvKnobs(1, 3, 8, 1, 2, "oc"))
        inputs = [pack_activation(x, 1, 16), pack_conv_weight(w, 16),
                  np.ascontiguousarray(np.broadcast_to(bias.reshape(2, 1, 16), (2, 1, 16)))]
        out_sim = _rtl_equals_simulator(rtl, sim, prog, inputs)
    y = unpack_activation(out_sim.view(np.int8).reshape(1, 2, 9, 8, 1, 16), 1, 32)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    acc = np.einsum("nchwij,ocij->nohw", win, w.astype(np.int64)) + bias.reshape(1, -1, 1, 1)
    want = np.clip((acc + 256) >> 9, 0, 127).astype(np.int8)
    np.testing.assert_array_equal(y, want)


def test_compiled_conv_on_the_write_back_requantizer(rng):
    """A conv whose epilogue is the requantizer (SETQ per channel block, one ALU pass with the
    requant bit), two virtual threads over rows sharing the register file: the RTL's output and
    cycles equal the simulator's, and both equal the requantizer's statement."""
    from vdla.driver.runtime.layout import pack_qparams
    from vdla.hw.requantizer import pack_ctrl, requantize
    x = rng.integers(-128, 128, (1, 20, 8, 8), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 20, 3, 3), dtype=np.int8)
    bias = rng.integers(-2000, 2000, (32,), dtype=np.int32)
    mult = rng.integers(1 << 12, 1 << 17, (32,), dtype=np.int32)
    layer = ConvLayer(1, 2, 8, 8, 2, 3, 3, 1, (1, 1, 1, 1))
    ep = Epilogue(requantizer=True, shift=25, zero=-5, lo=-120, hi=110)
    with RtlDevice() as rtl, SimulatorDevice() as sim:
        prog, _ = compile_conv2d(sim.config, layer, ep, ConvKnobs(2, 2, 8, 0, 2, "h"))
        inputs = [pack_activation(x, 1, 16), pack_conv_weight(w, 16),
                  pack_qparams(bias, mult, ep.shift, ep.zero, ep.lo, ep.hi, 1, 16)]
        out_sim = _rtl_equals_simulator(rtl, sim, prog, inputs)
    y = unpack_activation(out_sim.view(np.int8).reshape(1, 2, 8, 8, 1, 16), 1, 32)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    acc = np.einsum("nchwij,ocij->nohw", win, w.astype(np.int64))
    want = requantize(acc, bias.reshape(1, -1, 1, 1), mult.reshape(1, -1, 1, 1), pack_ctrl(25, -5, -120, 110))
    np.testing.assert_array_equal(y, want)
    assert len(np.unique(y)) > 100
