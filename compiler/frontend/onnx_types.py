"""ONNX's own shape inference of a model: the types of values whose shapes vdla cannot compute.

vdla infers every static shape itself (graph/infer.py). A node whose output shape depends on
run-time values (NonZero, a Loop, Pad by computed pads) gets its output types from here instead:
the dtype, and the dimensions that ONNX's inference knows (-1 for the others). The inference runs
on a copy of the graph without the initializers' data (their types stand in as inputs), so a
model's weights are not copied for it.
"""
from __future__ import annotations

import onnx
from onnx import helper

from ..graph.limits import SUPPORTED_DTYPES


def _dims(ttype) -> tuple[int, ...] | None:
    if not ttype.HasField("shape"):
        return None
    return tuple(d.dim_value if d.HasField("dim_value") else -1 for d in ttype.shape.dim)


def value_types(model: onnx.ModelProto, overrides: dict) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape with -1 where unknown, numpy dtype name, kind) for every value ONNX's shape
    inference types (an unknown rank reads as one unknown dimension)."""
    g = model.graph
    light = onnx.ModelProto(ir_version=model.ir_version)
    light.opset_import.extend(model.opset_import)
    light.graph.name = g.name
    light.graph.node.extend(g.node)
    light.graph.output.extend(g.output)
    light.graph.value_info.extend(g.value_info)
    initializers = {t.name for t in g.initializer}
    for value in g.input:
        if value.name in initializers:
            continue
        if value.name in overrides and value.type.HasField("tensor_type"):
            ttype = value.type.tensor_type
            value = helper.make_tensor_value_info(value.name, ttype.elem_type, list(overrides[value.name]))
        light.graph.input.append(value)
    for t in g.initializer:
        light.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    try:
        inferred = onnx.shape_inference.infer_shapes(light, strict_mode=False, data_prop=True)
    except Exception:       # a model ONNX cannot infer: vdla's own inference decides what is missing
        return {}
    out = {}
    _collect(inferred.graph, out)
    return out


def _collect(graph, out: dict) -> None:
    """The typed values of `graph` and of its nodes' subgraphs (an If inlined at compile time
    brings its branch's values into the main graph)."""
    for value in [*graph.value_info, *graph.output]:
        typed = type_of(value.type)
        if typed is not None:
            out.setdefault(value.name, typed)
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _collect(sub, out)


def type_of(type_proto) -> tuple[tuple[int, ...], str, str] | None:
    """(shape with -1 where unknown, numpy dtype name, kind) of a tensor, a sequence of tensors or
    an optional of either (the shape and dtype of the tensors inside), or None where ONNX leaves
    the element type open or it is one vdla does not compute with."""
    which, kind = type_proto.WhichOneof("value"), "tensor"
    if which == "optional_type":
        type_proto, kind = type_proto.optional_type.elem_type, "optional"
        which = type_proto.WhichOneof("value")
    if which == "sequence_type":
        type_proto, kind = type_proto.sequence_type.elem_type, "optional" if kind == "optional" else "sequence"
        which = type_proto.WhichOneof("value")
    if which != "tensor_type" or not type_proto.tensor_type.elem_type:
        return None
    ttype = type_proto.tensor_type
    dtype = helper.tensor_dtype_to_np_dtype(ttype.elem_type).name
    if dtype not in SUPPORTED_DTYPES:
        return None
    dims = _dims(ttype)
    return (dims if dims is not None else (-1,), dtype, kind)
