"""The runtime and compiled kernels are written against the config, not the pynq numbers:
BATCH 2 x BLOCK 8 and BLOCK 32 instances, ragged shapes, checked against numpy."""
import numpy as np
import pytest

from vdla.compiler.topi.vdla import Epilogue
from vdla.driver.devices import SimulatorDevice
from vdla.hw import HwConfig

from vdla_kernels import conv_reference, dense_reference, run_conv, run_dense

CONFIGS = [{"LOG_BATCH": 1, "LOG_BLOCK": 3, "LOG_WGT_BUFF_SIZE": 16}, {"LOG_BLOCK": 5}]


@pytest.mark.parametrize("doc", CONFIGS, ids=lambda d: HwConfig.from_dict(d).name)
def test_conv_and_matmul_on_other_instances(doc, rng):
    dev = SimulatorDevice(HwConfig.from_dict(doc), dram_bytes=1 << 22)
    x = rng.integers(-128, 128, (3, 20, 9, 10), dtype=np.int8)
    w = rng.integers(-128, 128, (12, 20, 3, 3), dtype=np.int8)
    ep = Epilogue(shift=8)
    y, _, _ = run_conv(dev, x, w, ep=ep, check_races=True)
    np.testing.assert_array_equal(y, conv_reference(x, w, ep=ep))
    a = rng.integers(-128, 128, (20, 70), dtype=np.int8)
    b = rng.integers(-128, 128, (70, 50), dtype=np.int8)
    c, _, _ = run_dense(dev, a, b, check_races=True)
    np.testing.assert_array_equal(c, dense_reference(a, b))
