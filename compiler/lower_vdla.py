"""Graph -> VDLA kernels: every accelerator node of a quantized graph (quantize_vdla) is
compiled into a KernelProgram by the VDLA backend. Nodes with the same operator, shapes and
epilogue share one program (ResNet repeats its blocks).

Each kernel is compiled with its default schedule and with the same tiles on one virtual
thread; both are timed on the cycle-exact simulator (timing does not depend on the data)
and the faster one is kept: latency hiding costs a little per tile (a second set of
micro-op kernels, shorter DMA rows), which small layers do not earn back."""
from __future__ import annotations

import json

import numpy as np

from .graph.ir import Graph

KERNEL_OPS = ("VdlaConv", "VdlaDense", "VdlaPool", "VdlaAdd")


def lower_vdla(graph: Graph, config, log=None, vta_compat: bool = False) -> tuple[dict, list, list]:
    """-> ({node name: {"program": index, "args": tensor names}}, [program documents], [the same
    programs with one virtual thread and the same tiles: what latency hiding buys, for profiles]).
    vta_compat: kernels in the compiler's VTA mode (topi.vdla.vta_mode); the weight blocks its
    pooling and Add kernels read are added to the graph's constants."""
    from dataclasses import replace

    from .topi import vdla as V
    steps, programs, single, index = {}, [], [], {}
    vta = {"vta_compat": vta_compat}
    for node in graph.nodes:
        if node.op not in KERNEL_OPS:
            continue
        a = node.attrs
        key = json.dumps([node.op, a.get("layer"), a["epilogue"], a.get("ma"), a.get("mb"),
                          [graph.types[n].shape for n in node.inputs]], sort_keys=True, default=list)
        if key not in index:
            ep = V.Epilogue(**a["epilogue"])
            name = f"v{len(programs)}_{node.op[4:].lower()}"
            if node.op == "VdlaConv":
                layer = V.ConvLayer(**dict(a["layer"], pads=tuple(a["layer"]["pads"])))
                compile_ = lambda knobs=None: V.compile_conv2d(config, layer, ep, knobs, name=name, **vta)  # noqa: E731
            elif node.op == "VdlaDense":
                layer = V.DenseLayer(**a["layer"])
                compile_ = lambda knobs=None: V.compile_dense(config, layer, ep, knobs, name=name, **vta)  # noqa: E731
            elif node.op == "VdlaPool":
                layer = V.PoolLayer(**dict(a["layer"], pads=tuple(a["layer"]["pads"])))
                compile_ = lambda knobs=None: V.compile_pool2d(config, layer, ep, knobs, name=name, **vta)  # noqa: E731
            else:
                t = graph.types[node.inputs[0]].shape
                layer = V.AddLayer(t[0], t[1], t[2], t[3], a.get("ma", 0), a.get("mb", 0), a.get("per_channel", False),
                                   a.get("offset", False))
                compile_ = lambda knobs=None: V.compile_add(config, layer, ep, knobs, name=name, **vta)  # noqa: E731
            prog, knobs = compile_()
            one, _ = compile_(replace(knobs, vthreads=1)) if knobs.vthreads > 1 else (prog, None)
            if one is not prog and _cycles(config, one) < _cycles(config, prog):
                prog = one
            index[key] = len(programs)
            programs.append(prog.to_dict())
            single.append(one.to_dict())
            if log:
                log(f"compiled {prog.name} for {node.name}")
        args = _vta_args(graph, node, config) if vta_compat else [n for n in node.inputs if n]
        steps[node.name] = {"program": index[key], "args": args + list(node.outputs)}
    return steps, programs, single


def _vta_args(graph: Graph, node, config) -> list[str]:
    """The inputs of a VTA-mode kernel: pooling and Add take the int8 weight blocks that carry
    their factors on the GEMM core (vta_mode) in place of the node's int32 factor vectors."""
    from .graph.ir import TensorType
    from .topi import vdla as V
    from .topi.vdla.pool import window_factor

    def weight(suffix, array):
        name = f"{node.name}.{suffix}"
        graph.constants[name] = array
        graph.types[name] = TensorType.of(array)
        return name
    a, L = node.attrs, config.block
    if node.op == "VdlaPool":
        layer = V.PoolLayer(**dict(a["layer"], pads=tuple(a["layer"]["pads"])))
        factor = window_factor(layer, V.Epilogue(**a["epilogue"]), node.name)
        return [node.inputs[0], weight("vta_window", V.scaled_identity(L, factor))]
    if node.op == "VdlaAdd":
        if a.get("per_channel"):
            wa, wb = (V.diagonal_weight(graph.constants[n][:, 0, :].reshape(-1), L) for n in node.inputs[2:4])
        else:
            wa, wb = V.scaled_identity(L, a.get("ma", 0)), V.scaled_identity(L, a.get("mb", 0))
        offset = node.inputs[4:5] if a.get("offset") else []
        return [*node.inputs[:2], weight("vta_wa", wa), weight("vta_wb", wb), *offset]
    return [n for n in node.inputs if n]


def _cycles(config, program) -> int:
    from vdla.driver.devices import SimulatorDevice
    from vdla.driver.runtime import run_program
    device = SimulatorDevice(config, dram_bytes=_dram_for(program))
    inputs = [np.zeros(p.nbytes, np.uint8) for p in program.params[:-1]]
    return run_program(device, program, inputs)[1].cycles


def _dram_for(program) -> int:
    need = sum(p.nbytes + 4096 for p in program.params) + (8 << 20)
    return 1 << max(need - 1, 1).bit_length()
