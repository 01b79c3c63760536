"""The simulated board as a device of the real pynq package: pynq's probe finds it,
pynq.allocate / pynq.MMIO / pynq.Bitstream go through it, non-coherent buffers need
flush and invalidate, and what a board would not answer is refused by name."""
import subprocess
import sys

import numpy as np
import pytest

from board_cli import SKIP_REASON

pynq = pytest.importorskip("pynq", reason=SKIP_REASON)

from vdla.driver.bitfile import BitfileError, write_bit  # noqa: E402
from vdla.driver.board import load_manifest  # noqa: E402
from vdla.driver.device import DeviceError  # noqa: E402
from vdla.driver.devices.pynq_sim.device import CMA_BASE, SimulatedPynqDevice  # noqa: E402
from vdla.hw import load_config, regmap  # noqa: E402


def _probe(env_value):
    code = ("import os, warnings, pynq\n"
            "warnings.simplefilter('ignore')\n"
            "import vdla.driver.devices.pynq_sim.device\n"
            "print([type(d).__name__ for d in pynq.Device.devices])\n")
    env = {"PATH": "/usr/bin:/bin", **({"VDLA_PYNQ_SIM": env_value} if env_value else {})}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def test_pynqs_probe_finds_the_board_only_when_asked():
    asked = _probe("1")
    assert asked.returncode == 0, asked.stderr
    assert asked.stdout.strip() == "['SimulatedPynqDevice']"
    assert _probe(None).stdout.strip() == "[]"


def test_download_allocate_and_registers_go_through_pynq(board, board_folder):
    manifest = load_manifest(board_folder())
    pynq.Bitstream(str(manifest.bitstream_path)).download()
    assert board.downloads == [str(manifest.bitstream_path)] and board.design.coherent

    buf = pynq.allocate(shape=(1000,), dtype=np.int32)
    assert isinstance(buf, pynq.buffer.PynqBuffer) and buf.device_address >= CMA_BASE
    buf[:] = np.arange(1000)
    seen = board.ddr[buf.device_address:buf.device_address + buf.nbytes].view(np.int32)
    np.testing.assert_array_equal(seen, np.arange(1000))          # a coherent port: the fabric sees it
    assert board.cma.used_bytes == 4096
    buf.freebuffer()
    assert board.cma.used_bytes == 0

    mmio = pynq.MMIO(manifest.control_base, manifest.control_range)
    assert mmio.read(regmap.OFFSET["HW_ID"]) == load_config("pynq").hash32
    mmio.write(regmap.OFFSET["INSN_COUNT"], 7)
    assert mmio.read(regmap.OFFSET["INSN_COUNT"]) == 7
    assert list(board.block.log)[-2:] == [("w", regmap.OFFSET["INSN_COUNT"], 7), ("r", regmap.OFFSET["INSN_COUNT"], 7)]
    with pytest.raises(DeviceError, match="no AXI slave answers there; .* at 0x43c00000..0x43c00fff"):
        pynq.MMIO(manifest.control_base + manifest.control_range, 4).read(0)


def test_a_non_coherent_port_sees_only_flushed_data(board, board_folder):
    pynq.Bitstream(str(load_manifest(board_folder(coherent=False)).bitstream_path)).download()
    buf = pynq.allocate(shape=(64,), dtype=np.uint8)
    fabric = board.ddr[buf.device_address:buf.device_address + 64]
    buf[:] = 7
    assert not fabric.any()                    # still in the CPU's caches
    buf.flush()
    assert (fabric == 7).all()
    fabric[:] = 9                              # the accelerator writes DRAM
    assert (buf == 7).all()
    buf.invalidate()
    assert (buf == 9).all() and board.flushes == 1 and board.invalidates == 1


def test_nothing_answers_before_a_design_is_loaded(board):
    with pytest.raises(DeviceError, match="download a bitstream first"):
        pynq.allocate(shape=(16,), dtype=np.uint8)
    with pytest.raises(DeviceError, match="no design loaded .*would hang the bus"):
        pynq.MMIO(0x43C00000, 4096).read(0)


def test_a_real_bitstream_cannot_configure_the_simulator(board, tmp_path):
    bit = tmp_path / "vivado.bit"
    bit.write_bytes(write_bit("vdla_wrapper;UserID=0X86EA070D;Version=2023.2", "7z020clg400-1", b"\xff" * 64))
    with pytest.raises(BitfileError, match="vivado.bit .*is not a simulation bitstream"):
        pynq.Bitstream(str(bit)).download()
    assert board.design is None


def test_pynqs_own_parser_reads_simulation_bitstreams(board_folder):
    from pynq.pl_server.embedded_device import parse_bit_header
    manifest = load_manifest(board_folder())
    header = parse_bit_header(manifest.bitstream_path.read_bytes())
    assert header["design"] == "vdla_pynq" and header["part"] == "7z020clg400-1"


def test_the_board_refuses_odd_sizes():
    with pytest.raises(DeviceError, match="positive number of 4096-byte pages"):
        SimulatedPynqDevice(cma_bytes=1000)
