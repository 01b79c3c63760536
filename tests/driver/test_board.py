"""Board manifests, bitstream checks and the config-hash handshake, without the pynq package.
PynqDevice itself runs through the real pynq package in tests/pynq_board (its own virtual
environment, made by .ci/run)."""
import hashlib
import importlib.util
import json
import sys

import pytest

from vdla.driver.bitfile import write_bit
from vdla.driver.board import BUILD_COMMAND, BoardError, handshake_message, load_manifest
from vdla.driver.device import DeviceError
from vdla.driver.devices.pynq import PynqDevice
from vdla.hw import load_config

OTHER = {**load_config("pynq").to_dict(), "LOG_BATCH": 1}   # a 2x16 instance: another config hash


def _manifest(tmp_path, **changes):
    doc = {**json.loads(load_manifest("pynq").path.read_text()), **changes}
    path = tmp_path / "pynq.json"
    path.write_text(json.dumps(doc))
    return path


def test_manifests_match_their_configs():
    for board in ("pynq", "ultra96", "zcu104", "kv260", "aup_zu3"):
        m = load_manifest(board)
        c = load_config(m.config)
        assert m.clock_mhz == c.clock_mhz and m.board == board
        assert m.config_hash == c.hash and m.hash32 == c.hash32
    assert load_manifest("pynq").control_base == 0x43C00000


def test_the_kv260_and_aup_zu3_manifests_name_their_parts_and_the_zynqmp_port():
    """The K26 SOM's device is XCK26-SFVC784-2LV-C (DS987); the AUP-ZU3 carries an xczu3eg in the
    SFVC784 package; both reach DRAM like the Ultra96, through the coherent HPC0 port."""
    from vdla.hw.parts import part_of
    kv260, aup_zu3, ultra96 = load_manifest("kv260"), load_manifest("aup_zu3"), load_manifest("ultra96")
    assert kv260.part == "xck26-sfvc784-2LV-c" and part_of(kv260.part) == "xck26"
    assert aup_zu3.part == "xczu3eg-sfvc784-2-e" and part_of(aup_zu3.part) == "xczu3eg"
    for m in (kv260, aup_zu3):
        assert (m.dram_port, m.coherent, m.control_base) == (ultra96.dram_port, True, ultra96.control_base)
        assert m.bitstream == f"vdla_{m.board}.bit"


def test_a_manifest_whose_config_changed_names_both_hashes_and_the_rebuild(tmp_path):
    path = _manifest(tmp_path, config_hash=load_config(OTHER).hash)
    with pytest.raises(BoardError, match=rf"config_hash {load_config(OTHER).hash[:16]}.* is not the hash of config "
                                         rf"pynq \({load_config('pynq').hash[:16]}.*{BUILD_COMMAND} pynq"):
        load_manifest(path)


@pytest.mark.parametrize("changes, match", [
    ({"config_hash": None}, "field 'config_hash' must be a str"),
    ({"control_base": "fabric"}, "control_base must be a hex address"),
    ({"sha256": "ABC"}, "sha256 must be null or 64"),
    ({"config": "no_such_preset"}, "config 'no_such_preset' cannot be loaded"),
])
def test_malformed_manifests_name_the_field(tmp_path, changes, match):
    with pytest.raises(BoardError, match=match):
        load_manifest(_manifest(tmp_path, **changes))


def test_unreadable_manifest_and_unknown_board(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(BoardError, match="cannot be read as JSON"):
        load_manifest(bad)
    with pytest.raises(BoardError, match="known boards: aup_zu3, kv260, pynq, ultra96, zcu104"):
        load_manifest("zcu102")


def test_missing_bitstream_names_a_command_that_exists(tmp_path):
    """The message used to name bitstreams/build.sh, which does not exist."""
    with pytest.raises(BoardError) as info:
        load_manifest(_manifest(tmp_path)).check_bitstream()
    text = str(info.value)
    assert "vdla_pynq.bit not found" in text and "build.sh" not in text
    assert f"`{BUILD_COMMAND} pynq`" in text and BUILD_COMMAND == "python -m vdla.bitstreams.build"
    assert importlib.util.find_spec("vdla.bitstreams.build") is not None


def test_bitstream_hash_and_user_id_are_checked_before_loading(tmp_path):
    config = load_config("pynq")
    good = write_bit(f"vdla_wrapper;UserID=0X{config.hash32:08X};Version=2023.2", "7z020clg400-1", b"\0" * 4)
    (tmp_path / "vdla_pynq.bit").write_bytes(good)
    with pytest.raises(BoardError, match="has SHA-256 .* records 0000"):
        load_manifest(_manifest(tmp_path, sha256="0" * 64)).check_bitstream()
    manifest = load_manifest(_manifest(tmp_path, sha256=hashlib.sha256(good).hexdigest()))
    assert manifest.check_bitstream() == tmp_path / "vdla_pynq.bit"

    other = load_config(OTHER).hash32
    (tmp_path / "vdla_pynq.bit").write_bytes(write_bit(f"vdla_wrapper;UserID=0X{other:08X}", "7z020clg400-1", b""))
    with pytest.raises(BoardError) as info:
        load_manifest(_manifest(tmp_path)).check_bitstream()
    text = str(info.value)
    assert f"ID 0x{config.hash32:08x}" in text and f"carries UserID 0x{other:08x}" in text
    assert f"rebuild it for this manifest (`{BUILD_COMMAND} pynq`)" in text

    (tmp_path / "vdla_pynq.bit").write_bytes(b"MZ not a bitstream")
    with pytest.raises(BoardError, match="not a .bit file"):
        load_manifest(_manifest(tmp_path)).check_bitstream()


def test_the_handshake_message_names_every_value_and_what_to_do():
    m = load_manifest("pynq")
    other = load_config(OTHER)
    fabric = handshake_message(m, register=other.hash32)
    assert f"config pynq (hash {m.config_hash[:16]}" in fabric and f"register reads 0x{other.hash32:08x}" in fabric
    assert "the fabric holds another design: load" in fabric and "vdla_pynq.bit" in fabric
    asked = handshake_message(m, register=m.hash32, requested=other)
    assert f"register reads 0x{m.hash32:08x}" in asked
    assert f"asked for config {other.name} (hash {other.hash[:16]}" in asked
    assert "open the board without a config (it runs pynq)" in asked


def test_without_pynq_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynq", None)   # makes `import pynq` fail, installed or not
    with pytest.raises(DeviceError, match=r"pip install 'vdla\[pynq\]'"):
        PynqDevice("pynq", program=False)


def test_the_build_sets_the_user_id_and_records_the_config_hash(tmp_path, monkeypatch):
    import runpy

    from vdla.driver import board as board_module
    build = runpy.run_path(str(board_module.MANIFEST_DIR / "build.py"))
    out = build["prepare"]("pynq", tmp_path / "build")
    assert (out / "vdla_id.xdc").read_text().strip() == \
        f"set_property BITSTREAM.CONFIG.USERID 0x{load_config('pynq').hash32:08X} [current_design]"

    manifests = tmp_path / "manifests"
    manifests.mkdir()
    doc = json.loads(load_manifest("pynq").path.read_text())
    (manifests / "pynq.json").write_text(json.dumps({**doc, "config_hash": "0" * 64}))
    (out / "vdla_pynq.bit").write_bytes(b"bits")
    (out / "vdla_pynq.hwh").write_text("<hwh/>")
    monkeypatch.setattr(board_module, "MANIFEST_DIR", manifests)
    build["record"]("pynq", out)
    recorded = json.loads((manifests / "pynq.json").read_text())
    assert recorded["sha256"] == hashlib.sha256(b"bits").hexdigest()
    assert recorded["config_hash"] == load_config("pynq").hash and (manifests / "vdla_pynq.bit").exists()


def test_a_config_file_beside_the_manifest_is_found_from_anywhere(tmp_path, monkeypatch):
    (tmp_path / "board_config.json").write_text(json.dumps(OTHER))
    path = _manifest(tmp_path, config="board_config.json", config_hash=load_config(OTHER).hash)
    monkeypatch.chdir("/")
    assert load_manifest(path).hw_config().hash == load_config(OTHER).hash
