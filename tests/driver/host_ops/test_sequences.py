"""Sequence and optional ops against onnxruntime: sequences as graph inputs and outputs, positions
from either end, split and concat in every form, SequenceMap over sequences and tensors, optionals
with and without a value; a position outside the sequence is named."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from ort_oracle import IR_VERSION, ort_run, vdla_run



def SEQ(name: str, elem: int, shape):
    """A sequence-typed value."""
    return h.make_value_info(name, h.make_sequence_type_proto(h.make_tensor_type_proto(elem, shape)))


def _model(nodes, inputs, outputs, initializers=(), opset=18):
    graph = h.make_graph(nodes, "seq", inputs, outputs, initializer=list(initializers))
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], ir_version=IR_VERSION)


def _same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


def _check(model, feeds):
    want = ort_run(model, feeds)
    for kernels in (True, False):
        got = vdla_run(model, feeds, kernels=kernels)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)


def _tensors(rng, *shapes):
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


@pytest.mark.parametrize("position", [None, 0, 2, -1, -3])
def test_insert_at_a_position_from_either_end_then_read_and_erase(rng, position):
    ins = ["s", "t"] + ([] if position is None else ["p"])
    nodes = [h.make_node("SequenceInsert", ins, ["s2"]), h.make_node("SequenceAt", ["s2", "at"], ["y"]),
             h.make_node("SequenceErase", ["s2", "at"], ["s3"]), h.make_node("SequenceLength", ["s3"], ["n"])]
    inputs = [SEQ("s", T.FLOAT, None), h.make_tensor_value_info("t", T.FLOAT, [2]),
              h.make_tensor_value_info("at", T.INT64, [])]
    feeds = {"s": _tensors(rng, 2, 2, 2), "t": _tensors(rng, 2)[0], "at": np.array(-2, np.int64)}
    if position is not None:
        inputs.append(h.make_tensor_value_info("p", T.INT64, []))
        feeds["p"] = np.array(position, np.int64)
    model = _model(nodes, inputs, [SEQ("s2", T.FLOAT, None), h.make_tensor_value_info("y", T.FLOAT, None),
                                   SEQ("s3", T.FLOAT, None), h.make_tensor_value_info("n", T.INT64, [])])
    _check(model, feeds)


@pytest.mark.parametrize("split, keepdims", [(None, 1), (None, 0), (2, 1), ([1, 3], 1)])
def test_split_to_sequence_and_concat_back(rng, split, keepdims):
    ins = ["x"] + ([] if split is None else ["split"])
    inits = [] if split is None else [h.make_tensor("split", T.INT64, np.shape(split), np.ravel(split).tolist())]
    nodes = [h.make_node("SplitToSequence", ins, ["s"], axis=1, keepdims=keepdims),
             h.make_node("ConcatFromSequence", ["s"], ["cat"], axis=1, new_axis=0),
             h.make_node("ConcatFromSequence", ["s"], ["stacked"], axis=-1, new_axis=1)]
    outputs = [SEQ("s", T.FLOAT, None), h.make_tensor_value_info("cat", T.FLOAT, None),
               h.make_tensor_value_info("stacked", T.FLOAT, None)]
    if split is None and not keepdims:
        nodes, outputs = nodes[:1] + nodes[2:], outputs[:1] + outputs[2:]     # concat needs the axis back
    model = _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [3, 4])], outputs, inits)
    x = _tensors(rng, (3, 4))[0]
    if np.ndim(split) == 1:     # chunks of different sizes cannot stack
        model.graph.node.pop()
        model.graph.output.pop()
    _check(model, {"x": x})


def test_construct_and_map_over_a_sequence_with_a_tensor_beside_it(rng):
    body = h.make_graph([h.make_node("Add", ["e", "b"], ["o1"]), h.make_node("Shape", ["e"], ["o2"])], "body",
                        [h.make_tensor_value_info("e", T.FLOAT, None), h.make_tensor_value_info("b", T.FLOAT, [3])],
                        [h.make_tensor_value_info("o1", T.FLOAT, None), h.make_tensor_value_info("o2", T.INT64, None)])
    nodes = [h.make_node("SequenceConstruct", ["a", "c"], ["s"]),
             h.make_node("SequenceMap", ["s", "b"], ["sums", "shapes"], body=body)]
    model = _model(nodes, [h.make_tensor_value_info(n, T.FLOAT, s) for n, s in (("a", [2, 3]), ("c", [4, 3]),
                                                                                ("b", [3]))],
                   [SEQ("sums", T.FLOAT, None), SEQ("shapes", T.INT64, None)])
    a, c, b = _tensors(rng, (2, 3), (4, 3), 3)
    _check(model, {"a": a, "c": c, "b": b})


def test_an_empty_sequence_grows_and_an_optional_holds_a_value_or_none(rng):
    nodes = [h.make_node("SequenceEmpty", [], ["e"], dtype=T.FLOAT),
             h.make_node("SequenceInsert", ["e", "x"], ["s"]),
             h.make_node("Optional", ["x"], ["o"]),
             h.make_node("OptionalHasElement", ["o"], ["has"]),
             h.make_node("OptionalGetElement", ["o"], ["back"]),
             h.make_node("OptionalHasElement", [""], ["none"])]
    model = _model(nodes, [h.make_tensor_value_info("x", T.FLOAT, [2])],
                   [SEQ("s", T.FLOAT, None), h.make_tensor_value_info("has", T.BOOL, []),
                    h.make_tensor_value_info("back", T.FLOAT, [2]), h.make_tensor_value_info("none", T.BOOL, [])])
    _check(model, {"x": _tensors(rng, 2)[0]})


def test_a_position_outside_the_sequence_is_named(rng):
    from vdla.driver.executor import StepError
    model = _model([h.make_node("SequenceAt", ["s", "p"], ["y"])],
                   [SEQ("s", T.FLOAT, None), h.make_tensor_value_info("p", T.INT64, [])],
                   [h.make_tensor_value_info("y", T.FLOAT, None)])
    with pytest.raises(StepError, match=r"position 3 is outside \[-2, 1\] for a sequence of 2"):
        vdla_run(model, {"s": _tensors(rng, 2, 2), "p": np.array(3, np.int64)})
