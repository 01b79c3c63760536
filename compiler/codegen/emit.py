"""LLVM IR text -> optimized module -> relocatable ELF object for a Target."""
from __future__ import annotations

import llvmlite.binding as llvm

from ..target import _init_llvm

# ELF e_machine values (System V ABI) of the architectures we emit for.
ELF_MACHINES = {3: "x86", 40: "arm", 62: "x86_64", 183: "aarch64"}


def parse(llvm_ir: str):
    _init_llvm()
    mod = llvm.parse_assembly(llvm_ir)
    mod.verify()
    return mod


def optimize(mod, target, level=3):
    """Run LLVM's standard O`level` pipeline (loop vectorizer, SLP, unrolling) in place."""
    tm = target.target_machine()
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    mpm.run(mod, pb)
    return mod


def emit_object(mod, target) -> bytes:
    obj = target.target_machine().emit_object(mod)
    if getattr(target, "hard_float", False):   # say in the header what the code does (arm_abi.py)
        from .arm_abi import mark_hard_float
        obj = mark_hard_float(obj, f"object of module {mod.name!r} for {target.triple}")
    return obj


def elf_machine(object_code: bytes) -> str:
    """The architecture an ELF object is for, read from its header."""
    if object_code[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    little = object_code[5] == 1
    e_machine = int.from_bytes(object_code[18:20], "little" if little else "big")
    return ELF_MACHINES.get(e_machine, f"e_machine={e_machine}")
