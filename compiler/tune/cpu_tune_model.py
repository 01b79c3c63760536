"""vdla tune --target cpu: find a model's distinct CPU kernels whose schedules have knobs (as
compile would build them for this host), search each one's knobs measuring on this host, and
add the records to a tuning log. The accelerator's CPU fallback kernels are found the same
way in the graph a vdla compile leaves to the CPU (vdla_fallback_kernels)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..topi.cpu_knobs import RegisterFile, default_knobs
from .cpu_measure import HostTimer, probe_inputs, zeroed
from .cpu_search import CpuKernelSearch, run_cpu_searches
from .cpu_signature import cpu_signature, describe, signature_key
from .cpu_space import CpuKnobSpace
from .errors import TuningError, TuningOptionError
from .records import TuningLog
from .session import check_budget, open_log, split_reused


@dataclass
class CpuKernel:
    """One distinct CPU kernel with schedule knobs and the nodes that compile to it."""
    signature: dict
    name: str                    # cpu_signature.describe
    kind: str
    dims: dict
    tensors: list                # its arguments' tensor expressions, inputs then outputs
    outputs: list
    nodes: list[str] = field(default_factory=list)
    _inputs: dict = field(default_factory=dict, repr=False)

    def probe(self, seed: int) -> list:
        """Arrays for its arguments: seeded inputs (drawn once per seed: a kernel writes only its
        outputs) and zeroed outputs."""
        if seed not in self._inputs:
            self._inputs.clear()
            self._inputs[seed] = probe_inputs(self.tensors[:len(self.tensors) - len(self.outputs)], seed)
        return list(self._inputs[seed]) + zeroed(self.outputs)


@dataclass
class CpuKernelResult:
    kernel: CpuKernel
    record: object               # CpuTuningRecord, None if the default failed
    reused: bool                 # the log had a record: not searched again
    failed: list = field(default_factory=list)
    mismatched: list = field(default_factory=list)
    problem: str | None = None   # why there is no record


@dataclass
class CpuTuneSummary:
    results: list[CpuKernelResult]
    log: TuningLog
    seconds: float
    trials: int
    target: object


def tune_target(target: str = "cpu", threads: int | None = None):
    """The compiler.target.Target `vdla compile --target TARGET [--threads N]` builds CPU
    kernels for, if it is this host (its schedules are measured here); TuningError otherwise."""
    import llvmlite.binding as llvm

    from vdla.driver import machine

    from ..target import Target, check_target
    check_target(target)
    if target in ("cpu", "host"):
        return Target.host() if threads is None else Target.host(threads=threads)
    here = llvm.get_process_triple()
    if target == "vdla" or not machine.same_machine(target, here):
        raise TuningOptionError(f"--target {target}: CPU schedules are measured on the machine they run on, and this "
                          f"one is {here}; tune --target cpu (or this machine's triple), or run vdla tune on a "
                          f"{target} machine")
    return Target(target, threads=threads)


def graph_cpu_kernels(graph, skip=(), target=None) -> list[CpuKernel]:
    """The distinct CPU kernels with schedule knobs lower_graph would build for `graph`
    (nodes in `skip` run elsewhere) for `target` (None: this host, where tuning measures), in
    graph order."""
    from .. import lower_ops
    from ..target import Target
    from ..graph.passes.memory_plan import ALIAS_OPS
    from ..lower_graph import kernel_args
    from ..lower_ops import NotLowerable
    from ..topi.schedule_cpu import cpu_anchor
    rules = lower_ops.cpu_rules(target or Target.host())
    kernels: dict[str, CpuKernel] = {}
    for node in graph.nodes:
        if node.op in ALIAS_OPS or node.name in skip:
            continue
        try:
            tensors, outputs = lower_ops.group_to_te(graph, node, kernel_args(graph, node), rules)
        except NotLowerable:
            continue
        sig = cpu_signature(outputs)
        if sig is None:
            continue
        key = signature_key(sig)
        if key not in kernels:
            kind, dims = cpu_anchor(outputs)
            kernels[key] = CpuKernel(sig, describe(sig, outputs), kind, dims, tensors, outputs)
        kernels[key].nodes.append(node.name)
    return list(kernels.values())


def cpu_model_kernels(model, input_shapes=None) -> list[CpuKernel]:
    """The kernels of `model` compiled for a CPU target (compile_model's graph)."""
    from ..frontend import import_onnx
    from ..graph import optimize
    return graph_cpu_kernels(optimize(import_onnx(model, input_shapes=input_shapes)))


def vdla_fallback_kernels(model, hw_config=None, calibration=None, input_shapes=None,
                          vta_compat: bool = False, seed: int = 0) -> list[CpuKernel]:
    """The CPU kernels of `model` compiled for the accelerator of `hw_config`: the nodes
    compile_for_vdla leaves to the CPU of this host."""
    from vdla.hw import DEFAULT_PRESET, load_config

    from ..graph.passes.memory_plan import plan_memory
    from ..vdla import op_named, quantize_for_vdla
    from ..vdla.registry import is_edge
    from .tune_model import _needs_calibration, random_calibration
    config = load_config(DEFAULT_PRESET if hw_config is None else hw_config)
    if calibration is None and _needs_calibration(model, input_shapes):
        calibration = random_calibration(model, input_shapes, seed)
    graph, *_ = quantize_for_vdla(model, config, calibration, None, input_shapes, None, False, vta_compat)
    graph = plan_memory(graph)
    skip = {n.name for n in graph.nodes if op_named(n.op) is not None or is_edge(n.op)}
    return graph_cpu_kernels(graph, skip)


def tune_cpu_kernels(kernels: list[CpuKernel], target, trials: int = 32, jobs: int | None = None, output=None,
                     seed: int = 0, retune: bool = False, progress: bool | None = None, log=None,
                     timer=None) -> CpuTuneSummary:
    """Tune `kernels` for `target` (this host) with `trials` schedules each (the default
    included), compiling on `jobs` processes (default: every core) and timing one kernel at a
    time with `timer` (default: a cpu_measure.HostTimer). With `output`, records already in
    that log are reused (not searched again unless `retune`) and each new one is added to it
    as its search finishes (TuningLog.save: merged with the file), so an interrupted run
    keeps the kernels it finished."""
    jobs = check_budget(trials, jobs, "compiles")
    start = time.perf_counter()
    tuning_log = open_log(output)
    reused, todo = split_reused(kernels, lambda k: tuning_log.lookup_cpu(target, k.signature), retune)
    results = {i: CpuKernelResult(kernels[i], old, reused=True) for i, old in reused.items()}
    searches = []
    for i in todo:
        k = kernels[i]
        space = CpuKnobSpace(k.kind, k.dims, default_knobs(k.kind, k.dims, RegisterFile.of(target), target.threads))
        searches.append((i, CpuKernelSearch(k, space, trials, target, seed)))
    if log:
        log(f"{len(kernels)} distinct CPU kernels with schedule knobs, {len(kernels) - len(searches)} already in "
            f"the log, {len(searches)} to tune with up to {trials} trials each on {target.triple} "
            f"({target.cpu or 'generic'}, {target.threads} thread(s)); compiling on {jobs} process(es), timing "
            "one kernel at a time")

    def done(s):
        try:
            record = s.record()
        except TuningError:     # raised below, after the other searches
            return
        if record is not None:
            tuning_log.add(record, replace=retune)
            if output is not None:
                tuning_log.save(output)

    run_cpu_searches([s for _, s in searches], timer or HostTimer(), jobs, progress, done=done)
    for i, s in searches:
        results[i] = CpuKernelResult(kernels[i], s.record(), False, s.failed, s.mismatched, s.broken)
    if output is not None:
        tuning_log.save(output)
    return CpuTuneSummary([results[i] for i in range(len(kernels))], tuning_log, time.perf_counter() - start,
                          sum(len(s.measured) for _, s in searches), target)


def tune_cpu_model(model, target: str = "cpu", threads: int | None = None, input_shapes=None,
                   **options) -> CpuTuneSummary:
    """tune_cpu_kernels over the CPU kernels of `model` compiled for `target` ("cpu", "host"
    or this machine's triple, with `threads` as vdla compile --threads)."""
    tgt = tune_target(target, threads)
    return tune_cpu_kernels(cpu_model_kernels(model, input_shapes), tgt, **options)
