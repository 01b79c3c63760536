"""The programs of an artifact header (vdla.driver.artifact_programs): kernel programs are parsed
with their calls as records and must be compiled for the recorded hardware config; a malformed
field or call is refused naming the program, the call and the field."""
import pytest

from vdla.driver.artifact import ArtifactError
from vdla.driver.artifact_programs import check_programs
from vdla.driver.runtime import KernelProgram, ProgramParam, Stage
from vdla.driver.runtime.program_calls import Pop, Push, Store

L, C, S = int(Stage.LOAD), int(Stage.COMPUTE), int(Stage.STORE)


def _program(config_hash="abc"):
    return KernelProgram("k", config_hash, [ProgramParam("x", 64, 1), ProgramParam("y", 64, 1)], [],
                         [Pop(C, S), Store(0, 1, 0, 4, 1, 4), Push(S, C)])


def test_programs_are_parsed_into_records_for_the_recorded_config():
    header = {"vdla_programs": [_program().to_dict()], "vdla_programs_1vt": [_program().to_dict()]}
    got = check_programs(header, "abc")
    assert set(got) == {"vdla_programs", "vdla_programs_1vt"}
    assert got["vdla_programs"][0].calls == _program().calls and got["vdla_programs"][0].params[1].name == "y"


def _edited(edit):
    doc = _program().to_dict()
    edit(doc)
    return {"vdla_programs": [doc]}


@pytest.mark.parametrize("header, config_hash, match", [
    ({"vdla_programs": [_program("other").to_dict()]}, "abc",
     r"vdla_programs\[0\] \(k\) was compiled for hardware config other, the artifact records abc"),
    ({"vdla_programs_1vt": []}, None, "vdla_programs_1vt needs the hardware config they were compiled for"),
    ({"vdla_programs": {}}, "abc", "vdla_programs must be a list"),
    (_edited(lambda d: d["params"].__setitem__(0, ["x", 64])), "abc",
     r"vdla_programs\[0\].params\[0\] must be \[name, nbytes, elem_bytes\]"),
    (_edited(lambda d: d["calls"].__setitem__(1, ["store", 0, 1, 0, 4, 1, 4.5])), "abc",
     r"vdla_programs\[0\]: kernel program k: call 1 \(store\): field x_stride must be an integer"),
    (_edited(lambda d: d["calls"].append(["store", 0, 2, 0, 4, 1, 4])), "abc",
     r"vdla_programs\[0\]: kernel program k: call 3 names buffer 2 of 2"),
    (_edited(lambda d: d.update(format="vdla-kernel-program/0")), "abc",
     r"vdla_programs\[0\]: not a VDLA kernel program \(format 'vdla-kernel-program/0'"),
])
def test_a_malformed_program_is_refused_naming_it(header, config_hash, match):
    with pytest.raises(ArtifactError, match="artifact header: " + match):
        check_programs(header, config_hash)


def test_a_kernel_carries_requant_then_depthwise_flags():
    from vdla.driver.runtime import UopKernel
    from vdla.hw import Uop
    prog = _program()
    prog.kernels.append(UopKernel.gemm([Uop(0, 0, 0), Uop(0, 1, 0), Uop(0, 2, 0)], depthwise=True))
    doc = prog.to_dict()
    assert doc["kernels"][0][8:] == [0, 1]
    check_programs({"vdla_programs": [doc]}, "abc")
    doc["kernels"][0][9] = 2
    with pytest.raises(ArtifactError, match=r"kernels\[0\]\[9\]"):
        check_programs({"vdla_programs": [doc]}, "abc")
