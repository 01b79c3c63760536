"""Software prefetch calls (tir/prefetch.py) and the instruction each target makes of them."""
import numpy as np
import pytest
from llvmlite import binding as llvm

from vdla.compiler import build, te
from vdla.compiler.schedule import create_schedule
from vdla.compiler.target import Target
from vdla.compiler.tir import expr as E
from vdla.compiler.tir import stmt as S
from vdla.compiler.tir.prefetch import CALL, prefetch


def test_a_prefetch_is_a_call_on_a_load_and_its_locality():
    buf = S.Buffer("w", (64,), "float32")
    call = prefetch(E.BufferLoad(buf, [E.Const(3, "int32")]))
    assert call.name == CALL and call.args[0].buffer is buf and call.args[1].value == 2
    with pytest.raises(TypeError, match="prefetch takes a BufferLoad, got Const"):
        prefetch(E.Const(3, "int32"))
    with pytest.raises(ValueError, match="locality is 0-3"):
        prefetch(E.BufferLoad(buf, [E.Const(3, "int32")]), 4)


def _kernel_with_prefetch(target):
    """y[i] = sum over k of w[i, k], prefetching w's next row."""
    w = te.placeholder((64, 256), "float32", "w")
    k = te.reduce_axis((0, 256), "k")
    y = te.compute((64,), lambda i: te.sum(w[i, k.var], axis=k), "y")
    s = create_schedule(y)
    s[y].prefetch(w, k, s[y].op.axis[0])
    return build(s, [w, y], target, "k")


@pytest.mark.parametrize("triple,instruction", [
    ("x86_64-unknown-linux-gnu", "prefetcht1"),     # locality 2: L2 and beyond
    ("aarch64-linux-gnu", "prfm"),
    ("armv7a-linux-gnueabihf", "pld"),
])
def test_each_target_emits_its_prefetch_instruction(triple, instruction):
    target = Target(triple, threads=1)
    asm = target.target_machine().emit_assembly(llvm.parse_assembly(_kernel_with_prefetch(target).llvm_ir))
    assert instruction in asm


def test_a_prefetch_past_the_end_does_not_fault():
    """The last row's prefetch names the row after the buffer: a hint, never a load."""
    lib = _kernel_with_prefetch(Target.host(threads=1)).load()
    w = np.random.default_rng(0).standard_normal((64, 256)).astype("float32")
    y = np.zeros(64, "float32")
    lib.run("k", [w, y])
    np.testing.assert_allclose(y, w.sum(axis=1), rtol=1e-5, atol=1e-4)
