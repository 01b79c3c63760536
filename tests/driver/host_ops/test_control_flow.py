"""If, Loop and Scan against onnxruntime: subgraphs that read outer values, conditions and trip
counts known only at run time, early exit, scan outputs, reversed and transposed scans, nesting."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper as h

from ort_oracle import IR_VERSION, ort_run, vdla_run
from vdla.compiler.frontend import import_onnx


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = h.make_graph(nodes, "cf", inputs, outputs, initializer=list(initializers))
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], ir_version=IR_VERSION)


def _check(model, feeds, rtol=1e-6):
    want = ort_run(model, feeds)
    for kernels in (True, False):
        got = vdla_run(model, feeds, kernels=kernels)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.dtype, g.shape, w.dtype, w.shape)
            np.testing.assert_allclose(g, w, rtol=rtol)


def _if_model():
    """y = If(cond): then x * scale (scale an outer constant), else x + x; then y - 1 outside."""
    then_g = h.make_graph([h.make_node("Mul", ["x", "scale"], ["t"])], "then", [],
                          [h.make_tensor_value_info("t", T.FLOAT, [2, 3])])
    else_g = h.make_graph([h.make_node("Add", ["x", "x"], ["e"])], "else", [],
                          [h.make_tensor_value_info("e", T.FLOAT, [2, 3])])
    nodes = [h.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
             h.make_node("Sub", ["y", "one"], ["z"])]
    return _model(nodes, [h.make_tensor_value_info("cond", T.BOOL, []), h.make_tensor_value_info("x", T.FLOAT, [2, 3])],
                  [h.make_tensor_value_info("z", T.FLOAT, [2, 3])],
                  [h.make_tensor("scale", T.FLOAT, [], [3.0]), h.make_tensor("one", T.FLOAT, [], [1.0])])


@pytest.mark.parametrize("cond", [True, False])
def test_if_reads_outer_values_and_takes_the_branch_the_run_time_condition_picks(cond):
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    _check(_if_model(), {"cond": np.array(cond), "x": x})


def test_if_reads_its_captures_as_inputs():
    graph = import_onnx(_if_model())
    (node,) = [n for n in graph.nodes if n.op == "If"]
    assert node.inputs == ["cond", "x", "scale"] and node.attrs["captures"] == ["x", "scale"]


def _loop_model():
    """Sum of x * i over i < min(M, first i where the running sum passes `limit`), and the running
    sums as a scan output: trip count and condition both known only at run time."""
    body = h.make_graph(
        [h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
         h.make_node("Mul", ["x", "fi"], ["xi"]),
         h.make_node("Add", ["acc_in", "xi"], ["acc_out"]),
         h.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
         h.make_node("Less", ["total", "limit"], ["go"]),
         h.make_node("Identity", ["acc_out"], ["scan"])],
        "body",
        [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
         h.make_tensor_value_info("acc_in", T.FLOAT, [3])],
        [h.make_tensor_value_info("go", T.BOOL, []), h.make_tensor_value_info("acc_out", T.FLOAT, [3]),
         h.make_tensor_value_info("scan", T.FLOAT, [3])])
    nodes = [h.make_node("Loop", ["M", "keep", "acc0"], ["acc", "sums"], body=body),
             h.make_node("Shape", ["sums"], ["n"])]
    return _model(nodes, [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("keep", T.BOOL, []),
                          h.make_tensor_value_info("acc0", T.FLOAT, [3]), h.make_tensor_value_info("x", T.FLOAT, [3]),
                          h.make_tensor_value_info("limit", T.FLOAT, [])],
                  [h.make_tensor_value_info("acc", T.FLOAT, [3]), h.make_tensor_value_info("sums", T.FLOAT, None),
                   h.make_tensor_value_info("n", T.INT64, [2])])


@pytest.mark.parametrize("trips, keep, limit", [(5, True, 1e9), (6, True, 20.0), (0, True, 1e9), (4, False, 1e9)])
def test_loop_runs_to_its_run_time_trip_count_or_condition(trips, keep, limit):
    feeds = {"M": np.array(trips, np.int64), "keep": np.array(keep), "acc0": np.array([1, -2, 0.5], np.float32),
             "x": np.array([1, 2, 3], np.float32), "limit": np.array(limit, np.float32)}
    model = _loop_model()
    if trips == 0 or not keep:     # onnxruntime cannot shape an empty scan output: compare the rest
        got = vdla_run(model, feeds)
        assert got[1].shape == (0, 3) and list(got[2]) == [0, 3]
        np.testing.assert_array_equal(got[0], feeds["acc0"])
        return
    _check(model, feeds)


def _scan_model(in_axis, in_reverse, out_axis, out_reverse):
    """A running sum over rows (or columns) of x, forward or reversed, stacked on either axis."""
    body = h.make_graph([h.make_node("Add", ["s_in", "row"], ["s_out"]), h.make_node("Mul", ["s_out", "w"], ["y"])],
                        "body", [h.make_tensor_value_info("s_in", T.FLOAT, [4]),
                                 h.make_tensor_value_info("row", T.FLOAT, [4])],
                        [h.make_tensor_value_info("s_out", T.FLOAT, [4]), h.make_tensor_value_info("y", T.FLOAT, [4])])
    node = h.make_node("Scan", ["s0", "x"], ["s", "ys"], body=body, num_scan_inputs=1,
                       scan_input_axes=[in_axis], scan_input_directions=[in_reverse],
                       scan_output_axes=[out_axis], scan_output_directions=[out_reverse])
    x_shape = [3, 4] if in_axis == 0 else [4, 3]
    return _model([node], [h.make_tensor_value_info("s0", T.FLOAT, [4]), h.make_tensor_value_info("x", T.FLOAT, x_shape),
                           h.make_tensor_value_info("w", T.FLOAT, [4])],
                  [h.make_tensor_value_info("s", T.FLOAT, [4]), h.make_tensor_value_info("ys", T.FLOAT, None)]), x_shape


@pytest.mark.parametrize("in_axis, in_reverse, out_axis, out_reverse",
                         [(0, 0, 0, 0), (0, 1, 0, 0), (1, 0, 1, 0), (0, 0, -1, 1), (1, 1, 0, 1)])
def test_scan_directions_and_axes(in_axis, in_reverse, out_axis, out_reverse):
    model, x_shape = _scan_model(in_axis, in_reverse, out_axis, out_reverse)
    rng = np.random.default_rng(3)
    _check(model, {"s0": rng.standard_normal(4).astype(np.float32),
                   "x": rng.standard_normal(x_shape).astype(np.float32),
                   "w": rng.standard_normal(4).astype(np.float32)})


def test_an_if_nested_in_a_loop_reads_the_bodys_values_and_the_outer_graphs():
    """The inner If reads the body's iteration number and the outer graph's `x`: the capture lists
    reach through both scopes."""
    then_g = h.make_graph([h.make_node("Add", ["acc_in", "x"], ["t"])], "then", [],
                          [h.make_tensor_value_info("t", T.FLOAT, [2])])
    else_g = h.make_graph([h.make_node("Sub", ["acc_in", "x"], ["e"])], "else", [],
                          [h.make_tensor_value_info("e", T.FLOAT, [2])])
    body = h.make_graph(
        [h.make_node("Mod", ["i", "two"], ["r"]), h.make_node("Equal", ["r", "zero"], ["even"]),
         h.make_node("If", ["even"], ["acc_out"], then_branch=then_g, else_branch=else_g),
         h.make_node("Identity", ["c"], ["c_out"])],
        "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c", T.BOOL, []),
                 h.make_tensor_value_info("acc_in", T.FLOAT, [2])],
        [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("acc_out", T.FLOAT, [2])])
    model = _model([h.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)],
                   [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("acc0", T.FLOAT, [2]),
                    h.make_tensor_value_info("x", T.FLOAT, [2])],
                   [h.make_tensor_value_info("acc", T.FLOAT, [2])],
                   [h.make_tensor("two", T.INT64, [], [2]), h.make_tensor("zero", T.INT64, [], [0])])
    _check(model, {"M": np.array(5, np.int64), "acc0": np.array([0.5, 1], np.float32),
                   "x": np.array([2, -3], np.float32)})
