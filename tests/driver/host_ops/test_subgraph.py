"""A control-flow op's subgraph document (host_ops.subgraph): arrays keep their dtype and shape
through the artifact's JSON, outer values come in as captures, and a wrong call is named."""
import json

import numpy as np
import pytest

from vdla.driver.host_ops.subgraph import Subgraph, decode, encode


def _doc():
    """y = (x + c) * outer, with c an int32 constant cast to float."""
    return {"inputs": ["x"], "outputs": ["y"],
            "nodes": [{"op": "Cast", "name": "cast", "inputs": ["c"], "outputs": ["cf"], "attrs": {"to": "float32"}},
                      {"op": "Add", "name": "add", "inputs": ["x", "cf"], "outputs": ["s"], "attrs": {}},
                      {"op": "Mul", "name": "mul", "inputs": ["s", "outer"], "outputs": ["y"], "attrs": {}}],
            "constants": {"c": np.arange(6, dtype=np.int32).reshape(2, 3)}}


def test_arrays_keep_dtype_and_shape_through_json():
    again = decode(json.loads(json.dumps(encode(_doc()))))
    c = again["constants"]["c"]
    assert c.dtype == np.int32 and c.shape == (2, 3)
    assert decode(encode({"a": [np.float16(1.5)]})) == {"a": [1.5]}


def test_a_subgraph_reads_its_feeds_and_the_captured_outer_values():
    x = np.ones((2, 3), np.float32)
    (y,) = Subgraph(json.loads(json.dumps(encode(_doc())))).run({"outer": np.float32(2)}, [x])
    np.testing.assert_array_equal(y, (x + np.arange(6).reshape(2, 3)) * 2)


def test_a_wrong_number_of_feeds_and_an_unknown_op_are_named():
    with pytest.raises(ValueError, match=r"takes 1 inputs \(x\), got 2"):
        Subgraph(encode(_doc())).run({"outer": 1.0}, [1, 2])
    doc = _doc()
    doc["nodes"][0]["op"] = "Frobnicate"
    with pytest.raises(ValueError, match="subgraph node 'cast': no host implementation of op 'Frobnicate'"):
        Subgraph(encode(doc)).run({"outer": 1.0}, [np.ones((2, 3), np.float32)])
