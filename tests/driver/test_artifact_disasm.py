"""The streams of an artifact's accelerator kernels (vdla.driver.artifact_disasm) and `vdla disasm
ARTIFACT`: the streams are the ones a run assembles (the executor's own JIT, instruction for
instruction but for the buffer addresses), --kernel picks one by program or node, --check vta
runs VTA's check on each (clean for an artifact compiled in VTA mode), and --export writes
files that the raw-stream forms of `vdla disasm` read back to the same listing and findings."""
import json
from dataclasses import replace

import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.driver.artifact_disasm import kernel_streams
from vdla.driver.cli import main
from vdla.driver.executor import Executor
from vdla.hw import MemInsn


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    from e2e.model_builders import vdla_cnn     # tests/ is on sys.path
    rng = np.random.default_rng(0)
    calib = {"input": rng.standard_normal((2, 1, 3, 32, 32)).astype(np.float32)}
    d = tmp_path_factory.mktemp("disasm")
    out = {}
    for name, vta in (("default", False), ("vta", True)):
        art = compile_model(vdla_cnn(), target="vdla", hw_config="pynq", calibration=calib, vta_compat=vta)
        (d / f"{name}.vdla").write_bytes(art.to_bytes())
        out[name] = (art, d / f"{name}.vdla")
    return out


def _shape(insn):
    """An instruction without its DRAM addresses (they follow the buffers it ran on)."""
    return replace(insn, dram_base=0) if isinstance(insn, MemInsn) else insn


def test_the_streams_are_the_ones_a_run_assembles(artifacts, rng):
    art, _ = artifacts["default"]
    ex = Executor(art)
    ex.run({"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)})
    ran = {program.name: stream for program, _, _, stream, _ in ex.runner._streams.values()}
    listed = kernel_streams(art)
    vdla_steps = [s.name for s in art.plan.steps if s.kind == "vdla"]
    assert sorted(n for k in listed for n in k.nodes) == sorted(vdla_steps)
    assert {k.name for k in listed} == set(ran)
    for k in listed:
        assert [_shape(i) for i in k.insns] == [_shape(i) for i in ran[k.name]], k.name
        assert k.words.size == 16 * len(k.insns) and k.uop_bytes > 0


def test_cli_lists_one_kernel_by_node_and_exports_what_the_raw_forms_read(artifacts, tmp_path, capsys):
    art, path = artifacts["default"]
    pool = next(s for s in art.plan.steps if s.kind == "vdla" and s.op == "VdlaPool")
    assert main(["disasm", str(path), "--kernel", pool.name]) == 0
    header, *body = capsys.readouterr().out.rstrip("\n").splitlines()
    (k,) = kernel_streams(art, pool.name)
    assert header.startswith(f"# {k.name}: {len(k.insns)} instructions") and pool.name in header
    assert len(body) == len(k.insns)
    assert main(["disasm", str(path), "--export", str(tmp_path / "x")]) == 0
    index = json.loads((tmp_path / "x" / "streams.json").read_text())
    capsys.readouterr()
    assert main(["disasm", str(tmp_path / "x" / f"{k.name}.insn")]) == 0
    assert capsys.readouterr().out.rstrip("\n").splitlines() == body
    found = main(["disasm", str(path), "--kernel", k.name, "--check", "vta"])
    from_artifact = capsys.readouterr().out.rstrip("\n").splitlines()[1:]
    assert main(["disasm", str(tmp_path / "x" / f"{k.name}.dram"), "--insn-addr", str(index[k.name]["insn_addr"]),
                 "--check", "vta"]) == found == 1          # ACC_8BIT loads: VDLA's, not VTA's
    assert capsys.readouterr().out.rstrip("\n").splitlines() == from_artifact


def test_check_vta_passes_an_artifact_compiled_in_vta_mode(artifacts, capsys):
    _, path = artifacts["vta"]
    assert main(["disasm", str(path), "--check", "vta"]) == 0
    out = capsys.readouterr().out
    assert out.count("VTA-compatible:") == out.count("# v") > 0


def test_unknown_kernels_and_raw_stream_flags_are_refused_with_the_reason(artifacts, tmp_path, capsys):
    art, path = artifacts["default"]
    assert main(["disasm", str(path), "--kernel", "nope"]) != 0
    err = capsys.readouterr().err
    assert "no kernel 'nope' in the artifact; its kernels: v0_conv (" in err
    assert main(["disasm", str(path), "--insn-addr", "0"]) != 0
    assert "--insn-addr is for raw streams and DRAM images" in capsys.readouterr().err
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"\0" * 20)
    assert main(["disasm", str(odd)]) != 0
    assert "20 bytes is not a whole number of 16-byte instructions" in capsys.readouterr().err
    assert main(["disasm", str(odd), "--kernel", "v0_conv"]) != 0
    assert "--kernel reads a vdla artifact" in capsys.readouterr().err
