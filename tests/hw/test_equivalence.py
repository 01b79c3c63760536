"""The simulator tests' programs, through the runtime, on the RTL device: DRAM results
bit-identical to the simulator device (and to numpy), cycle counter equal to the
simulator's cycle count, counters equal to its statistics."""
import numpy as np
import pytest

from vdla.driver.devices.rtl import RtlDevice
from vdla.driver.devices.simulator import SimulatorDevice
from vdla.driver.programs import Requant, conv2d_reference, matmul_reference, run_conv2d, run_matmul

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
    a, b = _int8(rng, 24, 64), _int8(rng, 64, 40)
    rtl, sim = _both(lambda d: run_matmul(d, a, b, tile_m=8, tile_n=2, virtual_threads=virtual_threads))
    _check(rtl, sim, matmul_reference(a, b))


def test_matmul_with_alu_requantization(rng):
    a, b = _int8(rng, 16, 48), _int8(rng, 48, 32)
    req = Requant(mul=3, shift=9, lo=-100, hi=100)
    rtl, sim = _both(lambda d: run_matmul(d, a, b, tile_m=8, tile_n=2, virtual_threads=2, requant=req))
    _check(rtl, sim, matmul_reference(a, b, requant=req))


def test_padded_3x3_conv_two_virtual_threads(rng):
    x, w = _int8(rng, 1, 16, 8, 8), _int8(rng, 32, 16, 3, 3)
    req = Requant(shift=8)
    rtl, sim = _both(lambda d: run_conv2d(d, x, w, pad=1, virtual_threads=2, tile_h=4, requant=req))
    _check(rtl, sim, conv2d_reference(x, w, pad=1, requant=req))


def test_rtl_device_is_a_device_and_reports_hardware_errors(tmp_path):
    from vdla.driver.control import HardwareError
    from vdla.driver.device import Device
    from vdla.hw.isa import FinishInsn, MemInsn, MemType, Opcode
    with RtlDevice() as rtl:
        assert isinstance(rtl, Device)
        config = rtl.config
        # a token pushed and never popped: the hardware raises its error bit at FINISH
        insns = [MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, x_size=0, push_next=True), FinishInsn()]
        stream = config.isa.encode_stream(insns)
        buf = rtl.alloc(stream.size, align=16)
        rtl.write(buf, stream)
        with pytest.raises(HardwareError, match="tokens left"):
            rtl.launch(buf.addr, len(insns))
