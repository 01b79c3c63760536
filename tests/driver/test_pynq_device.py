"""PynqDevice over a simulated board (tests/driver/fake_pynq.py): the board driver's control
sequence, memory window and manifest handling, checked bit-exact against numpy."""
import json

import numpy as np
import pytest

from vdla.driver.board import load_manifest
from vdla.driver.control import ConfigMismatch, HardwareError
from vdla.driver.device import DeviceError
from vdla.driver.devices.pynq import PynqDevice
from vdla.compiler.topi.vdla import Epilogue
from vdla.hw import FinishInsn, GemmInsn, load_config

from fake_pynq import Board  # tests/driver is on sys.path (pytest rootdir-relative import)
from vdla_kernels import dense_reference, run_dense


def test_manifests_match_their_configs():
    for board in ("pynq", "ultra96", "zcu104"):
        m = load_manifest(board)
        c = load_config(m.config)
        assert m.clock_mhz == c.clock_mhz and m.board == board
    assert load_manifest("pynq").control_base == 0x43C00000


def test_matmul_on_the_board_matches_numpy_and_the_simulator(rng):
    board = Board(load_config("pynq"))
    dev = PynqDevice("pynq", program=False, pynq_module=board)
    a = rng.integers(-128, 128, size=(32, 64), dtype=np.int8)
    b = rng.integers(-128, 128, size=(64, 48), dtype=np.int8)
    c, result, _ = run_dense(dev, a, b, Epilogue(lo=None, hi=None))
    np.testing.assert_array_equal(c, dense_reference(a, b, Epilogue(lo=None, hi=None)))
    assert board.launches == 1
    # the counters come back through the registers; they equal a direct simulator run's
    assert result.cycles > 0 and result.stats["gemm_uops"] == (32 * 64 * 48) // 256
    assert 0 < result.gemm_utilization <= 1
    dev.close()


def test_wrong_bitstream_is_refused_before_launch():
    other = load_config({**load_config().to_dict(), "LOG_BATCH": 1})
    board = Board(other)  # the fabric holds a 2x16 design
    dev = PynqDevice("pynq", program=False, pynq_module=board)
    buf = dev.alloc(64)
    dev.write(buf, load_config().isa.encode_stream([FinishInsn()]))
    with pytest.raises(ConfigMismatch, match="ID register holds .* built for config 1x16_i8w8a32"):
        dev.launch(buf.addr, 1)
    assert board.launches == 0


def test_hardware_error_bit_becomes_an_exception():
    board = Board(load_config())
    dev = PynqDevice("pynq", program=False, pynq_module=board)
    buf = dev.alloc(64)
    dev.write(buf, load_config().isa.encode_stream([GemmInsn(reset=True, push_next=True), FinishInsn()]))
    with pytest.raises(HardwareError, match="tokens left in a queue"):
        dev.launch(buf.addr, 2)


def test_programming_checks_the_bitstream(tmp_path):
    bit = tmp_path / "vdla_pynq.bit"
    bit.write_bytes(b"not really a bitstream")
    doc = json.loads((load_manifest("pynq").folder / "pynq.json").read_text())
    manifest = tmp_path / "pynq.json"
    manifest.write_text(json.dumps({**doc, "sha256": "0" * 64}))
    board = Board(load_config())
    with pytest.raises(ValueError, match="has SHA-256 .* the manifest records 0000"):
        PynqDevice(str(manifest), pynq_module=board)
    import hashlib
    manifest.write_text(json.dumps({**doc, "sha256": hashlib.sha256(bit.read_bytes()).hexdigest()}))
    PynqDevice(str(manifest), pynq_module=board)
    assert board.programmed == [str(bit)]
    missing = tmp_path / "other.json"
    missing.write_text(json.dumps({**doc, "bitstream": "absent.bit"}))
    with pytest.raises(FileNotFoundError, match="bitstream .*absent.bit not found"):
        PynqDevice(str(missing), pynq_module=board)


def test_without_pynq_the_error_says_what_to_install(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_pynq(name, *args, **kwargs):
        if name == "pynq":
            raise ImportError("No module named 'pynq'")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_pynq)
    with pytest.raises(DeviceError, match=r"pip install 'vdla\[pynq\]'"):
        PynqDevice("pynq", program=False)


def test_non_coherent_board_flushes_before_launch(tmp_path, rng):
    doc = json.loads((load_manifest("pynq").folder / "pynq.json").read_text())
    manifest = tmp_path / "hp.json"
    manifest.write_text(json.dumps({**doc, "coherent": False, "dram_port": "HP0"}))
    board = Board(load_config())
    dev = PynqDevice(str(manifest), program=False, pynq_module=board)
    a = rng.integers(-128, 128, size=(16, 16), dtype=np.int8)
    b = rng.integers(-128, 128, size=(16, 16), dtype=np.int8)
    c, _, _ = run_dense(dev, a, b)
    np.testing.assert_array_equal(c, dense_reference(a, b))
    assert board.flushes == 1
