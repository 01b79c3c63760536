"""Loading CPU kernel objects into this process and calling them (deploy runtime side).

A kernel is one exported C function `int32_t NAME(void* const* buffers)`. Objects also
carry `NAME__argspec` (JSON [[shape, dtype], ...], NUL-terminated) and `NAME__num_threads`
(int32, threads for parallel loops), which this loader reads and sets. No compiler imports.
"""
from __future__ import annotations

import ctypes
import json

import numpy as np

_llvm_ready = False


def _init():
    global _llvm_ready
    import llvmlite.binding as llvm
    if not _llvm_ready:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _llvm_ready = True
    return llvm


class KernelError(RuntimeError):
    pass


_KERNEL_T = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.POINTER(ctypes.c_void_p))


class KernelLibrary:
    def __init__(self, engine, kernels):
        self._engine = engine          # keeps the JIT'ed code alive
        self.kernels = kernels         # name -> (cfunc, arg_specs, threads_address)

    @property
    def names(self):
        return list(self.kernels)

    def arg_specs(self, name):
        return self.kernels[name][1]

    def set_num_threads(self, n, name=None):
        """Threads for parallel loops (of one kernel, or all)."""
        for k, (_, _, addr) in self.kernels.items():
            if (name is None or k == name) and addr:
                ctypes.c_int32.from_address(addr).value = int(n)

    def run(self, name, arrays):
        """Call kernel `name` on numpy arrays (inputs then outputs), checked against its specs."""
        if name not in self.kernels:
            raise KernelError(f"no kernel named {name!r}; this library has {self.names}")
        fn, specs, _ = self.kernels[name]
        if len(arrays) != len(specs):
            raise KernelError(f"kernel {name} takes {len(specs)} buffers, got {len(arrays)}")
        ptrs = (ctypes.c_void_p * len(arrays))()
        for k, (a, (shape, dtype)) in enumerate(zip(arrays, specs)):
            if not isinstance(a, np.ndarray):
                raise KernelError(f"kernel {name} argument {k}: expected a numpy array, got {type(a).__name__}")
            if tuple(a.shape) != tuple(shape) or a.dtype != np.dtype(dtype):
                raise KernelError(f"kernel {name} argument {k}: expected {dtype}{list(shape)}, got "
                                  f"{a.dtype}{list(a.shape)}")
            if not a.flags.c_contiguous:
                raise KernelError(f"kernel {name} argument {k}: the array is not C-contiguous; "
                                  "pass np.ascontiguousarray(x)")
            ptrs[k] = a.ctypes.data
        rc = fn(ptrs)
        if rc != 0:
            raise KernelError(f"kernel {name} returned error code {rc}")


def _read_spec(engine, name):
    """The kernel's own record of its arguments, compiled into the object beside its code: what
    the code reads and writes, whatever a header says about the buffers."""
    addr = engine.get_global_value_address(f"{name}__argspec")
    if not addr:
        raise KernelError(f"kernel {name} has no embedded argument spec; pass the specs explicitly")
    raw = ctypes.string_at(addr)
    try:
        specs = [(tuple(int(d) for d in shape), str(np.dtype(dtype))) for shape, dtype in json.loads(raw.decode())]
    except (ValueError, TypeError) as exc:
        raise KernelError(f"kernel {name}: its embedded argument spec {raw[:80]!r} is malformed ({exc})") from None
    if any(d < 0 for shape, _ in specs for d in shape):
        raise KernelError(f"kernel {name}: its embedded argument spec has a negative dimension")
    return specs


def load(object_code: bytes, names) -> KernelLibrary:
    """JIT-link an ELF object for this machine. `names`: kernel names (specs read from the
    object) or a dict name -> [(shape, dtype), ...]."""
    llvm = _init()
    if object_code[:4] != b"\x7fELF":
        raise KernelError("object code is not an ELF file")
    target = llvm.Target.from_default_triple()
    tm = target.create_target_machine(reloc="pic", codemodel="small")
    from . import thread_pool
    thread_pool.ensure_loaded()   # kernels with parallel loops call vdla_parallel_for
    backing = llvm.parse_assembly("")
    engine = llvm.create_mcjit_compiler(backing, tm)
    engine.add_object_file(llvm.ObjectFileRef.from_data(bytes(object_code)))
    engine.finalize_object()
    kernels = {}
    items = names.items() if isinstance(names, dict) else [(n, None) for n in names]
    for name, specs in items:
        addr = engine.get_function_address(name)
        if not addr:
            raise KernelError(f"the object does not export a kernel named {name!r}")
        if specs is None:
            specs = _read_spec(engine, name)
        specs = [(tuple(s), str(d)) for s, d in specs]
        threads = engine.get_global_value_address(f"{name}__num_threads")
        kernels[name] = (_KERNEL_T(addr), specs, threads)
    return KernelLibrary(engine, kernels)
