"""Loading CPU kernel objects into this process and calling them (deploy runtime side).

A kernel is the entry, argument record and thread count that kernel_abi.py describes; this
loader calls the entry, reads the record and sets the thread count. No compiler imports.

Two loaders: `load` JIT-links one relocatable object with llvmlite (on the machine that
compiles), `load_shared` opens the shared object the compiler linked for a board (all kernels
and a thread pool) with ctypes, so a board needs neither llvmlite nor the compiler.
"""
from __future__ import annotations

import ctypes
import functools
import os
import tempfile
import threading
import weakref

import numpy as np

from vdla.hw.errors import RunError

from . import kernel_abi, machine, thread_pool

@functools.cache
def native_llvm():
    """llvmlite's binding with this machine's target initialized (once a process; the
    compiler's target.py adds the cross targets to it)."""
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return llvm


class CpuKernelError(RunError, RuntimeError):
    """A CPU kernel that cannot be loaded on this machine, found, or called with these arrays."""


_C_TYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "ptr": ctypes.c_void_p}
_KERNEL_T = ctypes.CFUNCTYPE(_C_TYPES[kernel_abi.KERNEL_SIGNATURE[0]],
                             *(_C_TYPES[t] for t in kernel_abi.KERNEL_SIGNATURE[1]))
_NUM_THREADS_T = _C_TYPES[kernel_abi.NUM_THREADS_TYPE]


class KernelLibrary:
    def __init__(self, engine, kernels, rouse=None):
        self._engine = engine          # keeps the JIT'ed code alive
        self.kernels = kernels         # name -> (cfunc, arg_specs, threads_address)
        self._rouse = rouse            # its thread pool's thread_pool.ROUSE, if it has one

    def pool_rouser(self):
        """The function that wakes the sleeping workers of the pool these kernels run their
        parallel loops on (thread_pool.ROUSE); None where no kernel runs more than one thread."""
        threads = [_NUM_THREADS_T.from_address(addr).value for _, _, addr in self.kernels.values() if addr]
        return self._rouse if threads and max(threads) > 1 else None

    @property
    def names(self):
        return list(self.kernels)

    def arg_specs(self, name):
        return self.kernels[name][1]

    def set_num_threads(self, n, name=None):
        """Threads for parallel loops (of one kernel, or all); more than the pool runs
        (kernel_abi.MAX_THREADS) are that many."""
        if name is not None and name not in self.kernels:
            raise CpuKernelError(f"no kernel named {name!r}; this library has {self.names}")
        try:
            value = kernel_abi.num_threads(n)
        except ValueError as exc:
            raise CpuKernelError(f"set_num_threads: {exc}") from None
        for k, (_, _, addr) in self.kernels.items():
            if (name is None or k == name) and addr:
                _NUM_THREADS_T.from_address(addr).value = value

    def run(self, name, arrays):
        """Call kernel `name` on numpy arrays (inputs then outputs), checked against its specs."""
        if name not in self.kernels:
            raise CpuKernelError(f"no kernel named {name!r}; this library has {self.names}")
        fn, specs, _ = self.kernels[name]
        if len(arrays) != len(specs):
            raise CpuKernelError(f"kernel {name} takes {len(specs)} buffers, got {len(arrays)}")
        ptrs = (ctypes.c_void_p * len(arrays))()
        for k, (a, (shape, dtype)) in enumerate(zip(arrays, specs)):
            if not isinstance(a, np.ndarray):
                raise CpuKernelError(f"kernel {name} argument {k}: expected a numpy array, got {type(a).__name__}")
            if tuple(a.shape) != tuple(shape) or a.dtype != np.dtype(dtype):
                raise CpuKernelError(f"kernel {name} argument {k}: expected {dtype}{list(shape)}, got "
                                  f"{a.dtype}{list(a.shape)}")
            if not a.flags.c_contiguous:
                raise CpuKernelError(f"kernel {name} argument {k}: the array is not C-contiguous; "
                                  "pass np.ascontiguousarray(x)")
            ptrs[k] = a.ctypes.data
        rc = fn(ptrs)
        if rc != kernel_abi.KERNEL_OK:
            raise CpuKernelError(f"kernel {name} returned error code {rc}")


def _read_spec(addr, name):
    """The kernel's own record of its arguments (at `addr`), compiled into the object beside its
    code: what the code reads and writes, whatever a header says about the buffers."""
    if not addr:
        raise CpuKernelError(f"kernel {name} has no embedded argument spec; pass the specs explicitly")
    raw = ctypes.string_at(addr)
    try:
        return kernel_abi.decode_argspec(raw)
    except ValueError as exc:
        raise CpuKernelError(f"kernel {name}: its embedded argument spec {raw[:80]!r} is malformed ({exc})") from None


def load(object_code: bytes, names) -> KernelLibrary:
    """JIT-link an ELF object for this machine. `names`: kernel names (specs read from the
    object) or a dict name -> [(shape, dtype), ...]."""
    llvm = native_llvm()
    if object_code[:4] != b"\x7fELF":
        raise CpuKernelError("object code is not an ELF file")
    target = llvm.Target.from_default_triple()
    tm = target.create_target_machine(reloc="pic", codemodel="small")
    thread_pool.ensure_loaded()   # kernels with parallel loops call its entries
    machine.request_amx()         # kernels compiled for an AMX host use its tiles
    backing = llvm.parse_assembly("")
    engine = llvm.create_mcjit_compiler(backing, tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(bytes(object_code)))
    engine.finalize_object()
    kernels = {}
    items = names.items() if isinstance(names, dict) else [(n, None) for n in names]
    for name, specs in items:
        addr = engine.get_function_address(name)
        if not addr:
            raise CpuKernelError(f"the object does not export a kernel named {name!r}")
        if specs is None:
            specs = _read_spec(engine.get_global_value_address(kernel_abi.argspec_symbol(name)), name)
        specs = [(tuple(s), str(d)) for s, d in specs]
        threads = engine.get_global_value_address(kernel_abi.num_threads_symbol(name))
        kernels[name] = (_KERNEL_T(addr), specs, threads)
    return KernelLibrary(engine, kernels, thread_pool.rouse)


def load_shared(shared_object: bytes, names, what: str = "the linked kernels") -> KernelLibrary:
    """Open a shared object linked for this machine (vdla.compiler.codegen.link) with ctypes and
    return its kernels `names`, their specs read from the object. No llvmlite."""
    if shared_object[:4] != b"\x7fELF":
        raise CpuKernelError(f"{what}: not an ELF file")
    machine.request_amx()
    # dlopen needs a file; once it is mapped the name can go (nothing else ever opens it)
    fd, path = tempfile.mkstemp(prefix="vdla-kernels-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(shared_object)
        try:
            lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
        except OSError as exc:
            raise CpuKernelError(f"{what} cannot be loaded on this machine: {exc}") from None
    finally:
        os.unlink(path)
    kernels = {}
    for name in names:
        try:
            fn = _KERNEL_T((name, lib))
        except AttributeError:
            raise CpuKernelError(f"{what} export no kernel named {name!r}") from None
        specs = _read_spec(_symbol_address(lib, kernel_abi.argspec_symbol(name)), name)
        kernels[name] = (fn, specs, _symbol_address(lib, kernel_abi.num_threads_symbol(name)))
    _forget_pool_after_fork(lib)
    try:
        rouse = ctypes.CFUNCTYPE(None)((thread_pool.ROUSE, lib))
    except AttributeError:      # linked before its pool had the entry
        rouse = None
    return KernelLibrary(lib, kernels, rouse)


def _symbol_address(lib, symbol: str) -> int:
    try:
        return ctypes.addressof(ctypes.c_char.in_dll(lib, symbol))
    except ValueError:
        return 0


_linked_pools = weakref.WeakSet()
_fork_hook = threading.Lock()
_fork_hook_set = False


def _forget_pool_after_fork(lib) -> None:
    """A linked library carries its own thread pool (thread_pool.py's code, compiled for the
    board): in a forked child its workers do not exist, so its state is zeroed there as the
    process-wide pool's is."""
    global _fork_hook_set
    _linked_pools.add(lib)
    with _fork_hook:
        if not _fork_hook_set and hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_reset_linked_pools)
            _fork_hook_set = True


def _reset_linked_pools() -> None:
    for lib in list(_linked_pools):
        for symbol, size in thread_pool.state_symbols():
            addr = _symbol_address(lib, symbol)
            if addr:
                ctypes.memset(addr, 0, size)
