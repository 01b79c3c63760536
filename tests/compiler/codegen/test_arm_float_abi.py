"""armv7 kernels use the hard-float ABI of the PYNQ boards' Linux: floats reach libm in VFP
registers (no `vmov r0, sN` before `bl expf`), the object records Tag_ABI_VFP_args = 1 and
its ELF header says EF_ARM_ABI_FLOAT_HARD. (LLVM reads the three-part triple
armv7a-linux-gnueabihf as OS `gnueabihf`, no environment, and fell back to soft-float.)"""
import re

import pytest

from vdla.compiler import build, te
from vdla.compiler.codegen import arm_abi
from vdla.compiler.codegen.emit import parse
from vdla.compiler.schedule import create_schedule
from vdla.compiler.target import Target

LIBM_CALL = re.compile(r"^\s*bl\s+(expf|tanhf|erff|logf)\b")
SOFT_FLOAT_ARGUMENT = re.compile(r"^\s*vmov(\.f32)?\s+r0,\s*s\d+")


def _libm_kernel(target):
    a = te.placeholder((16,), "float32", "a")
    b = te.compute((16,), lambda i: te.exp(a[i]) + te.tanh(a[i]) + te.call("erf", a[i]), "b")
    return build(create_schedule(b), [a, b], target, "libm")


def _instructions_before_libm_calls(asm: str) -> list[list[str]]:
    """For each libm call, the instructions since the previous call or label."""
    found, since = [], []
    for line in asm.splitlines():
        if LIBM_CALL.match(line):
            found.append(since)
            since = []
        elif line.rstrip().endswith(":"):
            since = []
        else:
            since.append(line)
    return found


def test_armv7_kernels_pass_floats_to_libm_in_vfp_registers():
    target = Target("armv7a-linux-gnueabihf")
    assert target.llvm_triple == "armv7a-unknown-linux-gnueabihf" and target.hard_float
    kern = _libm_kernel(target)
    asm = target.target_machine().emit_assembly(parse(kern.llvm_ir))
    calls = _instructions_before_libm_calls(asm)
    assert len(calls) >= 16 * 3          # every lane calls expf, tanhf and erff
    soft = [line for before in calls for line in before if SOFT_FLOAT_ARGUMENT.match(line)]
    assert not soft, f"floats passed to libm in integer registers: {soft[:3]}"
    assert arm_abi.e_flags(kern.object_code) & arm_abi.EF_ARM_ABI_FLOAT_HARD
    assert arm_abi.build_attributes(kern.object_code)[arm_abi.TAG_ABI_VFP_ARGS] == 1


def test_the_hard_float_flag_is_set_only_on_evidence():
    """An object compiled soft-float (the old three-part triple straight through llvmlite) is
    refused rather than labelled hard-float."""
    import llvmlite.binding as llvm
    target = Target("armv7a-linux-gnueabihf")
    mod = parse(_libm_kernel(target).llvm_ir)
    mod.triple = "armv7a-linux-gnueabihf"
    soft = llvm.Target.from_triple(mod.triple).create_target_machine(
        cpu=target.cpu, features=target.features, reloc="pic").emit_object(mod)
    assert not arm_abi.passes_floats_in_vfp_registers(soft)
    assert not arm_abi.e_flags(soft) & arm_abi.EF_ARM_ABI_FLOAT_HARD
    with pytest.raises(arm_abi.ArmAbiError, match="Tag_ABI_VFP_args"):
        arm_abi.mark_hard_float(soft)


@pytest.mark.parametrize("triple", ["aarch64-linux-gnu", "armv7a-linux-gnueabi"])
def test_other_targets_are_not_marked(triple):
    target = Target(triple)
    assert not target.hard_float
    kern = _libm_kernel(target)
    if triple.startswith("armv7a"):   # soft-float ARM Linux: the integer-register convention is right there
        assert not arm_abi.e_flags(kern.object_code) & arm_abi.EF_ARM_ABI_FLOAT_HARD
        assert not arm_abi.passes_floats_in_vfp_registers(kern.object_code)


def test_board_targets_get_their_cpu_whatever_the_vendor_spelling():
    assert Target("armv7a-unknown-linux-gnueabihf").cpu == "cortex-a9"
    assert Target("aarch64-unknown-linux-gnu").cpu == "cortex-a53"
    assert Target("x86_64-unknown-linux-gnu").llvm_triple == "x86_64-unknown-linux-gnu"
