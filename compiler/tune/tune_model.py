"""vdla tune's whole job: quantize a model as compile does, find its distinct tunable kernels
(conv and dense; one per signature however many nodes share it), search each one's
schedules on the simulator, and add the records to a tuning log."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from .errors import TuningError
from .journal import SUFFIX as JOURNAL_SUFFIX
from .journal import TrialJournal
from .records import TuningLog, TuningRecord
from .session import check_budget, open_log, split_reused
from .search import KernelSearch, run_searches
from .signature import describe, kernel_signature, signature_key

CALIBRATION_SAMPLES = 4


@dataclass
class ModelKernel:
    """One distinct tunable kernel of a model and the nodes that compile to it."""
    spec: object                 # vdla.KernelSpec
    signature: dict
    name: str                    # signature.describe
    nodes: list[str] = field(default_factory=list)


@dataclass
class KernelResult:
    kernel: ModelKernel
    record: TuningRecord
    reused: bool                 # the log had a record: not searched again
    failed: int = 0              # schedules that did not compile or run
    mismatched: list = field(default_factory=list)     # schedules with another output than the default's


@dataclass
class TuneSummary:
    results: list[KernelResult]
    log: TuningLog
    seconds: float
    trials: int                  # schedules measured in this run


def random_calibration(model, input_shapes=None, seed: int = 0, samples: int = CALIBRATION_SAMPLES) -> dict:
    """Seeded standard-normal samples for every float input: the ranges they give decide the
    epilogue's immediates, not the layer shapes or epilogue kinds a record is keyed by."""
    from ..frontend import import_onnx
    from ..graph.passes.calibrate import random_samples
    graph = import_onnx(model, input_shapes=input_shapes)
    for name in graph.inputs:
        shape = graph.types[name].shape
        if name not in graph.constants and not all(isinstance(d, int) for d in shape):
            raise TuningError(f"input {name!r} has the symbolic shape {list(shape)}: fix it with "
                              f"--input-shape {name}=D0,D1,...")
    return random_samples(graph, samples, seed)


def _needs_calibration(model, input_shapes) -> bool:
    from ..frontend import import_onnx
    from ..graph.passes.qdq import has_qdq
    return not has_qdq(import_onnx(model, input_shapes=input_shapes))


def model_kernels(model, config, calibration=None, input_shapes=None, vta_compat: bool = False,
                  host_triple=None, seed: int = 0) -> list[ModelKernel]:
    """The distinct tunable kernels lower_vdla would compile for `model` on `config`, in graph
    order. Without `calibration`, a float model is calibrated with random_calibration."""
    from ..vdla import kernel_spec, op_named, quantize_for_vdla
    if calibration is None and _needs_calibration(model, input_shapes):
        calibration = random_calibration(model, input_shapes, seed)
    graph, *_ = quantize_for_vdla(model, config, calibration, host_triple, input_shapes, None, False, vta_compat)
    kernels: dict[str, ModelKernel] = {}
    for node in graph.nodes:
        op = op_named(node.op)
        if op is None or op.tuning is None:
            continue
        spec = kernel_spec(graph, node)
        sig = kernel_signature(spec, vta_compat)
        key = signature_key(sig)
        if key not in kernels:
            kernels[key] = ModelKernel(spec, sig, describe(sig, config))
        kernels[key].nodes.append(node.name)
    return list(kernels.values())


def tune_model(model, hw_config=None, trials: int = 32, jobs: int | None = None, output=None,
               calibration=None, input_shapes=None, vta_compat: bool = False, host_triple=None, seed: int = 0,
               retune: bool = False, progress: bool | None = None, log=None) -> TuneSummary:
    """Tune every distinct conv/dense kernel of `model` for `hw_config` with `trials`
    measurements each on `jobs` processes (default: every core). With `output`, records
    already in that log are reused (not searched again unless `retune`) and each new one is
    added to it as its search finishes (TuningLog.save: merged with the file), so an
    interrupted run keeps the kernels it finished and a rerun searches only the rest; every
    measurement goes to OUTPUT.trials as it comes (journal.py), so the rerun resumes a kernel
    it was inside of where it stopped. `progress`: a bar on stderr (None: where stderr is a
    terminal); `log`: a function for progress lines."""
    from vdla.hw import DEFAULT_PRESET, load_config
    jobs = check_budget(trials, jobs, "measures")
    start = time.perf_counter()
    config = load_config(DEFAULT_PRESET if hw_config is None else hw_config)
    tuning_log = open_log(output)
    kernels = model_kernels(model, config, calibration, input_shapes, vta_compat, host_triple, seed)
    reused, todo = split_reused(kernels, lambda k: tuning_log.lookup(config, k.spec, vta_compat), retune)
    results = {i: KernelResult(kernels[i], old, reused=True) for i, old in reused.items()}
    searches = []
    for i in todo:
        k = kernels[i]
        searches.append((i, KernelSearch(i, config, k.spec, k.signature, k.name, trials, vta_compat, seed)))
    if log:
        log(f"{len(kernels)} distinct conv/dense kernels, {len(kernels) - len(searches)} already in the log, "
            f"{len(searches)} to tune with {trials} trials each on {jobs} process(es)")

    def done(s):
        try:
            record = s.record()
        except TuningError:     # raised below, after the other searches
            return
        tuning_log.add(record, replace=retune)
        if output is not None:
            tuning_log.save(output)

    journal = TrialJournal(os.fspath(output) + JOURNAL_SUFFIX) if output is not None else None
    if log and journal is not None and len(journal):
        log(f"resuming: {len(journal)} measurement(s) of an interrupted run in {journal.path}")
    try:
        run_searches([s for _, s in searches], jobs, progress, done, journal)
    finally:
        if journal is not None:
            journal.close()
    for i, s in searches:
        record = s.record()
        results[i] = KernelResult(kernels[i], record, False, len(s.failed), s.mismatched)
    if output is not None:
        tuning_log.save(output)
        journal.close(remove=True)        # every record is in the log now
    return TuneSummary([results[i] for i in range(len(kernels))], tuning_log, time.perf_counter() - start,
                       sum(len(s.measured) for _, s in searches))
