"""The op record (host_ops.opdef): its shared type rules, and that every record's type rule agrees
with what its op computes on the node tests' own inputs."""
import numpy as np
import pytest

from vdla.driver import host_ops
from vdla.driver.host_ops import OperandError, Shaped
from vdla.driver.host_ops.errors import RuntimeShape, Unimplemented
from vdla.driver.host_ops.opdef import broadcast, broadcast_shape, same_as_input


def test_broadcast_rule_reads_shapes_and_dtype_only():
    rule = broadcast("bool")
    assert rule([Shaped((2, 1, 4), 3, "float32"), Shaped((3, 1), 2, "float32")], {}) == [((2, 3, 4), "bool")]
    assert broadcast()([Shaped((5,), 1, "int32"), np.zeros((1,), np.int32)], {}) == [((5,), "int32")]


def test_broadcast_mismatch_names_the_shapes():
    with pytest.raises(OperandError, match=r"\[2, 3\], \[4\] do not broadcast"):
        broadcast_shape((2, 3), (4,))


def test_same_as_input():
    assert same_as_input(1)([None, Shaped((7, 2), 2, "int8")], {}) == [((7, 2), "int8")]


def test_records_are_not_restated_by_the_older_tables():
    assert not set(host_ops.DEFS) & set(host_ops.SHAPES)
    assert all(host_ops.OPS[op] is d.run for op, d in host_ops.DEFS.items())


def test_every_type_rule_agrees_with_its_op_on_the_onnx_node_tests():
    """For every node test whose single node has a record: the type rule, given only the shapes of
    the inputs, predicts the shapes and dtypes that running the op produces."""
    from onnx import numpy_helper
    from onnx.backend.test.loader import load_model_tests
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.frontend.onnx_import import UnsupportedModelError
    checked = set()
    for case in load_model_tests(kind="node"):
        nodes = case.model.graph.node
        if len(nodes) != 1 or nodes[0].op_type not in host_ops.DEFS or not case.data_sets \
                or any(not i.type.HasField("tensor_type") for i in case.model.graph.input):
            continue        # (a sequence or an optional input: a value only a run makes)
        inputs = [numpy_helper.to_array(t) if hasattr(t, "SerializeToString") else np.asarray(t)
                  for t in case.data_sets[0][0]]
        names = [i.name for i in case.model.graph.input]
        try:
            graph = import_onnx(case.model, input_shapes={n: list(v.shape) for n, v in zip(names, inputs)},
                                check_shapes=False)
        except UnsupportedModelError:
            continue
        node = graph.nodes[0]
        values = dict(zip(names, inputs))
        args = [values.get(n, graph.constants.get(n)) if n else None for n in node.inputs]
        try:
            outs = host_ops.run(node.op, args, node.attrs)
        except Exception:
            continue        # an input the op refuses: the node tests say whether that is right
        constant = set(host_ops.DEFS[node.op].constant_operands)
        shaped = [a if (i in constant or a is None) else Shaped(a.shape, a.ndim, a.dtype.name)
                  for i, a in enumerate(args)]
        try:
            predicted = host_ops.output_types(node.op, shaped, node.attrs)
        except Unimplemented:   # an output shape that needs the data's values: it must type from them
            try:
                predicted = host_ops.output_types(node.op, args, node.attrs)
            except RuntimeShape:   # typed by running (control flow, sequences): ONNX's inference types them
                continue
        actual = [(tuple(o.shape), o.dtype.name) for o in outs]
        assert predicted[:len(actual)] == actual, f"{case.name}: rule says {predicted}, the op made {actual}"
        checked.add(node.op)
    assert checked, "no node test exercised a record"
