"""Small runtime programs on a device that also runs every launch through the independent
reference interpreter (vdla.simulator.reference, written from SPEC alone) and demands the
same final DRAM image, byte for byte, as the fast simulator."""
import numpy as np
import pytest

from vdla.driver.devices import SimulatorDevice
from vdla.compiler.topi.vdla import ConvKnobs, DenseKnobs, Epilogue
from vdla.simulator.reference import reference_run

from vdla_kernels import conv_reference, dense_reference, run_conv, run_dense


class ReferenceCheckedDevice(SimulatorDevice):
    def launch(self, insn_addr, insn_count, timeout_cycles=None):
        expected = reference_run(self.config, self.dram.copy(), insn_addr, insn_count)
        result = super().launch(insn_addr, insn_count, timeout_cycles)
        differ = np.flatnonzero(expected != self.dram)
        assert differ.size == 0, f"simulator and reference disagree at DRAM bytes {differ[:8]}"
        return result


@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_small_conv_and_matmul_agree_with_reference(rng, virtual_threads):
    dev = ReferenceCheckedDevice(dram_bytes=1 << 20)
    x = rng.integers(-128, 128, (1, 16, 5, 4), dtype=np.int8)
    w = rng.integers(-128, 128, (32, 16, 3, 3), dtype=np.int8)
    ep = Epilogue(mul=5, shift=10, lo=-50, hi=60)
    y, _, _ = run_conv(dev, x, w, ep=ep, knobs=ConvKnobs(1, 2, 4, 0, virtual_threads, "oc"))
    np.testing.assert_array_equal(y, conv_reference(x, w, ep=ep))
    a = rng.integers(-128, 128, (6, 32), dtype=np.int8)
    b = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    c, _, _ = run_dense(dev, a, b, knobs=DenseKnobs(2, 1, 1, virtual_threads))
    np.testing.assert_array_equal(c, dense_reference(a, b))
