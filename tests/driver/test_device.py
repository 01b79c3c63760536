"""Device memory, the simulator device, and bad streams surfacing as clear errors (no hang)."""
import numpy as np
import pytest

from vdla.driver.device import Device, DeviceBuffer, DeviceError, DeviceMemory, OutOfDeviceMemory
from vdla.driver.devices import SimulatorDevice
from vdla.hw import FinishInsn, GemmInsn, MemInsn, MemType, Opcode
from vdla.simulator import DeadlockError, MemoryAccessError, TokenError


def test_first_fit_alignment_and_coalescing():
    mem = DeviceMemory(base=0x1000, size=0x1000)
    a = mem.alloc(100, align=64)
    b = mem.alloc(10, align=256)
    c = mem.alloc(64, align=64)
    assert (a.addr, b.addr, c.addr) == (0x1000, 0x1100, 0x1080)   # c: next 64-aligned spot, in the gap before b
    mem.free(a)
    mem.free(c)
    assert mem.alloc(0x100, align=64).addr == 0x1000              # a+c+gap merged back into one block
    mem.free(b)
    with pytest.raises(DeviceError, match="double free"):
        mem.free(b)


def test_out_of_memory_names_the_sizes():
    mem = DeviceMemory(base=0, size=4096)
    mem.alloc(3000)
    with pytest.raises(OutOfDeviceMemory, match=r"cannot allocate 2000 bytes .* 1096 bytes free, "
                                                r"largest free block 1096 bytes"):
        mem.alloc(2000)


def test_simulator_device_is_a_device_and_copies_are_bounds_checked():
    dev = SimulatorDevice(dram_bytes=1 << 20)
    assert isinstance(dev, Device)
    buf = dev.alloc(64)
    assert buf.addr >= 4096          # address 0 is never handed out
    data = np.arange(16, dtype=np.int32)
    dev.write(buf, data)
    np.testing.assert_array_equal(dev.read(buf, np.int32, 16), data)
    np.testing.assert_array_equal(dev.read(buf, np.int32, (2, 2), offset=8), data[2:6].reshape(2, 2))
    with pytest.raises(DeviceError, match=r"bytes \[32, 96\) are outside"):
        dev.write(buf, data, offset=32)
    with pytest.raises(DeviceError, match="not an allocated buffer"):
        dev.read(DeviceBuffer(buf.addr + 64, 16), np.int8, 16)


def _launch(dev, insns):
    words = dev.config.isa.encode_stream(insns)
    buf = dev.alloc(words.size)
    dev.write(buf, words)
    return dev.launch(buf.addr, len(insns))


def test_missing_token_is_a_deadlock_naming_module_insn_and_queue():
    dev = SimulatorDevice(dram_bytes=1 << 20)
    # compute waits on l2c but no load ever pushes it
    with pytest.raises(DeadlockError, match=r"compute at instruction 0 waits for token on l2c"):
        _launch(dev, [GemmInsn(reset=True, pop_prev=True), FinishInsn()])


def test_leftover_token_is_an_error_at_finish():
    dev = SimulatorDevice(dram_bytes=1 << 20)
    with pytest.raises(TokenError, match="1 token.* left in queue c2s"):
        _launch(dev, [GemmInsn(reset=True, push_next=True), FinishInsn()])


def test_out_of_range_dram_address_is_named():
    dev = SimulatorDevice(dram_bytes=1 << 20)
    load = MemInsn(opcode=Opcode.LOAD, memory_type=MemType.ACC, dram_base=(1 << 20) // 64, x_size=1, y_size=1)
    with pytest.raises(MemoryAccessError, match="instruction 0: .*dram_base"):
        _launch(dev, [load, FinishInsn()])


def test_device_buffers_are_given_back_however_the_block_ends():
    from vdla.driver.device import device_buffers
    dev = SimulatorDevice(dram_bytes=1 << 16)
    free = dev.memory.free_bytes
    with device_buffers(dev, [(100, 64), (10, 256)]) as bufs:
        assert [b.nbytes for b in bufs] == [100, 10] and bufs[1].addr % 256 == 0
    assert dev.memory.free_bytes == free
    with pytest.raises(RuntimeError, match="the block failed"):
        with device_buffers(dev, [(100, 64)]):
            raise RuntimeError("the block failed")
    assert dev.memory.free_bytes == free
    with pytest.raises(OutOfDeviceMemory):                       # the second does not fit: the first goes back
        with device_buffers(dev, [(100, 64), (1 << 20, 64)]):
            pass
    assert dev.memory.free_bytes == free
