"""The executor's parameter layout (vdla.driver.param_layout): a loaded artifact's parameters
stay the views of its buffer they are; an artifact made in memory gets its parameters copied
into one allocation, each on a kernel-aligned boundary, equal and as writeable as before."""
import numpy as np

from vdla.driver.kernel_abi import BUFFER_ALIGN
from vdla.driver.param_layout import parameter_buffers


def _one_buffer(sizes, offset=0):
    raw = np.zeros(sum(sizes) + 2 * BUFFER_ALIGN, np.uint8)
    at = (-raw.ctypes.data) % BUFFER_ALIGN + offset
    views = {}
    for k, n in enumerate(sizes):
        views[f"p{k}"] = raw[at:at + n].view(np.float32)
        at += -(-n // BUFFER_ALIGN) * BUFFER_ALIGN
    return raw, views


def test_aligned_views_of_one_buffer_stay_themselves():
    raw, views = _one_buffer([256, 64, 1024])
    mv = memoryview(raw)     # as artifact.load makes them: arrays over memoryview slices of one buffer
    start = views["p0"].ctypes.data - raw.ctypes.data
    params = dict(views, q=np.frombuffer(mv[start:start + 64], np.float32))
    out = parameter_buffers(params)
    assert all(out[k] is params[k] for k in params)


def test_separate_or_misaligned_parameters_are_copied_into_one_aligned_allocation(rng):
    frozen = rng.standard_normal(5).astype(np.float32)
    frozen.flags.writeable = False
    params = {"w": rng.standard_normal((3, 7)).astype(np.float32), "b": np.arange(9, dtype=np.int8),
              "frozen": frozen, "empty": np.zeros((0, 4), np.float32),
              "off": _one_buffer([512], offset=16)[1]["p0"]}
    out = parameter_buffers(params)
    assert out.pop("empty") is params.pop("empty")      # no bytes to place
    for k, v in params.items():
        assert out[k] is not v and out[k].dtype == v.dtype and out[k].shape == v.shape
        np.testing.assert_array_equal(out[k], v)
        assert out[k].ctypes.data % BUFFER_ALIGN == 0 and out[k].flags.writeable == v.flags.writeable
    owners = set()
    for v in out.values():
        while isinstance(v.base, np.ndarray):
            v = v.base
        owners.add(id(v))
    assert len(owners) == 1
