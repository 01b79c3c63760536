"""The `vdla config` and `vdla disasm` commands."""
import json

from vdla.driver.cli import main
from vdla.driver.cli.exit_codes import EXIT_CODES
from vdla.hw import FinishInsn, GemmInsn, disassemble, load_config
from vdla.hw.errors import ConfigError


def test_config_json_round_trips(capsys):
    assert main(["config", "zcu104", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    c = load_config("zcu104")
    assert doc["name"] == c.name and doc["hash"] == c.hash and doc["bus_width_bits"] == 128


def test_config_bad_name_is_one_line_error(capsys):
    assert main(["config", "nosuchboard"]) == EXIT_CODES[ConfigError]
    err = capsys.readouterr().err
    assert err.startswith("vdla config: error: unknown hardware config 'nosuchboard'")


def test_disasm_file(tmp_path, capsys):
    insns = [GemmInsn(reset=True, uop_end=4, iter_out=2, push_next=True), FinishInsn()]
    path = tmp_path / "prog.bin"
    path.write_bytes(load_config("pynq").isa.encode_stream(insns).tobytes())
    assert main(["disasm", str(path)]) == 0
    assert capsys.readouterr().out.strip() == disassemble(insns)
