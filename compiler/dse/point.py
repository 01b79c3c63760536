"""One point of a design-space exploration: config -> compiled model -> cycles on the
cycle-exact simulator -> FPGA resources from Yosys. `evaluate_point` is the one function the
local pool and Ray both run; it returns a plain dict (JSON-ready) whatever happens, with a
status saying how far the point got:

    ok              compiled, simulated (and synthesized, or synthesis reported separately)
    compile_failed  the compiler refused the model for this config (the error says why)
    sim_failed      the compiled model did not run on the simulator

Synthesis has its own status (`synth_status`): ok, unsupported (the RTL cannot build this
config: vdla.hw.rtl_params names why), failed (Yosys failed or timed out), skipped (not asked
for, or left to another point with the same RTL), so a point keeps its cycles when only its
synthesis fails.
"""
from __future__ import annotations

import time

import numpy as np


def simulate(artifact, config, inputs: dict) -> dict:
    """Run the artifact once on a simulated accelerator; figures summed over its launches."""
    from vdla.driver.devices import SimulatorDevice
    from vdla.driver.executor import Executor
    device = SimulatorDevice(config)
    try:
        executor = Executor(artifact, device=device)
        executor.run(inputs)
        launches = list(executor.last_launches.values())
    finally:
        device.close()
    cycles = sum(launch.cycles for launch in launches)
    gemm_uops = sum(int(launch.stats.get("gemm_uops", 0)) for launch in launches)
    return {"cycles": cycles, "launches": len(launches), "gemm_utilization": gemm_uops / cycles if cycles else 0.0,
            "ms": cycles / (config.clock_mhz * 1e3)}


def offload(artifact) -> dict:
    """MACs the compiler placed on the accelerator, of all MACs of the model, and those left
    to the CPU; the nodes no tiling fits the config's SRAMs (untiled, with their MACs); the
    reasons of the CPU nodes with MACs or without a tiling. The cycles count the accelerator
    only, so a config that offloads less is not faster for it, and the front weighs both."""
    from ..vdla.lower import NO_TILING
    place = (artifact.header.get("compile") or {}).get("placement") or {}
    total = sum(p.get("macs", 0) for p in place.values())
    on = sum(p.get("macs", 0) for p in place.values() if p.get("device") == "vdla")
    why = {name: p.get("reason", "") for name, p in place.items()
           if p.get("device") == "cpu" and (p.get("macs") or p.get("reason", "").startswith(NO_TILING))}
    untiled = [name for name, reason in why.items() if reason.startswith(NO_TILING)]
    return {"macs": total, "macs_offloaded": on, "macs_on_cpu": total - on, "untiled": untiled,
            "macs_untiled": sum(place[name].get("macs", 0) for name in untiled), "cpu_reasons": why}


def synthesize(config, synthesizer, timeout: float) -> dict:
    """{synth_status, lut, ff, dsp, bram36, uram, ...} of one config (never raises for the RTL's reasons)."""
    from vdla.hw.rtl_params import check_supported
    from vdla.hw.uram_split import fitting_parts
    try:
        check_supported(config)
    except ValueError as exc:
        return {"synth_status": "unsupported", "synth_error": str(exc)}
    started = time.perf_counter()
    try:
        figures = synthesizer(config, timeout=timeout)
    except Exception as exc:   # Yosys's own failure or a synthesizer's bug: the point keeps its cycles
        return {"synth_status": "failed", "synth_error": f"{type(exc).__name__}: {exc}"}
    keep = {k: figures[k] for k in ("lut", "ff", "dsp", "bram36")}
    keep["uram"] = figures.get("uram", 0)       # a synthesizer mapping to no UltraRAM may leave it out
    return {"synth_status": "ok", **keep, "fits": fitting_parts(keep, config),
            "synth_seconds": round(time.perf_counter() - started, 1),
            "synth_tool": figures.get("tool", getattr(synthesizer, "__qualname__", str(synthesizer)))}


def evaluate_point(item: dict, common: dict) -> dict:
    """item: {id, config (a config JSON object), synthesize (bool)}; common: {model (ONNX
    bytes), calibration, inputs ({name: array}), synthesizer (callable or None), synth_timeout}."""
    import onnx

    from vdla.hw import load_config

    from ..compile_model import compile_model
    result = {"id": item["id"], "status": "ok", "error": None}
    config = load_config(item["config"])
    started = time.perf_counter()
    try:
        model = onnx.load_from_string(common["model"])
        artifact = compile_model(model, target="vdla", hw_config=config, calibration=common.get("calibration"),
                                 input_shapes=common.get("input_shapes"))
    except Exception as exc:   # the compiler's reason (ValueError and its kin) belongs in the table
        result.update(status="compile_failed", error=f"{type(exc).__name__}: {exc}")
    else:
        result["compile_seconds"] = round(time.perf_counter() - started, 2)
        result.update(offload(artifact))
        started = time.perf_counter()
        try:
            result.update(simulate(artifact, config, common["inputs"]))
        except Exception as exc:
            result.update(status="sim_failed", error=f"{type(exc).__name__}: {exc}")
        result["sim_seconds"] = round(time.perf_counter() - started, 2)
    synthesizer = common.get("synthesizer")
    if item.get("synthesize") and synthesizer is not None:
        if result["status"] == "compile_failed":   # the slow part, for hardware this model cannot use
            result["synthesis"] = {"synth_status": "skipped", "synth_error": "the model does not compile for it"}
        else:
            result["synthesis"] = synthesize(config, synthesizer, common.get("synth_timeout", 1800.0))
    return result


def sample_inputs(model, calibration: dict | None, seed: int = 0, input_shapes: dict | None = None,
                  samples: int = 2) -> tuple[dict, dict]:
    """(calibration, one input) for a model: the given calibration samples (the first is the
    input), or seeded random ones shaped like the model's inputs."""
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph.passes.calibrate import input_batches
    graph = import_onnx(model, input_shapes=input_shapes)
    rng = np.random.default_rng(seed)
    calib, inputs = {}, {}
    for name in graph.inputs:
        shape, dtype = list(graph.types[name].shape), np.dtype(graph.types[name].dtype)
        if calibration is not None and name in calibration:
            # as vdla compile takes them: whole inputs, or batch rows grouped into inputs
            calib[name] = np.stack(input_batches(name, np.asarray(calibration[name]), shape))
        elif dtype.kind == "f":
            calib[name] = rng.standard_normal([samples, *shape]).astype(dtype)
        else:
            calib[name] = rng.integers(0, 2, [samples, *shape]).astype(dtype)
        inputs[name] = calib[name][0]
    return calib, inputs
