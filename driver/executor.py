"""Graph executor: runs an artifact's plan on the CPU.

All activations live in one arena allocated once at the planned size; each tensor is a view at
its planned offset (reshape-like ops are views of their input's bytes and cost nothing), but for
tensors of run-time shape (plan.dynamic: NonZero's output, a Loop's), which are whatever the
host step that makes them returns, checked against the dims the plan knows. Each
step (a typed record of vdla.driver.plan, dispatched on its class) is a compiled kernel called
with pointers into the arena and the parameters, or a host step (numpy, vdla.driver.host_ops)
for ops without a kernel. Needs numpy, and llvmlite only
when the artifact has kernels; never the compiler.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from vdla.hw.errors import RunError

from . import host_ops, kernel_abi, machine
from .arena_crossings import arena_crossings
from .artifact import Artifact, ArtifactError, load
from .artifact_header import check_contents
from .param_layout import parameter_buffers
from .plan import AliasStep, GpuStep, HostStep, KernelStep, PartsStep, Plan, ValueSpec, VdlaStep


class StepError(RunError, RuntimeError):
    """A step of the plan failed while running; the message names the step and its op."""


@dataclass
class StepTiming:
    name: str
    op: str
    kind: str
    seconds: float


def host_triple() -> str:
    return machine.host_triple()


def check_hardware(artifact: Artifact, config, what: str = "the runtime") -> None:
    """Raise ArtifactError unless the artifact was compiled for hardware config `config`."""
    want = artifact.header.get("hardware")
    if not want or want.get("hash") != config.hash:
        shown = f"{want.get('name')} ({want.get('hash')})" if want else "no hardware config"
        raise ArtifactError(f"hardware config mismatch: the artifact was compiled for {shown}, {what} "
                            f"has {config.name} ({config.hash}); recompile with --hw-config for this hardware")


def check_compatible(artifact: Artifact, hw_config=None, on: str | None = None, plan: Plan | None = None) -> str | None:
    """Raise ArtifactError unless this machine (or the machine of triple `on`), and `hw_config`
    if given, can run the artifact; returns the artifact's triple whose kernels will be used
    (None if there are none). Triples match by architecture family, OS and environment
    (machine.key): `aarch64-linux-gnu` kernels run where llvmlite says aarch64-unknown-linux-gnu.
    `plan`: the artifact's, when the caller has read it already."""
    header = artifact.header
    if hw_config is not None:
        check_hardware(artifact, hw_config)
    if not any(isinstance(s, KernelStep) for s in (plan or artifact.plan).steps):
        return None
    here = on or host_triple()
    compiled = list(header.get("kernels", {}))
    matching = [t for t in compiled if machine.same_machine(t, here)]
    if not matching:
        raise ArtifactError(f"target mismatch: the artifact has kernels for "
                            f"{', '.join(sorted(compiled)) or 'no target'}, "
                            f"{'this machine' if on is None else 'the kernel host'} is {here}; recompile "
                            f"with --target for this machine")
    if on is None:
        missing = machine.missing_features(header.get("target", {}).get("features", []))
        if missing:
            raise ArtifactError(f"target mismatch: the kernels use CPU features this machine lacks "
                                f"({', '.join(missing)}); recompile on or for this machine")
    return matching[0]


class Executor:
    """Runs an artifact: CPU kernels and host steps here, accelerator ("vdla") steps on
    `device` (default: the cycle-exact simulator of the artifact's hardware config; "rtl",
    "pynq" or a Device object; "numpy" runs them as their host ops, the reference
    interpretation of the quantized graph that the accelerator must equal bit for bit).
    GPU steps (--target cuda) run on `device` too: by default the CUDA GPU (gpu_steps.py).

    CPU kernels run in this process unless `kernel_host` runs them elsewhere: an object with
    `triple` (the machine it is) and `load(artifact, triple)` returning a
    cpu_kernel.KernelLibrary whose functions take the kernel ABI's pointer array (the tests
    run a board's kernels that way under qemu-user)."""

    def __init__(self, artifact: Artifact | str | os.PathLike, hw_config=None,
                 threads: int | None = None, device=None, virtual_threads: int = 2, kernel_host=None):
        if not isinstance(artifact, Artifact):
            artifact = load(artifact)   # integrity, the environment's trust policy, header checks
        # An Artifact made in memory (or edited there) gets the same checks of what binding reads.
        self.plan = plan = check_contents(artifact.header, artifact.param_types(), artifact.objects)
        self.artifact = artifact
        self.device = None
        self.runner = None
        self.last_launches: dict[str, object] = {}
        self.vdla_on_host = device == "numpy"
        # the accelerator programs as compiled, or their one-virtual-thread variants (profiles)
        self.programs_key = "vdla_programs" if virtual_threads > 1 else "vdla_programs_1vt"
        if any(isinstance(s, VdlaStep) for s in plan.steps) and not self.vdla_on_host:
            self.device = self._open_device(artifact, device)
            check_hardware(artifact, self.device.config, what=f"the device {self.device!r}")
        elif device is not None and not isinstance(device, str) and artifact.header.get("hardware"):
            check_hardware(artifact, device.config, what=f"the device {device!r}")   # given, if unused
        triple = check_compatible(artifact, hw_config, on=kernel_host.triple if kernel_host else None, plan=plan)
        self.kernels = self._load_kernels(artifact, triple, threads, kernel_host)
        # woken at the start of a run, the pools' workers spin by its first parallel loop
        rousers = (lib.pool_rouser() for lib, _, _ in self.kernels.values() if hasattr(lib, "pool_rouser"))
        self._rousers = list({id(r): r for r in rousers if r is not None}.values())
        # One allocation for every activation, aligned as kernels want their buffers.
        try:
            raw = np.empty(plan.arena_bytes + kernel_abi.BUFFER_ALIGN, dtype=np.uint8)
        except MemoryError:
            raise ArtifactError(f"the plan's arena of {plan.arena_bytes} bytes cannot be allocated "
                                "on this machine") from None
        skip = (-raw.ctypes.data) % kernel_abi.BUFFER_ALIGN
        self.arena = raw[skip:skip + plan.arena_bytes]
        # parameters where the kernels want them: aligned, in one allocation (param_layout.py)
        self.buffers: dict[str, np.ndarray] = parameter_buffers(artifact.params)
        for name, t in plan.tensors.items():
            view = self.arena[t.offset:t.offset + t.nbytes].view(t.dtype)
            self.buffers[name] = view.reshape(t.shape)
        self.gpu = None
        if any(isinstance(s, GpuStep) for s in plan.steps):   # on `device`, by default the CUDA GPU
            from .gpu_steps import GpuSteps
            self.gpu = GpuSteps(artifact, device, plan)
        self.steps = [self._bind(step) for step in plan.steps]
        self._check_listed_specs(triple)
        self.last_timings: list[StepTiming] = []

    @staticmethod
    def _open_device(artifact: Artifact, device):
        """The accelerator for the artifact's vdla steps. The simulator and the RTL are built for
        whatever config they are given, the artifact's; a board has the config of its bitstream."""
        if device is not None and not isinstance(device, str):
            return device
        from .devices import DEFAULT_DEVICE, device_kind, open_device_for
        kind = device_kind(device or DEFAULT_DEVICE)
        hardware = artifact.header.get("hardware") or {}
        if "config" not in hardware and not kind.has_own_config:
            raise ArtifactError("the artifact has accelerator steps but records no hardware config; recompile it")
        return open_device_for(kind.name, hardware.get("config"))

    def _device_arena(self):
        """The accelerator's copy of the activation arena: one device buffer laid out by the
        memory plan (same offsets), so a tensor that one accelerator step writes and the next
        reads never leaves device DRAM; which tensors cross is fixed here once (arena_crossings).
        A vdla step reads all its buffers but the last, which it writes."""
        plan = self.plan
        if getattr(self, "_arena_buf", None) is None:
            self._arena_buf = self.device.alloc(max(plan.arena_bytes, 64), align=256)
            self._crossings = arena_crossings(plan, VdlaStep, lambda st: (st.args[:-1], st.args[-1:]))
        return self._arena_buf

    def _vdla_call(self, step: VdlaStep):
        """Parameters get device buffers of their own, written once; activations are views of
        the device arena (see _device_arena). Per run: copy in what the host made, replay the
        program (its stream is assembled on the first run only), copy out what the host reads."""
        from .device import DeviceBuffer
        from .runtime import KernelProgram, ProgramRunner
        if self.runner is None:
            self.runner = ProgramRunner(self.device)
        arena = self._device_arena()
        tensors = self.plan.tensors
        if self.programs_key not in self.artifact.header:
            raise ArtifactError(f"step {step.name!r}: the artifact has no {self.programs_key}")
        doc = self.artifact.header[self.programs_key][step.program]
        program = KernelProgram.from_dict(doc)
        args = step.args
        if len(args) != len(program.params):
            raise ArtifactError(f"step {step.name!r}: program {program.name} takes {len(program.params)} "
                                f"buffers, the plan gives {len(args)}")
        device, buffers, params = self.device, self.buffers, self.artifact.params
        bufs, copy_in, copy_out = [], [], []
        for k, (name, p) in enumerate(zip(args, program.params)):
            array = buffers[name]
            if array.nbytes != p.nbytes:
                raise ArtifactError(f"step {step.name!r}: {name} has {array.nbytes} bytes, program "
                                    f"{program.name} expects {p.name} of {p.nbytes}")
            if name in params:
                buf = device.alloc(p.nbytes, align=max(64, p.elem_bytes))
                device.write(buf, np.ascontiguousarray(array))
            else:
                offset = tensors[name].offset
                if (arena.addr + offset) % p.elem_bytes:
                    raise ArtifactError(f"step {step.name!r}: {name} at arena offset {offset} is not aligned "
                                        f"to its {p.elem_bytes}-byte DMA element")
                buf = DeviceBuffer(arena.addr + offset, p.nbytes)
                writes = k == len(args) - 1
                crossing = self._crossings.to_host if writes else self._crossings.to_device
                for source in self._crossings.sources(name):     # a whole: each part made on the other side
                    if source in crossing:
                        (copy_out if writes else copy_in).append((buffers[source], tensors[source].offset))
            bufs.append(buf)
        runner, launches, step_name = self.runner, self.last_launches, step.name

        def call():
            for array, offset in copy_in:
                device.write(arena, np.ascontiguousarray(array), offset)
            launches[step_name] = runner.run(program, bufs)
            for array, offset in copy_out:
                np.copyto(array, device.read(arena, array.dtype, array.shape, offset))
        return call

    @staticmethod
    def _load_kernels(artifact: Artifact, triple: str | None, threads: int | None, kernel_host=None) -> dict:
        """kernel name -> (KernelLibrary holding it, ctypes function, arg specs). The buffers are
        checked against the spec compiled into the code, never the header's copy, which must
        agree with it."""
        if triple is None:
            return {}
        from . import cpu_kernel
        names = artifact.header["kernels"][triple]["names"]
        shared = artifact.objects.get(kernel_abi.shared_object_key(triple))
        if kernel_host is not None:
            libraries = [kernel_host.load(artifact, triple)]
        elif shared is not None:    # linked at compile time: ctypes, no llvmlite
            try:
                libraries = [cpu_kernel.load_shared(shared, names, f"the artifact's linked kernels for {triple}")]
            except cpu_kernel.CpuKernelError as exc:
                raise ArtifactError(str(exc)) from None
        else:
            _need_llvmlite(triple)
            libraries = [cpu_kernel.load(artifact.objects[kernel_abi.kernel_object_key(triple, name)], [name])
                         for name in names]
        kernels = {}
        for library in libraries:
            if threads is not None:
                library.set_num_threads(threads)
            for name, (fn, specs, _) in library.kernels.items():
                kernels[name] = (library, fn, specs)
        return kernels

    def _check_listed_specs(self, triple: str | None) -> None:
        """The header's copy of each kernel's argument list must be the object's (after binding,
        whose errors name the buffers)."""
        index = self.artifact.header["kernels"][triple] if triple else {"arg_specs": {}}
        for name, (_, _, specs) in self.kernels.items():
            listed = [(tuple(s), d) for s, d in index["arg_specs"][name]]
            if listed != specs:
                raise ArtifactError(f"kernel {name}: the header lists its arguments as {_specs_text(listed)}, "
                                    f"its object code takes {_specs_text(specs)}: the header was edited")

    def _kernel_call(self, step: KernelStep):
        """Check the buffers against the kernel's specs once, then call with a prebuilt
        pointer array (the buffers never move: they are arena views and parameters)."""
        import ctypes
        name = step.kernel
        if name not in self.kernels:
            raise ArtifactError(f"step {step.name!r} calls kernel {name!r}, which the artifact's kernels "
                                f"for this machine do not include ({', '.join(sorted(self.kernels)) or 'none'})")
        _, fn, specs = self.kernels[name]
        arrays = [self.buffers[n] for n in step.args]
        if len(arrays) != len(specs):
            raise ArtifactError(f"step {step.name!r}: kernel {name} takes {len(specs)} buffers, "
                                f"the plan gives {len(arrays)}")
        pointers = (ctypes.c_void_p * len(arrays))()
        for k, (array, (shape, dtype)) in enumerate(zip(arrays, specs)):
            if tuple(array.shape) != tuple(shape) or array.dtype != np.dtype(dtype) \
                    or not array.flags.c_contiguous:
                raise ArtifactError(f"step {step.name!r}: kernel {name} argument {k} is buffer "
                                    f"{step.args[k]!r}, {array.dtype}{list(array.shape)}; the kernel's code "
                                    f"reads or writes {dtype}{list(shape)} (contiguous)")
            pointers[k] = array.ctypes.data
        return _KernelCall(step.name, name, fn, pointers, arrays)

    def _bind(self, step):
        """(step, the call that runs it; None for an alias, which is a view already)."""
        match step:
            case AliasStep() | PartsStep():
                return step, None
            case KernelStep() if step.op in host_ops.vdla.FINITE_INPUT:
                return step, _FiniteFirst(self._kernel_call(step), self.buffers[step.args[0]], step.op)
            case KernelStep():
                return step, self._kernel_call(step)
            case GpuStep():
                return step, self.gpu.bind(step, self.buffers)
            case VdlaStep() if not self.vdla_on_host:
                return step, self._vdla_call(step)
            case HostStep() | VdlaStep():     # on the "numpy" device, an accelerator step is its host op
                return step, self._host_call(step)
        raise ArtifactError(f"step {step.name!r}: unknown step {type(step).__name__}")

    def _host_call(self, step: HostStep | VdlaStep):
        body = step.body
        inputs = sorted({n for node in body for n in node["inputs"] if n})
        outputs = step.outputs
        buffers, dynamic = self.buffers, self.plan.dynamic

        def run_host():
            values = {n: buffers[n] for n in inputs if n in buffers}
            try:
                host_ops.run_fused(body, values)
                for name in outputs:
                    if name in dynamic:
                        buffers[name] = _runtime_shaped(name, values[name], dynamic[name], self.arena)
                    else:
                        np.copyto(buffers[name], values[name], casting="unsafe")
            except Exception as exc:   # numpy's own errors, named by the step they come from
                raise StepError(f"step {step.name!r} ({step.op}, on the host) failed: "
                                f"{type(exc).__name__}: {exc}") from exc
        return run_host

    def run(self, inputs: dict[str, np.ndarray] | None = None, profile: bool = False) -> dict:
        plan = self.plan
        for rouse in self._rousers:
            rouse()
        inputs = inputs or {}
        dynamic = plan.dynamic
        for spec in plan.inputs:
            name = spec.name
            if name not in inputs and spec.kind != "optional":
                raise ValueError(f"missing input {name!r} ({spec.dtype}{list(spec.shape)})")
            if name in dynamic:      # a sequence or an optional
                try:
                    self.buffers[name] = _runtime_shaped(name, inputs.get(name), dynamic[name], self.arena)
                except (TypeError, ValueError) as exc:
                    raise ValueError(f"input {name!r}: {exc}") from None
                continue
            value = np.asarray(inputs[name])
            if value.shape != spec.shape or value.dtype.name != spec.dtype:
                raise ValueError(f"input {name!r}: expected {spec.dtype}{list(spec.shape)}, got "
                                 f"{value.dtype.name}{list(value.shape)}")
            np.copyto(self.buffers[name], value)
        extra = set(inputs) - {s.name for s in plan.inputs}
        if extra:
            raise ValueError(f"unknown inputs {sorted(extra)}; the model's inputs are "
                             f"{[s.name for s in plan.inputs]}")
        if profile:
            timings = []
            for step, call in self.steps:
                start = time.perf_counter()
                if call is not None:
                    call()
                timings.append(StepTiming(step.name, step.op, step.kind, time.perf_counter() - start))
            self.last_timings = timings
        else:
            for _, call in self.steps:
                if call is not None:
                    call()
        return {s.name: _copy_out(self.buffers[s.name]) for s in plan.outputs}


def _copy_out(value):
    """An output as the caller keeps it: a copy (the arena is reused by the next run); a sequence
    stays a list, an empty optional None."""
    if value is None:
        return None
    if isinstance(value, list):
        return [np.array(v) for v in value]
    return np.array(value)


def _runtime_shaped(name: str, value, spec: ValueSpec, arena: np.ndarray):
    """A host step's tensor of run-time shape, in the planned dtype, its known dims checked; a
    copy if it is a view of the arena (If's Identity branch), whose bytes later steps reuse. A
    sequence is a list of such tensors; an optional one of them or None."""
    kind = spec.kind
    if kind == "optional" and value is None:
        return None
    if kind == "sequence" or (kind == "optional" and isinstance(value, (list, tuple))):
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{name} is a sequence: expected a list of arrays, got {type(value).__name__}")
        return [np.asarray(v).astype(spec.dtype, copy=np.may_share_memory(v, arena)) for v in value]
    if isinstance(value, (list, tuple)) or value is None:
        raise TypeError(f"{name} is a tensor, got {'None' if value is None else 'a list'}")
    value = np.asarray(value)
    want = list(spec.shape)
    if value.size == 0 and want != [-1]:     # a loop that never ran: no values, the planned rank
        value = value.reshape([max(w, 0) for w in want]) if value.ndim != len(want) else value
    if want != [-1] and (value.ndim != len(want) or any(w >= 0 and w != d for w, d in zip(want, value.shape))):
        shown = ", ".join("?" if w < 0 else str(w) for w in want)
        raise ValueError(f"{name} came out with shape {list(value.shape)}; the plan says [{shown}]")
    return value.astype(spec.dtype, copy=np.may_share_memory(value, arena))


def _need_llvmlite(triple: str) -> None:
    try:
        import llvmlite  # noqa: F401
    except ImportError:
        raise ArtifactError(f"the artifact's kernels for {triple} are relocatable objects, which only llvmlite "
                            f"can load, and llvmlite is not installed here: compile it again with --link (the "
                            f"same target, its kernels linked into a shared object this runtime loads without "
                            f"llvmlite), or install llvmlite") from None


def _specs_text(specs) -> str:
    return ", ".join(f"{d}{list(s)}" for s, d in specs)


class _KernelCall:
    """One kernel step, bound: the pointers are built once (the buffers never move: they are
    arena views and parameters); `arrays` are what they point into."""

    def __init__(self, step: str, kernel: str, fn, pointers, arrays):
        self.step, self.kernel, self.fn, self.pointers, self.arrays = step, kernel, fn, pointers, arrays

    def __call__(self):
        rc = self.fn(self.pointers)
        if rc != 0:
            raise StepError(f"step {self.step!r}: kernel {self.kernel} returned error code {rc}")


class _FiniteFirst:
    """A kernel step of an op whose first input must be finite (VdlaSemantics.finite_input: a
    quantization for the accelerator), refused before the kernel runs as its host op would."""

    def __init__(self, call: _KernelCall, first: np.ndarray, op: str):
        self.call, self.first, self.op = call, first, op

    def __call__(self):
        try:
            host_ops.vdla.check_finite(self.first)
        except host_ops.HostOpError as exc:
            raise StepError(f"step {self.call.step!r} ({self.op}, a CPU kernel) refused its input: {exc}") from None
        self.call()
