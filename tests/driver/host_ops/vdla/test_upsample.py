"""VdlaUpsample's numpy semantics (vdla.driver.host_ops.vdla.upsample) against ONNX Resize's own
host op in nearest mode on the unpacked tensor, for whole factors."""
import numpy as np
import pytest

from vdla.driver import host_ops
from vdla.driver.host_ops.vdla import OPS
from vdla.driver.runtime.layout import pack_activation, unpack_activation


@pytest.mark.parametrize("fh,fw", [(2, 2), (3, 1), (1, 4)])
def test_the_packed_upsampling_is_a_nearest_resize(fh, fw, rng):
    x = rng.integers(-128, 128, (1, 20, 3, 5), dtype=np.int8)
    (y,) = OPS["VdlaUpsample"]([pack_activation(x, 1, 16)], {"layer": {"fh": fh, "fw": fw}})
    scales = np.array([1, 1, fh, fw], np.float32)
    (want,) = host_ops.run("Resize", [x.astype(np.float32), None, scales], {"mode": "nearest"})
    np.testing.assert_array_equal(unpack_activation(y, 1, 20), want.astype(np.int8))
