"""The runtime and programs are written against the config, not the pynq numbers: BATCH 2 x
BLOCK 8 and BLOCK 32 instances, ragged tiles, checked against numpy."""
import numpy as np
import pytest

from vdla.driver.devices import SimulatorDevice
from vdla.driver.programs import (Requant, conv2d_reference, matmul_reference, run_conv2d,
                                  run_matmul)
from vdla.hw import HwConfig

CONFIGS = [{"LOG_BATCH": 1, "LOG_BLOCK": 3, "LOG_WGT_BUFF_SIZE": 16}, {"LOG_BLOCK": 5}]


@pytest.mark.parametrize("doc", CONFIGS, ids=lambda d: HwConfig.from_dict(d).name)
def test_conv_and_matmul_on_other_instances(doc, rng):
    dev = SimulatorDevice(HwConfig.from_dict(doc), dram_bytes=1 << 22)
    x = rng.integers(-128, 128, (3, 20, 9, 10), dtype=np.int8)
    w = rng.integers(-128, 128, (12, 20, 3, 3), dtype=np.int8)
    req = Requant(shift=8)
    y, _ = run_conv2d(dev, x, w, virtual_threads=2, requant=req)
    np.testing.assert_array_equal(y, conv2d_reference(x, w, requant=req))
    a = rng.integers(-128, 128, (20, 70), dtype=np.int8)
    b = rng.integers(-128, 128, (70, 50), dtype=np.int8)
    c, _ = run_matmul(dev, a, b, tile_m=4, tile_n=2, virtual_threads=2)   # ragged edge tiles
    np.testing.assert_array_equal(c, matmul_reference(a, b))
