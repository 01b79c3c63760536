"""ONNX ModelProto -> graph IR.

The importer checks every node against what vdla implements (op type, attributes and
attribute values, opset range) and fails on the first node it cannot honour, naming the node,
its op type, the opset and what is supported. It does no optimization: Constant nodes and
initializers become graph constants, every other node becomes an IR node with the ONNX op
name and its attributes defaulted/normalized (see `_normalize`), so the passes see one form
of each op whatever the opset.
"""
from __future__ import annotations

import copy
import os

import numpy as np
import onnx
from onnx import defs, helper, numpy_helper

from vdla.driver import host_ops
from vdla.driver.host_ops import subgraph

from ..graph.infer import constant_operands_known, infer_node
from ..graph.ir import Graph, GraphError, InvalidModelError, Node, RuntimeShapeError, TensorType, UnsupportedModelError
from ..graph.limits import SUPPORTED_DTYPES, check_tensor

from .onnx_types import type_of, value_types
from .contrib_ops import CONTRIB_DEFAULT_DOMAIN_OPS, CONTRIB_DOMAIN, CONTRIB_OPS, expand_contrib
from .contrib_transformer import IMPORT_TYPES
from .onnx_checks import check_attribute_values, check_schema

MIN_OPSET = 11
# Loop's and Scan's subgraph attribute `body` is renamed: a graph IR node's `body` is a fused group.
SUBGRAPH_ATTRIBUTE_NAMES = {"body": "body_graph"}
MAX_OPSET = onnx.defs.onnx_opset_version()


# op type -> attributes vdla honours (anything else on a node is an error, not ignored).
_SPATIAL = {"auto_pad", "dilations", "kernel_shape", "pads", "strides"}
SUPPORTED_OPS: dict[str, set[str] | None] = {
    "Conv": _SPATIAL | {"group"},
    "ConvTranspose": _SPATIAL | {"group", "output_padding", "output_shape"},
    "Gemm": {"alpha", "beta", "transA", "transB"},
    "MatMul": set(),
    "BatchNormalization": {"epsilon", "momentum", "training_mode"},
    "Relu": set(), "Sigmoid": set(), "Tanh": set(), "HardSwish": set(), "Exp": set(),
    "Clip": set(), "LeakyRelu": {"alpha"}, "HardSigmoid": {"alpha", "beta"},
    "Add": set(), "Sub": set(), "Mul": set(), "Div": set(),
    "MaxPool": _SPATIAL | {"ceil_mode", "storage_order"},
    "AveragePool": _SPATIAL | {"ceil_mode", "count_include_pad"},
    "GlobalAveragePool": set(), "GlobalMaxPool": set(),
    "Flatten": {"axis"}, "Reshape": {"allowzero"}, "Shape": {"start", "end"},
    "Gather": {"axis"}, "Unsqueeze": {"axes"}, "Squeeze": {"axes"}, "Concat": {"axis"},
    "Transpose": {"perm"}, "Split": {"axis", "split", "num_outputs"}, "Slice": set(),
    "Pad": {"mode"}, "Softmax": {"axis"}, "ReduceMean": {"axes", "keepdims", "noop_with_empty_axes"},
    "Identity": set(), "Dropout": {"seed", "ratio"}, "Constant": {
        "value", "value_float", "value_floats", "value_int", "value_ints"},
    "Cast": {"to", "saturate"},
    "QuantizeLinear": {"axis", "output_dtype", "saturate", "block_size"},
    "DequantizeLinear": {"axis", "block_size"},
    "QLinearConv": _SPATIAL | {"group"}, "QLinearMatMul": set(),
}
# The ops with a whole record in vdla.driver.host_ops (opdef.OpDef) take every attribute their
# ONNX schema declares at the model's opset (None here), with the schema's defaults filled in.
SUPPORTED_OPS.update({op: None for op in host_ops.DEFS if op not in SUPPORTED_OPS})


def _label(node: onnx.NodeProto, opset: int) -> str:
    return f"node {node.name or '(unnamed)'!r} (op {node.op_type}, opset {opset})"


def _fail(node: onnx.NodeProto, opset: int, what: str) -> UnsupportedModelError:
    return UnsupportedModelError(f"{_label(node, opset)}: {what}")


def _np_dtype(elem_type: int) -> str:
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).name


def _check_values(node, opset, attrs) -> None:
    """Attribute values vdla does not implement (the attribute itself is known)."""
    op = node.op_type
    if op == "BatchNormalization" and not attrs.get("training_mode", 0) and len([o for o in node.output if o]) > 1:
        raise _fail(node, opset, "the running mean and variance outputs need training_mode=1")
    if op == "Pad" and attrs.get("mode", "constant") not in ("constant", "reflect", "edge", "wrap"):
        raise _fail(node, opset, f"mode {attrs['mode']!r}; supported: constant, reflect, edge, wrap")
    if op in ("QuantizeLinear", "DequantizeLinear") and attrs.get("block_size", 0):
        raise _fail(node, opset, "blocked quantization (block_size > 0) is not supported")
    if op == "Cast" and _np_dtype(attrs["to"]) not in SUPPORTED_DTYPES:
        raise _fail(node, opset, f"Cast to {_np_dtype(attrs['to'])}; supported: "
                    f"{', '.join(sorted(SUPPORTED_DTYPES))}")
    if op in ("Conv", "ConvTranspose", "MaxPool", "AveragePool") and attrs.get("auto_pad", "NOTSET") \
            not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise _fail(node, opset, f"auto_pad {attrs['auto_pad']!r} is not a valid value")


def _normalize(node: onnx.NodeProto, opset: int, attrs: dict) -> dict:
    """One attribute form per op whatever the opset."""
    op = node.op_type
    if op in ("Softmax", "LogSoftmax", "Hardmax") and opset < 13:   # over the trailing dims flattened
        attrs.setdefault("axis", 1)
        attrs["coerce_2d"] = True
    if op == "Split":
        attrs["num_outputs"] = len(node.output)
        if opset < 18:  # without sizes, the split axis must divide evenly (opset 18: last part smaller)
            attrs["require_even"] = True
    if op == "Cast":
        attrs["to"] = _np_dtype(attrs["to"])
        attrs.pop("saturate", None)  # only affects float8 targets, which are rejected
    if op == "QuantizeLinear":
        if "output_dtype" in attrs and attrs["output_dtype"]:
            attrs["output_dtype"] = _np_dtype(attrs["output_dtype"])
        else:
            attrs.pop("output_dtype", None)
        attrs.pop("saturate", None)
        attrs.pop("block_size", None)
    if op == "DequantizeLinear":
        attrs.pop("block_size", None)
    if op == "BatchNormalization" and not attrs.get("training_mode", 0):
        for key in ("momentum", "training_mode"):      # (they matter in training mode only)
            attrs.pop(key, None)
    if op in ("Conv", "ConvTranspose", "MaxPool", "AveragePool", "QLinearConv"):
        attrs.setdefault("auto_pad", "NOTSET")
        if isinstance(attrs["auto_pad"], bytes):
            attrs["auto_pad"] = attrs["auto_pad"].decode()
    if op == "MaxPool" and len(node.output) > 1 and node.output[1]:
        attrs["indices"] = 1         # the host op computes the Indices output only when asked
    return attrs


def _plain(value):
    """An attribute value as the graph IR keeps it: strings (also in lists) as str, lists as lists."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, (list, tuple)):
        return [v.decode() if isinstance(v, bytes) else v for v in value]
    return value


def _schema_attributes(node: onnx.NodeProto, opset: int) -> tuple[set[str], dict]:
    """The attributes an op's ONNX schema declares at `opset`, and their defaults."""
    try:
        schema = defs.get_schema(node.op_type, opset, "")
    except defs.SchemaError:      # the op is younger than the model's opset (Mish before 18)
        since = min(d.since_version for d in defs.get_all_schemas_with_history()
                    if d.name == node.op_type and d.domain == "")
        raise InvalidModelError(f"{_label(node, opset)}: {node.op_type} is not defined at opset {opset} of the "
                                f"default domain; it exists from opset {since}: raise the model's opset") from None
    defaults = {}
    for name, spec in schema.attributes.items():
        if spec.default_value.name:             # declared with a default
            value = helper.get_attribute_value(spec.default_value)
            defaults[name] = _plain(value)
    return set(schema.attributes), defaults


def _attributes(node: onnx.NodeProto, opset: int) -> dict:
    allowed = SUPPORTED_OPS[node.op_type]
    record = host_ops.DEFS.get(node.op_type) if allowed is None else None
    defaults = {}
    if record is not None:
        allowed, defaults = _schema_attributes(node, opset)
    attrs = {}
    for attr in node.attribute:
        if attr.name not in allowed:
            raise _fail(node, opset, f"attribute {attr.name!r} is not supported; supported "
                        f"attributes: {', '.join(sorted(allowed)) or '(none)'}")
        value = helper.get_attribute_value(attr)
        if isinstance(value, onnx.TensorProto):
            value = _tensor_value(value, f"{_label(node, opset)}, attribute {attr.name!r}")
        if isinstance(value, onnx.TypeProto):      # Optional's `type`: its kind, shape and dtype
            typed = type_of(value)
            attrs[attr.name] = None if typed is None else dict(zip(("shape", "dtype", "kind"), typed))
            continue
        if isinstance(value, onnx.GraphProto):
            doc, reads = import_subgraph(value, opset)
            attrs.setdefault("captures", [])
            attrs["captures"] += [n for n in reads if n not in attrs["captures"]]
            attrs[SUBGRAPH_ATTRIBUTE_NAMES.get(attr.name, attr.name)] = doc
            continue
        attrs[attr.name] = _plain(value)
    if record is not None:
        attrs = _normalize(node, opset, {**defaults, **attrs})
        why = record.unsupported(attrs) if record.unsupported else None
        if why:
            raise _fail(node, opset, why)
        return attrs
    check_attribute_values(node, opset, attrs)
    _check_values(node, opset, attrs)
    return _normalize(node, opset, attrs)


def import_subgraph(g: onnx.GraphProto, opset: int) -> tuple[dict, list[str]]:
    """A control-flow op's subgraph as the document its host op runs (host_ops.subgraph), and the
    outer names it reads (its captures), in order of first use. Its nodes are imported like the
    main graph's: the same checks, the same normalized attributes."""
    scratch = Graph(name=g.name or "subgraph", inputs=[v.name for v in g.input],
                    outputs=[v.name for v in g.output], nodes=[], opset=opset)
    for init in g.initializer:
        scratch.constants[init.name] = _tensor_value(init, f"subgraph {scratch.name!r}, initializer {init.name!r}")
    for index, proto in enumerate(g.node):
        scratch.nodes.extend(_import_node(proto, index, opset, scratch))
    defined = set(scratch.inputs) | set(scratch.constants)
    reads = []
    for node in scratch.nodes:
        reads += [n for n in node.inputs if n and n not in defined]
        defined.update(node.outputs)
    reads += [n for n in scratch.outputs if n not in defined]
    doc = {"inputs": scratch.inputs, "outputs": scratch.outputs,
           "nodes": [{"op": n.op, "name": n.name, "inputs": n.inputs, "outputs": n.outputs,
                      "attrs": subgraph.encode(n.attrs)} for n in scratch.nodes],
           "constants": subgraph.encode(scratch.constants)}
    return doc, list(dict.fromkeys(reads))


def _tensor_value(tensor: onnx.TensorProto, what: str) -> np.ndarray:
    """A TensorProto's array; data that does not fit its dims and type names the tensor."""
    dims = list(tensor.dims)
    try:
        dtype = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type))
    except Exception:
        raise InvalidModelError(f"{what}: tensor {tensor.name!r} has data type {tensor.data_type}, which ONNX "
                                "does not define") from None
    if any(d < 0 for d in dims):
        raise InvalidModelError(f"{what}: tensor {tensor.name!r} has dims {dims}; dimensions must not be negative")
    expected = int(np.prod(dims, dtype=object)) * dtype.itemsize
    external = tensor.data_location == onnx.TensorProto.EXTERNAL
    # (sub-byte types pack several elements per byte: those are rejected as unsupported later)
    if tensor.HasField("raw_data") and not external and dtype.name in SUPPORTED_DTYPES and \
            len(tensor.raw_data) != expected:
        raise InvalidModelError(f"{what}: tensor {tensor.name!r} ({dtype.name}{dims}) holds {len(tensor.raw_data)} "
                                f"bytes of data; its dims and type need {expected}")
    try:
        return numpy_helper.to_array(tensor)
    except Exception as exc:
        raise InvalidModelError(f"{what}: tensor {tensor.name!r} ({dtype.name}{dims}) cannot be read: "
                                f"{exc}") from None


def _constant_value(node: onnx.NodeProto, attrs: dict) -> np.ndarray:
    if "value" in attrs:
        return np.asarray(attrs["value"])
    if "value_float" in attrs:
        return np.array(attrs["value_float"], dtype=np.float32)
    if "value_floats" in attrs:
        return np.array(attrs["value_floats"], dtype=np.float32)
    if "value_int" in attrs:
        return np.array(attrs["value_int"], dtype=np.int64)
    return np.array(attrs["value_ints"], dtype=np.int64)


def _input_type(value: onnx.ValueInfoProto, overrides: dict) -> TensorType:
    if not value.type.HasField("tensor_type"):     # a sequence or an optional: a run-time value
        typed = type_of(value.type)
        if typed is None:
            raise UnsupportedModelError(f"graph input {value.name!r}: a {value.type.WhichOneof('value')} whose "
                                        "element type is open or not one vdla computes with; vdla takes tensors, "
                                        "sequences and optionals of tensors")
        return TensorType(*typed)
    ttype = value.type.tensor_type
    if value.name in overrides:
        shape = tuple(int(d) for d in overrides[value.name])
        declared = len(ttype.shape.dim)
        if ttype.HasField("shape") and declared != len(shape):
            raise GraphError(f"graph input {value.name!r}: input_shapes gives {list(shape)} (rank {len(shape)}), "
                             f"but the model declares rank {declared}")
    else:
        shape = []
        for i, dim in enumerate(ttype.shape.dim):
            if not dim.HasField("dim_value"):
                hint = _shape_hint(ttype.shape.dim)
                raise UnsupportedModelError(
                    f"graph input {value.name!r}: dimension {i} is symbolic "
                    f"({dim.dim_param or '?'}); vdla compiles static shapes: give it with "
                    f"input_shapes={{'{value.name}': [{hint}]}} (CLI: --input-shape "
                    f"{value.name}={hint.replace(', ', ',')})" + _fill_in(ttype.shape.dim))
            shape.append(dim.dim_value)
        shape = tuple(shape)
    dtype = _np_dtype(ttype.elem_type)
    if dtype not in SUPPORTED_DTYPES:
        raise UnsupportedModelError(f"graph input {value.name!r}: dtype {dtype} is not supported")
    result = TensorType(shape, dtype)
    check_tensor("graph input", value.name, result)
    return result


def _upgrade(model: onnx.ModelProto, opset: int) -> onnx.ModelProto:
    """Older models go through onnx's own version converter to opset MIN_OPSET."""
    from onnx import version_converter
    if opset < 9 and any(n.op_type == "Scan" for n in model.graph.node):
        # onnx's converter keeps Scan-8's batch axis and sequence_lens, which Scan-9 dropped
        raise UnsupportedModelError(f"model opset {opset}: Scan before opset 9 (its batched form) is not "
                                    "supported; export with opset 9 or later")
    try:
        return version_converter.convert_version(model, MIN_OPSET)
    except Exception as exc:
        raise UnsupportedModelError(f"model opset {opset} is below {MIN_OPSET} and onnx's version "
                                    f"converter could not upgrade it: {exc}") from exc


def load_onnx(path: str | os.PathLike) -> onnx.ModelProto:
    """Load a model file and its external data (resolved next to the file)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{path}: no such model file")
    if os.path.getsize(path) == 0:
        raise InvalidModelError(f"{path} is empty (0 bytes), not an ONNX model")
    try:
        return onnx.load(path, load_external_data=True)
    except Exception as exc:  # protobuf's DecodeError and friends name no file
        raise InvalidModelError(f"{path} is not a readable ONNX model: {exc}") from exc


def import_onnx(model: onnx.ModelProto | str | os.PathLike, input_shapes: dict | None = None,
                constant_inputs: dict | None = None, check_shapes: bool = True) -> Graph:
    """Convert a model to the graph IR. `input_shapes` fixes symbolic input dims;
    `constant_inputs` freezes graph inputs to given values (they become constants).
    `check_shapes=False` skips shape inference at import (for placeholder input shapes); the
    compiler's passes infer and check every shape anyway.

    A model the ONNX definition forbids raises InvalidModelError, one that uses what vdla does
    not implement UnsupportedModelError; both name the node, tensor or attribute."""
    source = "the model"
    if not isinstance(model, onnx.ModelProto):
        source = os.fspath(model)
        model = load_onnx(model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    if opset is None:
        what = "has no graph and no opset_import: not an ONNX model" if not model.HasField("graph") else \
            "declares no opset for the default ONNX domain (opset_import has no entry for '' or 'ai.onnx')"
        raise InvalidModelError(f"{source} {what}")
    if opset < MIN_OPSET:
        model = _upgrade(model, opset)
        opset = MIN_OPSET
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise UnsupportedModelError(f"model opset {opset} is outside the supported range "
                                    f"{MIN_OPSET}..{MAX_OPSET}")
    overrides = dict(input_shapes or {})
    frozen = {k: np.asarray(v) for k, v in (constant_inputs or {}).items()}
    g = model.graph
    graph = Graph(name=g.name or "model", inputs=[], outputs=[o.name for o in g.output], nodes=[],
                  opset=opset)
    for init in g.initializer:
        array = _tensor_value(init, f"initializer {init.name!r}")
        graph.constants[init.name] = array
        graph.types[init.name] = TensorType.of(array)
    for name, array in frozen.items():
        graph.constants[name] = array
        graph.types[name] = TensorType.of(array)
    unknown = sorted(set(overrides) - {value.name for value in g.input})
    if unknown:
        raise GraphError(f"input_shapes names {unknown}, which are not inputs of the model; its inputs: "
                         f"{[value.name for value in g.input if value.name not in graph.constants]}")
    for value in g.input:
        if value.name in graph.constants:
            continue
        graph.inputs.append(value.name)
        graph.types[value.name] = _input_type(value, overrides)
    for index, proto in enumerate(g.node):
        graph.nodes.extend(_import_node(proto, index, opset, graph))
    graph.meta.pop(IMPORT_TYPES, None)
    graph.meta["onnx_types"] = value_types(model, overrides)
    if check_shapes:
        _check_types(graph)
    return graph


def _import_node(proto: onnx.NodeProto, index: int, opset: int, graph: Graph) -> list[Node]:
    """The IR nodes of one ONNX node (none for a Constant, which becomes a graph constant)."""
    name = proto.name or f"{proto.op_type}_{index}"
    if (proto.domain == CONTRIB_DOMAIN and proto.op_type in CONTRIB_OPS
            or proto.domain in ("", "ai.onnx") and proto.op_type in CONTRIB_DEFAULT_DOMAIN_OPS):
        attrs = {a.name: helper.get_attribute_value(a) for a in proto.attribute}
        unknown = set(attrs) - CONTRIB_OPS[proto.op_type]
        if unknown:
            raise _fail(proto, opset, f"attributes {sorted(unknown)} are not supported")

        def fail(what):
            raise _fail(proto, opset, what)
        return expand_contrib(proto.op_type, name, list(proto.input), list(proto.output), attrs, fail, graph,
                              attributes=lambda made: _attributes(made, MAX_OPSET))
    if proto.domain not in ("", "ai.onnx"):
        raise _fail(proto, opset, f"domain {proto.domain!r} is not supported (the default ONNX domain, "
                    f"and from {CONTRIB_DOMAIN}: {', '.join(sorted(CONTRIB_OPS))})")
    if proto.op_type not in SUPPORTED_OPS:
        raise _fail(proto, opset, "operator is not supported; supported operators: "
                    + ", ".join(sorted(SUPPORTED_OPS)))
    check_schema(proto, opset)
    attrs = _attributes(proto, opset)
    if proto.op_type == "Constant":
        array = _constant_value(proto, attrs)
        graph.constants[proto.output[0]] = array
        graph.types[proto.output[0]] = TensorType.of(array)
        return []
    # the outer values a subgraph reads are the node's inputs too, after its own
    return [Node(proto.op_type, name, list(proto.input) + attrs.get("captures", []), list(proto.output), attrs)]


def _check_types(graph: Graph) -> None:
    """Shape inference as far as it goes before constant folding (a Reshape whose shape is computed
    waits for the compiler's fold_constants), so that a node whose attributes contradict its input
    shapes is rejected here. It runs on copies: the graph stays as the model wrote it."""
    probe = Graph(graph.name, graph.inputs, graph.outputs, [], dict(graph.types), graph.constants, graph.opset)
    for node in graph.nodes:
        if any(n and n not in probe.types for n in node.inputs) or not constant_operands_known(probe, node):
            continue
        try:
            types = infer_node(probe, copy.deepcopy(node))
        except RuntimeShapeError:       # a host step, typed by fold_constants
            continue
        for name, t in zip(node.outputs, types):
            if name:
                probe.types[name] = t


def _shape_hint(dims) -> str:
    """A shape for a hint: the model's own sizes, 1 for a symbolic batch (dimension 0), the
    names of the other symbolic dimensions for the user to replace."""
    return ", ".join(str(d.dim_value) if d.HasField("dim_value") else "1" if i == 0 else (d.dim_param or f"D{i}")
                     for i, d in enumerate(dims))


def _fill_in(dims) -> str:
    names = [d.dim_param or f"D{i}" for i, d in enumerate(dims) if i and not d.HasField("dim_value")]
    return f", with a size for {', '.join(names)}" if names else ""
