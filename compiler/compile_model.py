"""ONNX model -> optimized graph -> kernels -> artifact: the whole compile in one function."""
from __future__ import annotations

import time

from .artifact_build import make_artifact
from .frontend import import_onnx
from .graph import optimize


def _hardware(hw_config):
    if hw_config is None:
        return None
    from vdla.hw import load_config
    cfg = load_config(hw_config)
    return {"name": cfg.name, "hash": cfg.hash, "config": cfg.to_dict()}


def compile_model(model, target: str = "cpu", hw_config=None, input_shapes: dict | None = None,
                  constant_inputs: dict | None = None, kernels: bool = True, threads: int | None = None,
                  log=None, calibration: dict | None = None, host_triple: str | None = None,
                  vta_compat: bool = False, tuning=None, link: bool | None = None, jobs: int = 1,
                  progress: bool | None = False):
    """Compile an ONNX model (ModelProto or path) into an Artifact for `target`: "cpu" (this
    machine), an LLVM triple (cross-compiled kernels, run on that machine), "cuda" or "cuda:sm_NN"
    (GPU programs, compile_cuda.py: this machine's GPU or the one named) or "vdla" (the
    accelerator of `hw_config`, with the CPU part for `host_triple`, default this machine;
    a float model needs `calibration`, {input name: samples}).

    kernels=False keeps every op a host (numpy) step: useful as a baseline and for checking
    the frontend and passes without the tensor compiler. vta_compat (target "vdla"): streams
    that VTA's hardware computes the same (power-of-two requantization, no VDLA extensions).
    tuning: a vdla.compiler.tune.TuningLog whose records choose the schedules of the kernels
    they match: accelerator records for target "vdla", CPU records (measured on this host) for
    the CPU kernels of any target (vdla.compiler.tune.load_tuning reads one from a file).
    link: also link the CPU kernels into a shared object the deploy runtime loads without
    llvmlite (needs the ziglang package); default: for a triple that is not this machine.
    jobs: processes that compile the kernels side by side (the CPU kernels; for "vdla" also the
    accelerator's, each timed among its default schedules on the simulator). They are spawned: a
    script calling this with jobs > 1 does its work under `if __name__ == "__main__":`. The
    artifact is the same. progress: bars of the kernels compiled on stderr (None: where stderr
    is a terminal, as `vdla compile` shows them)."""
    from .target import check_target, cuda_arch, is_cuda
    check_target(target)  # before any work: an unknown target must not quietly become numpy host steps
    if jobs < 1:
        raise ValueError(f"jobs={jobs}: at least one process compiles the kernels")
    if target == "vdla":
        return compile_for_vdla(model, hw_config, calibration, host_triple, input_shapes, constant_inputs,
                                threads, log, vta_compat=vta_compat, tuning=tuning, link=link, jobs=jobs,
                                progress=progress)
    if vta_compat:
        raise ValueError(f"vta_compat applies to target 'vdla', not {target!r}")
    if is_cuda(target):
        if tuning is not None or hw_config is not None:
            raise ValueError(f"target {target!r} takes no tuning records and no hardware config")
        from .compile_cuda import compile_for_cuda
        return compile_for_cuda(model, arch=cuda_arch(target), input_shapes=input_shapes,
                                constant_inputs=constant_inputs, log=log)
    if tuning is not None and not kernels:
        raise ValueError("tuning records choose kernel schedules: a compile without kernels has none to choose")
    start = time.perf_counter()
    graph = import_onnx(model, input_shapes=input_shapes, constant_inputs=constant_inputs)
    graph = optimize(graph)
    kernel_steps, objects, index, reasons = {}, {}, {}, {}
    target_info = {"kind": "cpu"}
    if kernels:
        from .lower_graph import lower_graph
        from .target import Target
        if target in ("cpu", "host"):
            tgt = Target.host() if threads is None else Target.host(threads=threads)
        else:  # cross-compile: kernels for another CPU (a board's ARM cores)
            tgt = Target(target, threads=threads)
        cpu_tuning = _cpu_tuning(tuning, tgt)
        kernel_steps, objects, index, reasons = lower_graph(graph, tgt, log=log, knobs_for=cpu_tuning, jobs=jobs,
                                                            progress=progress)
        if cpu_tuning is not None:
            cpu_tuning.check()
        objects.update(_linked(objects, index, tgt, link))
        target_info.update({"triple": tgt.triple, "cpu": getattr(tgt, "cpu", ""),
                            "features": _feature_list(getattr(tgt, "features", "")),
                            "threads": getattr(tgt, "threads", None)})
    info = {"seconds": round(time.perf_counter() - start, 3), "pass_log": graph.meta["pass_log"],
            "host_reasons": reasons}
    if tuning is not None:
        info["cpu_tuning"] = cpu_tuning.summary()
    return make_artifact(graph, kernel_steps, objects, index, target_info, _hardware(hw_config), info)


def _cpu_tuning(tuning, target):
    """The knobs_for of lower_graph that applies `tuning`'s CPU records for `target`, or None."""
    if tuning is None:
        return None
    from .tune.cpu_apply import CpuTuningUse
    return CpuTuningUse(tuning, target)


def _linked(objects: dict, index: dict, target, link: bool | None) -> dict:
    """The kernels linked into a shared object per triple (codegen/link.py), when `link` says so
    or, by default, when they are for another machine (a board, which has no llvmlite)."""
    if not index or not (link if link is not None else not target.is_host):
        return {}
    from .codegen.link import link_kernels
    return link_kernels(objects, index, target)


def _feature_list(features) -> list[str]:
    if isinstance(features, (list, tuple)):
        return [f for f in features if f.startswith("+")]
    return [f for f in str(features).split(",") if f.startswith("+")]


def _note_parts_in_place(graph, place: dict) -> None:
    """A packed Concat or Split the memory plan laid out side by side copies nothing: its reason says so
    (a float Concat left on the CPU keeps the reason it is there and adds that)."""
    ops = {n.name: n.attrs.get("source_ops", [n.op])[0] for n in graph.nodes}
    on_cpu = {n.name for n in graph.nodes if n.op == "Concat"}    # float: its reason says why the CPU
    for name in graph.meta["memory_plan"]["parts"]:
        if name not in place:
            continue
        side = "inputs in its output" if ops[name] == "Concat" else "outputs in its input"
        if name in on_cpu:
            place[name]["reason"] = (place[name].get("reason") or "Concat") + \
                f" (no copy: the memory plan lays its {side} side by side)"
        else:
            place[name]["reason"] = (f"{ops[name]}: no copy: the memory plan lays its {side} side by side "
                                     "(packed int8 codes, one batch block)")


def compile_for_vdla(model, hw_config=None, calibration=None, host_triple=None, input_shapes=None,
                     constant_inputs=None, threads=None, log=None, per_channel_activations=False,
                     vta_compat=False, tuning=None, link=None, jobs=1, progress=False):
    """The VDLA pipeline, top to bottom: quantize_for_vdla -> memory plan -> VDLA kernels for
    the accelerator nodes (schedules from `tuning`, a vdla.compiler.tune.TuningLog, where it
    has a record), CPU kernels (or host steps) for the rest -> artifact."""
    from vdla.hw import DEFAULT_PRESET, load_config

    from .graph.passes.calibrate import quantization_error, random_feed, sample_batches
    from .graph.passes.memory_plan import plan_memory
    from .graph.passes import conv_transpose_as_conv, group_norms_as_layer_norm, split_recurrent_projection
    from .lower_graph import lower_graph
    from .target import Target
    from .vdla import Kernels, lower_vdla, quantize_for_vdla
    from .vdla.edge_steps import steps_as_operands
    start = time.perf_counter()
    config = load_config(DEFAULT_PRESET if hw_config is None else hw_config)
    kernels = Kernels(config, vta_compat, tuning, jobs, progress)     # placement settles with them, lowering takes them
    graph, float_graph, place, stats = quantize_for_vdla(model, config, calibration, host_triple, input_shapes,
                                                         constant_inputs, per_channel_activations, vta_compat, kernels)
    # the CPU's recurrent layers, transposed convolutions and instance/group normalizations as the
    # CPU pipeline runs them (placement names each by its node)
    graph = group_norms_as_layer_norm(conv_transpose_as_conv(split_recurrent_projection(graph)))
    graph = plan_memory(graph)
    _note_parts_in_place(graph, place)
    vdla_steps, programs, single_thread = lower_vdla(graph, config, log=log, vta_compat=vta_compat, kernels=kernels)
    # each accelerator node's error on a calibration sample, or on seeded random inputs for a
    # QDQ model compiled without samples (its own ranges, judged on data like a calibration's)
    feed = sample_batches(float_graph, calibration)[0] if calibration is not None else random_feed(float_graph)
    for name, db in quantization_error(float_graph, graph, feed).items():
        place[name]["sqnr_db"] = db
    tgt = Target(host_triple, threads=threads) if host_triple else Target.host(threads=threads)
    cpu_tuning = _cpu_tuning(tuning, tgt)
    # the CPU's nodes, the conversions at the accelerator's edge among them, as kernels (or host steps)
    graph = steps_as_operands(graph)
    kernel_steps, objects, index, reasons = lower_graph(graph, tgt, log=log, skip=set(vdla_steps), knobs_for=cpu_tuning,
                                                           jobs=jobs, progress=progress)
    if cpu_tuning is not None:
        cpu_tuning.check()
    objects.update(_linked(objects, index, tgt, link))
    target_info = {"kind": "vdla", "triple": tgt.triple, "cpu": getattr(tgt, "cpu", ""),
                   "features": _feature_list(getattr(tgt, "features", "")), "threads": tgt.threads}
    info = {"seconds": round(time.perf_counter() - start, 3), "pass_log": graph.meta.get("pass_log", []),
            "host_reasons": reasons, "placement": place,
            "calibration": {t: {k: v for k, v in s.items()} for t, s in stats.items()},
            "ranges_from": "calibration" if calibration is not None else "the model's quantizers",
            "sqnr_from": "a calibration sample" if calibration is not None else "seeded standard-normal inputs",
            "vta_compat": vta_compat}
    if tuning is not None:
        info["tuning"] = graph.meta.get("vdla_tuning", {})
        info["cpu_tuning"] = cpu_tuning.summary()
    artifact = make_artifact(graph, kernel_steps, objects, index, target_info, _hardware(config), info,
                             vdla_steps, programs, vdla_programs_1vt=single_thread)
    return artifact
