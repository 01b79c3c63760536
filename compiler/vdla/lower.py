"""Graph -> VDLA kernels: every accelerator node of a quantized graph (quantize_vdla) is
compiled into a KernelProgram by its op's record (registry). Nodes with the same operator, shapes and
epilogue share one program (ResNet repeats its blocks).

Each kernel is compiled with its default schedule and with the same tiles on one virtual
thread; both are timed on the cycle-exact simulator (timing does not depend on the data)
and the faster one is kept: latency hiding costs a little per tile (a second set of
micro-op kernels, shorter DMA rows), which small layers do not earn back. With a tuning log
(vdla tune), conv and dense kernels with a record for the hardware take the record's knobs."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from vdla.hw.errors import CompileError

from ..graph.ir import Graph
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


def default_knobs(config, spec: KernelSpec, vta_compat: bool = False):
    """The default schedule's knobs for `spec` on `config`."""
    return OPS[spec.op].default_knobs(config, spec, vta_compat)


def default_variants(knobs) -> list:
    """The schedules the default choice is made between: the default knobs and, with several
    virtual threads, the same tiles on one thread; the first wins a tie."""
    return [knobs, replace(knobs, vthreads=1)] if knobs.vthreads > 1 else [knobs]


def lower_vdla(graph: Graph, config, log=None, vta_compat: bool = False, tuning=None) -> tuple[dict, list, list]:
    """-> ({node name: {"program": index, "args": tensor names}}, [program documents], [the same
    programs with one virtual thread and the same tiles: what latency hiding buys, for profiles]).
    vta_compat: kernels in the compiler's VTA mode (topi.vdla.vta_mode).
    tuning: a tuning log (vdla.compiler.tune.TuningLog); a kernel with a record for this
    hardware takes the record's knobs as they are (they were measured against both of the
    default's variants); graph.meta["vdla_tuning"] counts the kernels that did and did not."""
    steps, programs, single, index = {}, [], [], {}
    failed, unfit = {}, {}         # kernel key -> why it does not fit; node -> why
    usage = {"tuned": 0, "default": 0, "tunable": 0}
    for node in graph.nodes:
        op = op_named(node.op)
        if op is None:
            continue
        a = node.attrs
        key = json.dumps([node.op, a.get("layer"), a["epilogue"], a.get("ma"), a.get("mb"),
                          [graph.types[n].shape for n in node.inputs]], sort_keys=True, default=list)
        if key in failed:
            unfit[node.name] = failed[key]
            continue
        if key not in index:
            spec = kernel_spec(graph, node)
            name = f"v{len(programs)}_{op.stem}"
            record = tuning.lookup(config, spec, vta_compat) if tuning is not None else None
            if record is not None:
                prog, knobs = _compile_recorded(config, spec, record, name, vta_compat, node)
                one = compile_kernel(config, spec, replace(knobs, vthreads=1), name, vta_compat)[0] \
                    if knobs.vthreads > 1 else prog
            else:
                try:
                    prog, one = _default_programs(config, spec, name, vta_compat)
                except KernelDoesNotFit as why:
                    failed[key] = unfit[node.name] = why.reason
                    continue
            if op.tuning is not None:
                usage["tunable"] += 1
                usage["tuned" if record is not None else "default"] += 1
            index[key] = len(programs)
            programs.append(prog.to_dict())
            single.append(one.to_dict())
            if log:
                log(f"compiled {prog.name} for {node.name}" + (" (tuned)" if record is not None else ""))
        args = op.kernel_args(node, vta_compat)
        steps[node.name] = {"program": index[key], "args": args + list(node.outputs)}
    if unfit:
        raise KernelsDoNotFit(unfit)
    if tuning is not None:
        graph.meta["vdla_tuning"] = usage
    return steps, programs, single


class KernelDoesNotFit(CompileError, ValueError):
    """No default schedule of a kernel compiles and runs on this hardware config (a token queue
    of depth 1, an accumulator hazard distance the micro-op order cannot keep)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class KernelsDoNotFit(CompileError, ValueError):
    """The accelerator nodes whose kernels do not fit: {node: reason}; the compile puts them on
    the CPU with their reasons and lowers again."""

    def __init__(self, nodes: dict[str, str]):
        super().__init__("; ".join(f"node {n!r}: {why}" for n, why in nodes.items()))
        self.nodes = nodes


def _default_programs(config, spec: KernelSpec, name: str, vta_compat: bool):
    """(the program to run, its one-virtual-thread variant): the default schedule and that
    variant, the faster of the two; one that does not lower or run on this config gives way to
    the other; neither: KernelDoesNotFit."""
    from vdla.simulator.errors import SimulatorError

    from ..codegen.vdla.errors import VdlaLoweringError
    failures = (VdlaLoweringError, SimulatorError)
    variants = default_variants(default_knobs(config, spec, vta_compat))
    programs = []
    for variant in variants:
        try:
            program = compile_kernel(config, spec, variant, name, vta_compat)[0]
            # (one variant: nothing to choose between, no simulation; several: the faster)
            programs.append((_cycles(config, program) if len(variants) > 1 else 0, program))
        except failures as exc:
            why = exc
    if not programs:
        raise KernelDoesNotFit(f"no schedule of this layer runs on this hardware config ({why})")
    fastest = min(programs, key=lambda p: p[0])[1]
    return fastest, programs[-1][1]


def _compile_recorded(config, spec: KernelSpec, record, name: str, vta_compat: bool, node):
    try:
        return compile_kernel(config, spec, record.knobs, name, vta_compat)
    except ValueError as exc:
        raise ValueError(f"{node.name}: the tuning record's schedule {record.knobs} does not compile: {exc}") from None


def _cycles(config, program) -> int:
    from vdla.driver.devices import SimulatorDevice
    from vdla.driver.runtime import run_program
    device = SimulatorDevice(config, dram_bytes=dram_for(program))
    inputs = [np.zeros(p.nbytes, np.uint8) for p in program.params[:-1]]
    return run_program(device, program, inputs)[1].cycles


def dram_for(program) -> int:
    """Simulated DRAM bytes enough for the program's buffers and its instruction stream."""
    need = sum(p.nbytes + 4096 for p in program.params) + (8 << 20)
    return 1 << max(need - 1, 1).bit_length()
