"""Devices over one DRAM byte array (vdla.driver.devices.dram_window): the first page is never
handed out, copies land at the buffer's physical address in the window, out-of-bounds copies and
a closed device are DeviceErrors."""
import numpy as np
import pytest

from vdla.driver.device import DeviceError
from vdla.driver.devices.dram_window import GUARD_BYTES, DramWindowDevice

BASE = 0x1000_0000


class WindowDevice(DramWindowDevice):
    def __init__(self, nbytes):
        self._init_window(np.zeros(nbytes, np.uint8), BASE)


def test_buffers_start_after_the_guard_page_and_copies_land_at_their_address(rng):
    dev = WindowDevice(1 << 16)
    buf = dev.alloc(100)
    assert buf.addr >= BASE + GUARD_BYTES
    x = rng.standard_normal(10).astype(np.float32)
    dev.write(buf, x, offset=8)
    start = buf.addr - BASE + 8
    np.testing.assert_array_equal(dev._window[start:start + 40].view(np.float32), x)
    np.testing.assert_array_equal(dev.read(buf, np.float32, 10, offset=8), x)
    assert dev.read(buf, np.int16, (2, 2)).shape == (2, 2)
    assert not dev._window[:GUARD_BYTES].any()


def test_copies_past_the_buffer_are_refused():
    dev = WindowDevice(1 << 16)
    buf = dev.alloc(16)
    with pytest.raises(DeviceError):
        dev.write(buf, np.zeros(5, np.float32))
    with pytest.raises(DeviceError):
        dev.read(buf, np.uint8, 4, offset=13)


def test_a_freed_buffer_is_handed_out_again_and_a_closed_device_refuses_copies():
    with WindowDevice(1 << 16) as dev:
        a = dev.alloc(64)
        dev.free(a)
        b = dev.alloc(64)
        assert b.addr == a.addr
    with pytest.raises(DeviceError, match=r"use of a closed WindowDevice"):
        dev.write(b, np.zeros(4, np.uint8))


def test_a_window_is_a_flat_byte_array():
    with pytest.raises(TypeError, match=r"1-D uint8"):
        WindowDevice.__new__(WindowDevice)._init_window(np.zeros((2, 2), np.uint8), BASE)
