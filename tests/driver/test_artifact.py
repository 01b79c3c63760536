"""Where an artifact's parameters lie in memory (vdla.driver.artifact): CPU kernels read them in
64-byte vectors, so a file's blob section starts on that boundary (the header is padded), `load`
reads into memory aligned to it and keeps every parameter a view, the compiler writes its
arrays aligned, and the executor lays out in one aligned allocation parameters that are not
(from_bytes of a buffer at any address; driver/param_layout.py)."""
import numpy as np
import pytest

from artifact_edits import relu_artifact
from vdla.driver import artifact as art
from vdla.driver.executor import Executor

ALIGN = art.KERNEL_ALIGN


def _params(n):
    a = relu_artifact(n)
    a.params["odd"] = np.arange(3 * n, dtype=np.float32)[1:]    # a view 4 bytes into its buffer
    return a


def test_the_blob_section_starts_aligned_in_the_file():
    for n in (1, 5, 16, 37):
        data = _params(n).to_bytes()
        header_len = art._PREFIX.unpack_from(data)[2]
        assert (art._PREFIX.size + header_len) % ALIGN == 0


def test_load_gives_aligned_views(tmp_path):
    path = tmp_path / "a.vdla"
    _params(16).save(path)
    loaded = art.load(path)
    for name, a in loaded.params.items():
        assert a.ctypes.data % ALIGN == 0, name
        assert not a.flags.owndata and not a.flags.writeable, name      # a view of the file's bytes
    np.testing.assert_array_equal(loaded.params["odd"], np.arange(48, dtype=np.float32)[1:])


@pytest.mark.parametrize("shift", [0, 4, 16, 40])
def test_the_executor_aligns_what_from_bytes_left_unaligned(shift):
    data = _params(16).to_bytes()
    buf = np.zeros(len(data) + 2 * ALIGN, np.uint8)
    start = (-buf.ctypes.data) % ALIGN + shift
    buf[start:start + len(data)] = np.frombuffer(data, np.uint8)
    a = art.from_bytes(memoryview(buf[start:start + len(data)]))
    ex = Executor(a)
    for name in a.params:
        assert ex.buffers[name].ctypes.data % ALIGN == 0, name
        np.testing.assert_array_equal(ex.buffers[name], a.params[name])
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    np.testing.assert_array_equal(ex.run({"x": x})["y"], np.maximum(x, 0) + np.arange(16, dtype=np.float32))
