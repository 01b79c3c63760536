"""Compiled kernels, through the runtime, on the RTL device: DRAM results bit-identical to
the simulator device (and to numpy), cycle counter equal to the simulator's cycle count,
counters equal to its statistics."""
import numpy as np
import pytest

from vdla.driver.devices.rtl import RtlDevice
from vdla.driver.devices.simulator import SimulatorDevice
from vdla.compiler.topi.vdla import ConvKnobs, DenseKnobs, Epilogue

from vdla_kernels import conv_reference, dense_reference, run_conv, run_dense

from .harness import STAT_KEYS


def _int8(rng, *shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


def _both(run):
    """Run `run(device)` on the RTL and on the simulator; return both (output, result)."""
    with RtlDevice() as rtl, SimulatorDevice() as sim:
        return run(rtl), run(sim)


def _check(rtl, sim, want):
    (y_rtl, r_rtl), (y_sim, r_sim) = rtl, sim
    np.testing.assert_array_equal(y_rtl, y_sim)
    np.testing.assert_array_equal(y_rtl, want)
    assert r_rtl.cycles == r_sim.cycles
    for key in STAT_KEYS:
        assert r_rtl.stats[key] == r_sim.stats[key], key


@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_matmul(virtual_threads, rng):
    a, b = _int8(rng, 24, 64), _int8(rng, 64, 64)
    ep = Epilogue(lo=None, hi=None)
    rtl, sim = _both(lambda d: run_dense(d, a, b, ep, DenseKnobs(8, 2, 2, virtual_threads))[:2])
    _check(rtl, sim, dense_reference(a, b, ep))


def test_matmul_with_alu_requantization(rng):
    a, b = _int8(rng, 16, 48), _int8(rng, 48, 32)
    ep = Epilogue(mul=3, shift=9, lo=-100, hi=100)
    rtl, sim = _both(lambda d: run_dense(d, a, b, ep, DenseKnobs(8, 1, 0, 2))[:2])
    _check(rtl, sim, dense_reference(a, b, ep))


def test_padded_3x3_conv_two_virtual_threads(rng):
    x, w = _int8(rng, 1, 16, 8, 8), _int8(rng, 32, 16, 3, 3)
    ep = Epilogue(shift=8)
    rtl, sim = _both(lambda d: run_conv(d, x, w, 1, 1, ep, ConvKnobs(1, 4, 8, 0, 2, "h"))[:2])
    _check(rtl, sim, conv_reference(x, w, 1, 1, ep))


def test_rtl_device_is_a_device_and_reports_hardware_errors(tmp_path):
    from vdla.driver.control import HardwareError
    from vdla.driver.device import Device
    from vdla.hw.isa import INSN_BYTES, FinishInsn, MemInsn, MemType, Opcode
    with RtlDevice() as rtl:
        assert isinstance(rtl, Device)
        config = rtl.config
        # a token pushed and never popped: the hardware raises its error bit at FINISH
        insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=0, push_next=True), FinishInsn()]
        stream = config.isa.encode_stream(insns)
        buf = rtl.alloc(stream.size, align=INSN_BYTES)
        rtl.write(buf, stream)
        with pytest.raises(HardwareError, match="tokens left"):
            rtl.launch(buf.addr, len(insns))
