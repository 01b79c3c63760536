"""What the ONNX definition of an op forbids, checked on a node before anything reads it.

Two kinds of checks need nothing but the node: its arity and attribute types against the op's
registered schema (onnx.defs, for the model's opset), and attribute values whose legality does
not depend on input shapes (positive strides, dilations and kernel sizes, non-negative pads,
lengths that agree with kernel_shape, a Split whose sizes match its outputs). Checks that need the
input shapes (an axis within the rank, pads per spatial dim, Split sizes adding up to the split
axis) live with shape inference (vdla.compiler.graph.infer), which the importer also runs.

Every failure is an InvalidModelError naming the node, the op, the attribute or input and what
was expected: onnxruntime rejects these models too.
"""
from __future__ import annotations

import onnx
from onnx import defs

from ..graph.ir import InvalidModelError

WINDOWED = ("Conv", "ConvTranspose", "QLinearConv", "MaxPool", "AveragePool")


def _where(node: onnx.NodeProto, opset: int) -> str:
    return f"node {node.name or '(unnamed)'!r} (op {node.op_type}, opset {opset})"


def check_schema(node: onnx.NodeProto, opset: int) -> None:
    """Input and output counts, required attributes and attribute types, from onnx's registry."""
    try:
        schema = defs.get_schema(node.op_type, opset, "")
    except defs.SchemaError:
        return  # no schema at this opset: the supported-op check names the problem
    where = _where(node, opset)
    inputs = len(node.input)
    if not schema.min_input <= inputs <= schema.max_input:
        raise InvalidModelError(f"{where}: has {inputs} inputs; expected {_count(schema.min_input, schema.max_input)}")
    optional = defs.OpSchema.FormalParameterOption.Optional
    missing = [i for i in range(schema.min_input) if not node.input[i]
               and schema.inputs[min(i, len(schema.inputs) - 1)].option != optional]   # Loop's M and cond
    if missing:
        raise InvalidModelError(f"{where}: required input {missing[0]} "
                                f"({schema.inputs[min(missing[0], len(schema.inputs) - 1)].name}) is empty")
    outputs = len(node.output)
    if not schema.min_output <= outputs <= schema.max_output:
        raise InvalidModelError(f"{where}: has {outputs} outputs; expected "
                                f"{_count(schema.min_output, schema.max_output)}")
    given = {a.name: a for a in node.attribute}
    for name, spec in schema.attributes.items():
        if spec.required and name not in given:
            raise InvalidModelError(f"{where}: the required attribute {name!r} is missing")
        if name in given and given[name].type != int(spec.type):
            got = onnx.AttributeProto.AttributeType.Name(given[name].type)
            raise InvalidModelError(f"{where}: attribute {name!r} is of type {got}; expected {spec.type.name}")


def _count(low: int, high: int) -> str:
    if low == high:
        return str(low)
    return f"at least {low}" if high >= 2**31 - 1 else f"{low} to {high}"


def check_attribute_values(node: onnx.NodeProto, opset: int, attrs: dict) -> None:
    """Attribute values the ONNX definition forbids whatever the input shapes."""
    where = _where(node, opset)
    if node.op_type in WINDOWED:
        _check_window(where, node.op_type, attrs)
    if node.op_type == "Split":
        _check_split(where, node, attrs)
    if node.op_type in ("Squeeze", "Unsqueeze") and "axes" in attrs:
        axes = list(attrs["axes"])
        if len(set(axes)) != len(axes):
            raise InvalidModelError(f"{where}: axes {axes} names an axis more than once")
    if node.op_type == "Transpose" and "perm" in attrs:
        perm = list(attrs["perm"])
        if sorted(perm) != list(range(len(perm))):
            raise InvalidModelError(f"{where}: perm {perm} is not a permutation of 0..{len(perm) - 1}")


def _check_window(where: str, op: str, attrs: dict) -> None:
    kernel = attrs.get("kernel_shape")
    for key in ("kernel_shape", "strides", "dilations"):
        values = attrs.get(key)
        if values is not None and any(v < 1 for v in values):
            raise InvalidModelError(f"{where}: {key} {list(values)} must contain only positive values")
    pads = attrs.get("pads")
    if pads is not None:
        if any(p < 0 for p in pads):
            raise InvalidModelError(f"{where}: pads {list(pads)} must not contain negative values")
        if len(pads) % 2:
            raise InvalidModelError(f"{where}: pads {list(pads)} has {len(pads)} values; expected two per spatial "
                                    "dim (all begins, then all ends)")
    if kernel:
        nd = len(kernel)
        for key, length in (("strides", nd), ("dilations", nd), ("pads", 2 * nd), ("output_padding", nd)):
            values = attrs.get(key)
            if values and len(values) != length:
                raise InvalidModelError(f"{where}: {key} {list(values)} has {len(values)} values; kernel_shape "
                                        f"{list(kernel)} has {nd} spatial dims, so expected {length}")
    if "group" in attrs and attrs["group"] < 1:
        raise InvalidModelError(f"{where}: group {attrs['group']} must be at least 1")
    if any(p < 0 for p in attrs.get("output_padding") or []):
        raise InvalidModelError(f"{where}: output_padding {list(attrs['output_padding'])} must not be negative")
    explicit = attrs.get("pads") and any(attrs["pads"])
    # onnxruntime rejects the pair on convolutions (and lets auto_pad win on pooling)
    if op in ("Conv", "ConvTranspose", "QLinearConv") and explicit and attrs.get("auto_pad", "NOTSET") != "NOTSET":
        raise InvalidModelError(f"{where}: pads {list(attrs['pads'])} and auto_pad {attrs['auto_pad']!r} cannot be "
                                "used together (auto_pad computes the pads)")


def _check_split(where: str, node: onnx.NodeProto, attrs: dict) -> None:
    outputs = len(node.output)
    if "num_outputs" in attrs:
        if attrs["num_outputs"] != outputs:
            raise InvalidModelError(f"{where}: num_outputs {attrs['num_outputs']} disagrees with the node's "
                                    f"{outputs} outputs")
        if len(node.input) > 1 and node.input[1]:
            raise InvalidModelError(f"{where}: give either the split input or num_outputs, not both")
    if "split" in attrs:
        sizes = list(attrs["split"])
        if len(sizes) != outputs:
            raise InvalidModelError(f"{where}: split {sizes} has {len(sizes)} sizes for {outputs} outputs")
        if any(s < 0 for s in sizes):
            raise InvalidModelError(f"{where}: split {sizes} must not contain negative sizes")
