"""Code-generation targets: an LLVM triple, a CPU, its features, and a thread count."""
from __future__ import annotations

import functools
import os

from vdla.driver import gpu_limits
from vdla.driver import machine   # how the runtime reads triples: one spelling rule for both sides
from vdla.hw.errors import ConfigError

# The boards VDLA runs on, and the CPU each triple means unless told otherwise.
KNOWN = {
    "armv7a-linux-gnueabihf": ("cortex-a9", "+neon,+vfp3,+thumb2"),
    "aarch64-linux-gnu": ("cortex-a53", "+neon"),
}
BOARDS = {"armv7a-linux-gnueabihf": "PYNQ-Z1/Z2, Zynq-7000",
          "aarch64-linux-gnu": "Ultra96, ZCU104, KV260, AUP-ZU3"}
# The cores of those boards' processors (the Zynq-7000's dual Cortex-A9, the Zynq UltraScale+'s
# quad Cortex-A53): the threads a kernel compiled for the triple uses unless told otherwise.
BOARD_CORES = {"armv7a-linux-gnueabihf": 2, "aarch64-linux-gnu": 4}
# Targets named by a word; anything else must be an LLVM triple.
NAMED = {"cpu": "this machine", "host": "this machine", "vdla": "the accelerator, the rest on the CPU",
         "cuda": f"an NVIDIA GPU: this machine's, else PTX for {gpu_limits.DEFAULT_ARCH}; cuda:sm_NN for another "
                 f"({', '.join(gpu_limits.ARCHS)})"}
# LLVM target families whose objects the deploy runtime loads (ELF, on Linux: the boards' ARM
# cores and x86 hosts), with the architecture a triple spells for each.
KERNEL_FAMILIES = {"x86-64": "x86_64", "x86": "i686", "arm": "armv7a", "thumb": "thumbv7", "aarch64": "aarch64"}


class TargetError(ConfigError, ValueError):
    """A target vdla cannot compile for; the message lists the ones it can."""


def known_targets(named: bool = True) -> str:
    words = "".join(f"{k} ({v}), " for k, v in NAMED.items() if k != "host" and named)
    boards = ", ".join(f"{t} ({BOARDS[t]})" for t in KNOWN)
    return (f"{words}{boards}, or a Linux triple ARCH-VENDOR-OS[-ENV] (e.g. x86_64-unknown-linux-gnu) with ARCH "
            f"one of {', '.join(KERNEL_FAMILIES.values())}")


def check_triple(triple: str, what: str = "target") -> str:
    """`triple` if vdla can emit kernels for it, else a TargetError saying why and what it can."""
    known = known_targets(named=what == "target")
    parts = triple.split("-")
    if len(parts) < 2 or not all(parts):
        raise TargetError(f"{what} {triple!r} is neither a named target nor an LLVM triple "
                          f"ARCH-VENDOR-OS[-ENV]; known targets: {known}")
    import llvmlite.binding as llvm
    _init_llvm()
    try:
        family = llvm.Target.from_triple(triple).name
    except RuntimeError:
        raise TargetError(f"{what} {triple!r}: LLVM has no backend for architecture {parts[0]!r}; known targets: "
                          f"{known}") from None
    if family not in KERNEL_FAMILIES:
        raise TargetError(f"{what} {triple!r}: vdla's runtime loads no {family} kernels; known targets: {known}")
    if not any(p.startswith("linux") for p in parts[1:]):
        raise TargetError(f"{what} {triple!r}: the deploy runtime loads ELF objects on Linux; the triple names no "
                          f"linux OS; known targets: {known}")
    return triple


def cuda_arch(target: str) -> str | None:
    """The GPU architecture a CUDA target names: 'cuda:sm_75' -> 'sm_75', 'cuda' -> None (the
    compile picks: this machine's GPU, else the default); a TargetError for one vdla does not emit."""
    arch = target.partition(":")[2]
    if target == "cuda":
        return None
    if target.partition(":")[0] != "cuda" or arch not in gpu_limits.ARCHS:
        raise TargetError(f"target {target!r}: vdla emits PTX for {', '.join(gpu_limits.ARCHS)} "
                          f"(cuda:sm_NN; plain cuda for this machine's GPU)")
    return arch


def is_cuda(target: str) -> bool:
    return target == "cuda" or target.startswith("cuda:")


def check_target(target: str) -> str:
    """A compile target: one of NAMED, cuda:sm_NN, or a triple `check_triple` accepts."""
    if not isinstance(target, str) or not target:
        raise TargetError(f"target {target!r} is not a target name; known targets: {known_targets()}")
    if is_cuda(target):
        cuda_arch(target)
        return target
    return target if target in NAMED else check_triple(target)


class Target:
    """Where kernels run. `threads` is the number of threads parallel loops use by default
    (the loader may change it at run time); 1 makes parallel loops serial in the generated
    code, which then needs no pthread symbols. Unset: a board triple's cores (BOARD_CORES),
    else 1."""

    def __init__(self, triple: str, cpu: str | None = None, features: str | None = None,
                 threads: int | None = None):
        self.triple = triple
        # the spelling LLVM parses as meant (armv7a-linux-gnueabihf would be soft-float)
        self.llvm_triple = machine.llvm_triple(triple)
        board = next((t for t in KNOWN if machine.same_machine(t, triple)), None)
        default_cpu, default_feat = KNOWN.get(board, ("", ""))
        self.cpu = cpu if cpu is not None else default_cpu
        self.features = features if features is not None else default_feat
        self.threads = int(threads) if threads is not None else BOARD_CORES.get(board, 1)
        if self.threads < 1:
            raise ValueError(f"Target {triple}: threads must be >= 1, got {threads}")
        arch = triple.split("-")[0]
        self.arch = arch
        if arch.startswith(("x86_64", "amd64")):
            self.vector_bits = 512 if "+avx512f" in self.features else 256 if "+avx2" in self.features else 128
            self.vector_registers = 32 if "+avx512f" in self.features else 16
        else:
            self.vector_bits = 128
            # AArch64's 32 NEON registers; 32-bit ARM's 16 quad registers
            self.vector_registers = 32 if arch.startswith(("aarch64", "arm64")) else 16

    @staticmethod
    def host(threads: int | None = None) -> "Target":
        import llvmlite.binding as llvm
        _init_llvm()
        feats = llvm.get_host_cpu_features().flatten()
        if not machine.request_amx():   # tiles the OS does not grant this process would trap
            feats = ",".join(f"-{f[1:]}" if f in machine.AMX_FEATURES else f for f in feats.split(","))
        t = Target(llvm.get_process_triple(), llvm.get_host_cpu_name(), feats,
                   threads if threads is not None else (os.cpu_count() or 1))
        return t

    @property
    def is_host(self) -> bool:
        import llvmlite.binding as llvm
        return machine.same_machine(self.triple, llvm.get_process_triple())

    @property
    def hard_float(self) -> bool:
        """32-bit ARM with floats passed in VFP registers (the Linux of PYNQ boards: armhf)."""
        key = machine.key(self.triple)
        return key.arch == "arm" and key.env.endswith("hf")

    @property
    def pointer_bits(self) -> int:
        return 32 if self.arch.startswith(("arm", "i386", "i686")) and not self.arch.startswith("arm64") else 64

    def vector_lanes(self, dtype_bits: int) -> int:
        return max(1, self.vector_bits // dtype_bits)

    def target_machine(self, opt=3):
        import llvmlite.binding as llvm
        _init_llvm()
        tgt = llvm.Target.from_triple(self.llvm_triple)
        return tgt.create_target_machine(cpu=self.cpu, features=self.features, opt=opt,
                                         reloc="pic", codemodel="small")

    def with_threads(self, n):
        return Target(self.triple, self.cpu, self.features, n)

    def __repr__(self):
        return f"Target({self.triple!r}, cpu={self.cpu!r}, threads={self.threads})"


@functools.cache
def _init_llvm():
    from vdla.driver.cpu_kernel import native_llvm
    llvm = native_llvm()
    # llvm.initialize() raises in llvmlite >= 0.45: core initialization is automatic.
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
