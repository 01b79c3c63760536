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
    return {"name": cfg.name, "hash": cfg.hash}


def compile_model(model, target: str = "cpu", hw_config=None, input_shapes: dict | None = None,
                  constant_inputs: dict | None = None, kernels: bool = True, threads: int | None = None,
                  log=None):
    """Compile an ONNX model (ModelProto or path) into an Artifact for `target`: "cpu" (this
    machine) or an LLVM triple (cross-compiled kernels, run on that machine).

    kernels=False keeps every op a host (numpy) step: useful as a baseline and for checking
    the frontend and passes without the tensor compiler."""
    if target not in ("cpu", "host") and target.count("-") < 2:
        raise ValueError(f"target {target!r} is not supported by the graph compiler; supported: "
                         "cpu (this machine) or an LLVM triple such as aarch64-linux-gnu")
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
        kernel_steps, objects, index, reasons = lower_graph(graph, tgt, log=log)
        target_info.update({"triple": tgt.triple, "cpu": getattr(tgt, "cpu", ""),
                            "features": _feature_list(getattr(tgt, "features", "")),
                            "threads": getattr(tgt, "threads", None)})
    info = {"seconds": round(time.perf_counter() - start, 3), "pass_log": graph.meta["pass_log"],
            "host_reasons": reasons}
    return make_artifact(graph, kernel_steps, objects, index, target_info, _hardware(hw_config), info)


def _feature_list(features) -> list[str]:
    if isinstance(features, (list, tuple)):
        return [f for f in features if f.startswith("+")]
    return [f for f in str(features).split(",") if f.startswith("+")]
