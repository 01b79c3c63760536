"""build: Schedule -> loop IR -> passes -> LLVM -> object code. The whole pipeline is here."""
from __future__ import annotations

from dataclasses import dataclass, field

from .schedule.lower import lower_schedule
from .target import Target
from .tir import passes as T
from .tir.verify import verify


def cpu_passes():
    """The loop-IR passes for CPU targets, in order."""
    return [
        ("simplify", T.simplify_func),
        ("lower_virtual_threads", T.lower_virtual_threads),
        ("unroll_loops", T.unroll_loops),
        ("simplify_unrolled", T.simplify_func),   # fold selects on the unrolled constants, so
                                                 # flatten_buffers indexes no dead branches
        ("partition_loops", T.partition_loops),
        ("unswitch_loops", T.unswitch_loops),     # interior iterations without the border's selects
        ("flatten_buffers", T.flatten_buffers),
        ("simplify_flat", T.simplify_func),
        ("vectorize_loops", T.vectorize_loops),
        ("simplify_vector", T.simplify_func),
    ]


def lower(schedule, args, name="kernel", check=False, passes=None):
    """The loop IR of a kernel after `passes` (default: the CPU passes); check=True verifies
    the IR after every pass. An accelerator backend passes its own list."""
    func = lower_schedule(schedule, args, name)
    if check:
        verify(func, stage="lower_schedule")
    return run_passes(func, passes, check)


def run_passes(func, passes=None, check=False):
    """`func` after `passes` (default: the CPU passes); check=True verifies after each."""
    for pass_name, fn in (cpu_passes() if passes is None else passes):
        func = fn(func)
        if check:
            verify(func, stage=pass_name)
    return func


@dataclass
class CompiledKernel:
    name: str
    target: str
    object_code: bytes
    llvm_ir: str
    arg_specs: list = field(default_factory=list)
    loop_ir: str = ""

    def load(self):
        """Load into this process (host targets only) -> KernelLibrary."""
        from ..driver.cpu_kernel import load
        return load(self.object_code, {self.name: self.arg_specs})


def build(schedule, args, target=None, name="kernel", check=False) -> CompiledKernel:
    """Compile `schedule` into one exported function NAME(void* const* buffers) for `target`
    (default: the host); `args` are the tensors in ABI order (inputs, then outputs)."""
    return build_func(lower(schedule, args, name, check=check), target)


def build_func(func, target=None) -> CompiledKernel:
    """Compile loop IR that has been through its passes: a lowered schedule (build's) or a
    kernel that topi writes as loop IR, after run_passes."""
    from .codegen import LLVMCodegen, optimize, emit_object
    from .codegen.emit import parse
    if target is None:
        target = Target.host()
    elif isinstance(target, str):
        target = Target.host() if target in ("host", "llvm") else Target(target)
    name = func.name
    cg = LLVMCodegen(target, module_name=name)
    cg.add_kernel(func)
    text = str(cg.module)
    mod = optimize(parse(text), target)
    obj = emit_object(mod, target)
    specs = [(tuple(b.shape), b.dtype) for b in func.params]
    return CompiledKernel(name, target.triple, obj, str(mod), specs, repr(func))


def vdla_passes(config):
    """The loop-IR passes for the VDLA accelerator, in order; emit_program follows them."""
    from .codegen import vdla as V
    return [
        ("alias_alu_results", V.alias_alu_results),
        ("inject_dma", V.inject_dma(config)),
        ("inject_acc_reset", V.inject_acc_reset(config)),
        ("fold_uop_kernels", V.fold_uop_kernels(config)),
        ("interleave_virtual_threads", V.interleave_virtual_threads),
        ("check_storage", V.check_storage(config)),
    ]


def build_vdla(schedule, args, config, name="kernel", check=False):
    """Compile `schedule` for the VDLA accelerator of `config` into a KernelProgram (the
    runtime calls vdla.driver replays); `args` are its buffers in order."""
    from .codegen.vdla import emit_program
    func = lower(schedule, args, name, check=check, passes=vdla_passes(config))
    return emit_program(config, func)
