"""Graph -> VDLA kernels: every accelerator node of a quantized graph (quantize_vdla) is
compiled into a KernelProgram by the VDLA backend. Nodes with the same operator, shapes and
epilogue share one program (ResNet repeats its blocks)."""
from __future__ import annotations

import json

from .graph.ir import Graph

KERNEL_OPS = ("VdlaConv", "VdlaDense", "VdlaPool", "VdlaAdd")


def lower_vdla(graph: Graph, config, log=None) -> tuple[dict, list]:
    """-> ({node name: {"program": index, "args": tensor names}}, [program documents])."""
    from .topi import vdla as V
    steps, programs, index = {}, [], {}
    for node in graph.nodes:
        if node.op not in KERNEL_OPS:
            continue
        a = node.attrs
        key = json.dumps([node.op, a.get("layer"), a["epilogue"], a.get("ma"), a.get("mb"),
                          [graph.types[n].shape for n in node.inputs]], sort_keys=True, default=list)
        if key not in index:
            ep = V.Epilogue(**a["epilogue"])
            if node.op == "VdlaConv":
                layer = dict(a["layer"], pads=tuple(a["layer"]["pads"]))
                prog, _ = V.compile_conv2d(config, V.ConvLayer(**layer), ep, name=f"v{len(programs)}_conv")
            elif node.op == "VdlaDense":
                prog, _ = V.compile_dense(config, V.DenseLayer(**a["layer"]), ep, name=f"v{len(programs)}_dense")
            elif node.op == "VdlaPool":
                layer = dict(a["layer"], pads=tuple(a["layer"]["pads"]))
                prog, _ = V.compile_pool2d(config, V.PoolLayer(**layer), ep, name=f"v{len(programs)}_pool")
            else:
                t = graph.types[node.inputs[0]].shape
                prog, _ = V.compile_add(config, V.AddLayer(t[0], t[1], t[2], t[3], a["ma"], a["mb"]), ep,
                                        name=f"v{len(programs)}_add")
            index[key] = len(programs)
            programs.append(prog.to_dict())
            if log:
                log(f"compiled {prog.name} for {node.name}")
        steps[node.name] = {"program": index[key], "args": [n for n in node.inputs if n] + list(node.outputs)}
    return steps, programs
