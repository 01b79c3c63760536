"""Graph -> VDLA kernels: every accelerator node of a quantized graph (quantize_vdla) is
compiled into a KernelProgram by its op's record (registry). Nodes with the same operator, shapes and
epilogue instructions share one program (ResNet repeats its blocks; the requantizer's constants
are data).

Each kernel is compiled with its default choices (its op's schedules of the lowest estimated
cycles: a conv offers a close runner-up with other tiles too) and each also with the same
tiles on one virtual thread; all are timed on the cycle-exact simulator (timing does not
depend on the data) and the fastest is kept: the estimate ranks close schedules less well
than the simulator, and latency hiding costs a little per tile (a second set of micro-op
kernels, shorter DMA rows), which small layers do not earn back. With a tuning log (vdla
tune), conv and dense kernels with a record for the hardware take the record's knobs."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np

from vdla.hw.errors import CompileError

from ..graph.ir import Graph
from ..process_pool import SpawnedPool
from ..topi.vdla import instruction_epilogue
from .op import KernelSpec
from .registry import OPS, op_named

NO_TILING = "no VDLA tiling fits"            # how the placement reason of an untileable node begins


def kernel_spec(graph: Graph, node) -> KernelSpec:
    return OPS[node.op].spec(graph, node)


def compile_kernel(config, spec: KernelSpec, knobs=None, name: str = "kernel", vta_compat: bool = False):
    """-> (KernelProgram, knobs): `spec` compiled with `knobs` (None: the default schedule)."""
    return OPS[spec.op].compile(config, spec, knobs, name, vta_compat)


def tiling_problem(config, spec: KernelSpec, vta_compat: bool = False) -> str | None:
    """None when `spec` has a default schedule on `config`, else why no tiling fits (the
    constraint: an SRAM too small for the smallest tile, the accumulator hazard rule, ...)."""
    return OPS[spec.op].tiling_problem(config, spec, vta_compat)


def untileable_kernels(graph: Graph, config, vta_compat: bool = False) -> dict[str, str]:
    """{node name: placement reason} of the accelerator nodes of a quantized graph that no
    schedule fits on `config`: placement puts them on the CPU before lowering, instead of
    the compile failing (small SRAMs in a design-space sweep, a one-pixel one-block conv)."""
    found, seen = {}, {}
    for node in graph.nodes:
        if op_named(node.op) is None:
            continue
        spec = kernel_spec(graph, node)
        key = repr(spec)
        if key not in seen:
            seen[key] = tiling_problem(config, spec, vta_compat)
        if seen[key] is not None:
            found[node.name] = f"{NO_TILING} {config.name}: {seen[key]}"
    return found


def default_choices(config, spec: KernelSpec, vta_compat: bool = False) -> list:
    """The schedules the default for `spec` on `config` is chosen from, the lowest estimate
    first (VdlaOp.default_choices)."""
    return OPS[spec.op].default_choices(config, spec, vta_compat)


def one_thread(knobs):
    """The same tiles on one virtual thread."""
    return replace(knobs, vthreads=1)


def default_variants(choices: list) -> list:
    """The schedules the default is measured among: each choice and, with several virtual
    threads, its one-thread twin, in that order and without repeats; the first wins a tie."""
    variants = []
    for knobs in choices:
        for k in (knobs, one_thread(knobs)) if knobs.vthreads > 1 else (knobs,):
            if k not in variants:
                variants.append(k)
    return variants


@dataclass
class CompiledKernel:
    program: object          # the KernelProgram to run
    single: object           # the same tiles on one virtual thread (what latency hiding buys, for profiles)
    tuned: bool              # its schedule is a tuning record's


class Kernels:
    """The compiled kernels of a quantized graph's accelerator nodes, one per distinct kernel
    (nodes with the same operator, shapes and epilogue instructions share one: ResNet repeats its blocks),
    compiled when first asked for. Placement asks which kernels do not compile and run on the
    hardware (`unfit`) before it settles; lowering then takes the same compiled programs, so
    each kernel is compiled once and lowering never sends a node back.

    A kernel with a record in `tuning` (a vdla.compiler.tune.TuningLog) for this hardware takes
    the record's knobs as they are (they were measured against all of the default's
    variants); the others take the fastest of default_variants, compiled and timed on `jobs`
    spawned processes side by side when jobs > 1 (the same programs); `progress`: a bar of
    them (process_pool.SpawnedPool's)."""

    def __init__(self, config, vta_compat: bool = False, tuning=None, jobs: int = 1, progress: bool | None = False):
        self.config, self.vta_compat, self.tuning = config, vta_compat, tuning
        self.jobs, self.progress = jobs, progress
        self._compiled: dict[str, CompiledKernel] = {}
        self._failed: dict[str, str] = {}          # kernel key -> why it does not fit

    @staticmethod
    def key(graph: Graph, node) -> str:
        """Equal for nodes whose kernels are one instruction stream: the requantizer's constants
        are each node's data (ViT's twelve blocks share each of their layers' programs)."""
        a = node.attrs
        return json.dumps([node.op, a.get("layer"), instruction_epilogue(a["epilogue"]), a.get("ma"), a.get("mb"),
                           [graph.types[n].shape for n in node.inputs]], sort_keys=True, default=list)

    def compiled(self, graph: Graph, node) -> CompiledKernel | None:
        """The kernel of accelerator node `node`, or None when none fits (`reason` says why)."""
        key = self.key(graph, node)
        if key in self._compiled or key in self._failed:
            return self._compiled.get(key)
        config, vta = self.config, self.vta_compat
        spec = kernel_spec(graph, node)
        name = OPS[node.op].stem          # lower_vdla names each program by its place in the artifact
        record = self.tuning.lookup(config, spec, vta) if self.tuning is not None else None
        if record is not None:
            prog, knobs = _compile_recorded(config, spec, record, name, vta, node)
            one = compile_kernel(config, spec, replace(knobs, vthreads=1), name, vta)[0] if knobs.vthreads > 1 else prog
        else:
            try:
                prog, one = _default_programs(config, spec, name, vta)
            except KernelDoesNotFit as why:
                self._failed[key] = why.reason
                return None
        self._compiled[key] = CompiledKernel(prog, one, record is not None)
        return self._compiled[key]

    def _compile_defaults(self, graph: Graph) -> None:
        """The default programs of the kernels not compiled yet (and without a tuning record),
        side by side on `jobs` spawned processes where jobs > 1, with a progress bar if asked;
        `compiled` then finds them."""
        todo = {}
        for node in graph.nodes:
            if op_named(node.op) is None:
                continue
            key = self.key(graph, node)
            if key in self._compiled or key in self._failed or key in todo:
                continue
            spec = kernel_spec(graph, node)
            if self.tuning is None or self.tuning.lookup(self.config, spec, self.vta_compat) is None:
                todo[key] = (self.config, spec, OPS[node.op].stem, self.vta_compat)
        with SpawnedPool(max(1, min(self.jobs, len(todo))), self.progress) as pool:
            for key, result in zip(todo, pool.map(_default_or_reason, list(todo.values()), "accelerator kernels",
                                                  "kernel")):
                if isinstance(result, str):
                    self._failed[key] = result
                else:
                    self._compiled[key] = CompiledKernel(*result, tuned=False)

    def reason(self, graph: Graph, node) -> str:
        return self._failed[self.key(graph, node)]

    def unfit(self, graph: Graph) -> dict[str, str]:
        """{node name: why} of the accelerator nodes whose kernel does not compile and run on
        this hardware config (a token queue of depth 1, an accumulator hazard distance the
        micro-op order cannot keep): placement puts them on the CPU."""
        self._compile_defaults(graph)
        return {node.name: self.reason(graph, node) for node in graph.nodes
                if op_named(node.op) is not None and self.compiled(graph, node) is None}


def lower_vdla(graph: Graph, config, log=None, vta_compat: bool = False, tuning=None,
               kernels: Kernels | None = None) -> tuple[dict, list, list]:
    """-> ({node name: {"program": index, "args": tensor names}}, [program documents], [the same
    programs with one virtual thread and the same tiles: what latency hiding buys, for profiles]).
    vta_compat: kernels in the compiler's VTA mode (topi.vdla.vta_mode). kernels: the Kernels
    placement settled with (None: compiled here, for `tuning`, see Kernels); a node whose kernel
    does not fit is a KernelsDoNotFit, which a settled placement never leaves.
    graph.meta["vdla_tuning"] counts the kernels with and without a tuning record."""
    kernels = kernels if kernels is not None else Kernels(config, vta_compat, tuning)
    steps, programs, single, index, unfit = {}, [], [], {}, {}
    usage = {"tuned": 0, "default": 0, "tunable": 0}
    for node in graph.nodes:
        op = op_named(node.op)
        if op is None:
            continue
        kernel = kernels.compiled(graph, node)
        if kernel is None:
            unfit[node.name] = kernels.reason(graph, node)
            continue
        key = kernels.key(graph, node)
        if key not in index:
            name = f"v{len(programs)}_{op.stem}"
            if op.tuning is not None:
                usage["tunable"] += 1
                usage["tuned" if kernel.tuned else "default"] += 1
            index[key] = len(programs)
            programs.append(replace(kernel.program, name=name).to_dict())
            single.append(replace(kernel.single, name=name).to_dict())
            if log:
                log(f"compiled {name} for {node.name}" + (" (tuned)" if kernel.tuned else ""))
        steps[node.name] = {"program": index[key], "args": op.kernel_args(node, vta_compat) + list(node.outputs)}
    if unfit:
        raise KernelsDoNotFit(unfit)
    if kernels.tuning is not None:
        graph.meta["vdla_tuning"] = usage
    return steps, programs, single


class KernelDoesNotFit(CompileError, ValueError):
    """No default schedule of a kernel compiles and runs on this hardware config (a token queue
    of depth 1, an accumulator hazard distance the micro-op order cannot keep)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class KernelsDoNotFit(CompileError, ValueError):
    """Accelerator nodes whose kernels do not fit, {node: reason}, left in a graph lowered
    without settling its placement on them (Kernels.unfit)."""

    def __init__(self, nodes: dict[str, str]):
        super().__init__("; ".join(f"node {n!r}: {why}" for n, why in nodes.items()))
        self.nodes = nodes


def _default_programs(config, spec: KernelSpec, name: str, vta_compat: bool):
    """(the program to run, the one-virtual-thread variant of the default choice): the
    fastest of default_variants on the simulator; one that does not lower or run on this config
    gives way to the others; none: KernelDoesNotFit."""
    from vdla.simulator.errors import SimulatorError

    from ..codegen.vdla.errors import VdlaLoweringError
    failures = (VdlaLoweringError, SimulatorError)
    variants = default_variants(default_choices(config, spec, vta_compat))
    programs = {}           # knobs -> (cycles, program), in the order of variants
    for variant in variants:
        try:
            program = compile_kernel(config, spec, variant, name, vta_compat)[0]
            # (one variant: nothing to choose between, no simulation; several: the fastest)
            programs[variant] = (_cycles(config, program) if len(variants) > 1 else 0, program)
        except failures as exc:
            why = exc
    if not programs:
        raise KernelDoesNotFit(f"no schedule of this layer runs on this hardware config ({why})")
    fastest = min(programs, key=lambda k: programs[k][0])       # the first of equals
    twin = programs.get(one_thread(fastest), programs[fastest])
    return programs[fastest][1], twin[1]


def _default_or_reason(job: tuple):
    """_default_programs(*job), or why the kernel does not fit (in a worker process)."""
    try:
        return _default_programs(*job)
    except KernelDoesNotFit as why:
        return why.reason


def _compile_recorded(config, spec: KernelSpec, record, name: str, vta_compat: bool, node):
    try:
        return compile_kernel(config, spec, record.knobs, name, vta_compat)
    except ValueError as exc:
        raise ValueError(f"{node.name}: the tuning record's schedule {record.knobs} does not compile: {exc}") from None


def _cycles(config, program) -> int:
    """The program's cycles on the simulator, which checks it as a run would (a stream that
    breaks a rule raises) but computes no results: cycles do not depend on the data."""
    from vdla.driver.devices import SimulatorDevice
    from vdla.driver.runtime import run_program
    device = SimulatorDevice(config, dram_bytes=dram_for(program), compute=False)
    inputs = [np.zeros(p.nbytes, np.uint8) for p in program.params[:-1]]
    return run_program(device, program, inputs)[1].cycles


def dram_for(program) -> int:
    """Simulated DRAM bytes enough for the program's buffers and its instruction stream."""
    need = sum(p.nbytes + 4096 for p in program.params) + (8 << 20)
    return 1 << max(need - 1, 1).bit_length()
