"""ONNX frontend: what it accepts, and that what it rejects is named precisely."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.frontend import InvalidModelError, UnsupportedModelError, import_onnx
from vdla.compiler.graph import GraphError, optimize, run_reference


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(nodes, "t", inputs, outputs, initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def _vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def test_unsupported_op_names_node_op_opset_and_the_supported_list():
    m = _model([helper.make_node("StringNormalizer", ["x"], ["y"], name="my_erf")], [_vi("x", [2])], [_vi("y", [2])])
    with pytest.raises(UnsupportedModelError) as err:
        import_onnx(m)
    msg = str(err.value)
    assert "'my_erf'" in msg and "StringNormalizer" in msg and "opset 17" in msg and "Conv" in msg


def test_unsupported_attribute_value_is_an_error_not_ignored():
    m = _model([helper.make_node("Pad", ["x", "p"], ["y"], name="pad0", mode="bogus")],
               [_vi("x", [2]), _vi("p", [2], TensorProto.INT64)], [_vi("y", [4])])
    with pytest.raises(UnsupportedModelError, match="pad0.*mode 'bogus'"):
        import_onnx(m)


def test_batch_norm_running_statistics_need_training_mode():
    """(training mode itself runs as a host step: tests/driver/host_ops/test_nn.py)"""
    ins = [_vi(n, [3]) for n in "sbmv"]
    node = helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], name="bn")
    m = _model([node], [_vi("x", [1, 3, 2, 2])] + ins, [_vi("y", [1, 3, 2, 2])])
    with pytest.raises(UnsupportedModelError, match="bn.*running mean and variance outputs need training_mode=1"):
        import_onnx(m)


def test_an_op_younger_than_the_models_opset_is_named_with_the_opset_it_needs():
    m = _model([helper.make_node("Mish", ["x"], ["y"], name="act")], [_vi("x", [2])], [_vi("y", [2])], opset=17)
    with pytest.raises(InvalidModelError, match="'act'.*Mish is not defined at opset 17.*from opset 18"):
        import_onnx(m)


def test_opset_out_of_range():
    from vdla.compiler.frontend.onnx_import import MAX_OPSET
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])], opset=MAX_OPSET + 1)
    with pytest.raises(UnsupportedModelError, match=f"opset {MAX_OPSET + 1} is outside"):
        import_onnx(m)


def test_the_oldest_opsets_are_upgraded_too():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])], opset=1)
    assert import_onnx(m).opset == 11


def test_old_opsets_are_upgraded(rng):
    import onnxruntime as ort
    # opset 9: Clip bounds are attributes, Softmax flattens to 2-D
    nodes = [helper.make_node("Clip", ["x"], ["c"], min=-0.5, max=0.5),
             helper.make_node("Softmax", ["c"], ["y"], axis=1)]
    m = _model(nodes, [_vi("x", [2, 3, 4])], [_vi("y", [2, 3, 4])], opset=9)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    g = import_onnx(m)
    assert g.opset == 11
    np.testing.assert_allclose(run_reference(optimize(g), {"x": x})["y"], want, rtol=1e-5, atol=1e-6)


def test_symbolic_dims_need_an_input_shape():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["batch", 4])], [_vi("y", ["batch", 4])])
    with pytest.raises(UnsupportedModelError, match="'x'.*symbolic.*batch.*input_shapes"):
        import_onnx(m)
    g = import_onnx(m, input_shapes={"x": [3, 4]})
    assert g.types["x"].shape == (3, 4)


def test_constant_nodes_and_initializers_become_constants(rng):
    c = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.float32([1, 2])))
    m = _model([c, helper.make_node("Add", ["x", "c"], ["y"])], [_vi("x", [2])], [_vi("y", [2])])
    g = import_onnx(m)
    assert "c" in g.constants and [n.op for n in g.nodes] == ["Add"]
    x = rng.standard_normal(2).astype(np.float32)
    np.testing.assert_array_equal(run_reference(optimize(g), {"x": x})["y"], x + np.float32([1, 2]))


def test_external_data_is_loaded(tmp_path, rng):
    w = rng.standard_normal((64, 64)).astype(np.float32)
    m = _model([helper.make_node("MatMul", ["x", "w"], ["y"])], [_vi("x", [1, 64])], [_vi("y", [1, 64])],
               inits=[numpy_helper.from_array(w, "w")])
    path = tmp_path / "m.onnx"
    onnx.save_model(m, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="weights.bin", size_threshold=0)
    assert (tmp_path / "weights.bin").stat().st_size >= w.nbytes
    g = import_onnx(path)
    np.testing.assert_array_equal(g.constants["w"], w)


def test_softmax_before_opset_13_flattens_to_2d(rng):
    import onnxruntime as ort
    m = _model([helper.make_node("Softmax", ["x"], ["y"], axis=1)], [_vi("x", [2, 3, 4])],
               [_vi("y", [2, 3, 4])], opset=11)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    want = ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]
    got = run_reference(optimize(import_onnx(m)), {"x": x})["y"]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_file_that_is_not_onnx_and_a_missing_file_are_named(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a protobuf \xff\xff\xff")
    with pytest.raises(InvalidModelError, match=r"bad\.onnx is not a readable ONNX model"):
        import_onnx(bad)
    with pytest.raises(FileNotFoundError, match=r"missing\.onnx: no such model file"):
        import_onnx(tmp_path / "missing.onnx")


def test_an_empty_file_is_named_as_empty_not_as_opset_0(tmp_path):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(InvalidModelError, match=r"empty\.onnx is empty \(0 bytes\), not an ONNX model"):
        import_onnx(empty)


def test_a_model_without_an_opset_says_so(tmp_path):
    bare = onnx.ModelProto()   # parses from b"" or from stray bytes; no graph, no opset_import
    with pytest.raises(InvalidModelError, match="no graph and no opset_import: not an ONNX model"):
        import_onnx(bare)
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])])
    del m.opset_import[:]
    path = tmp_path / "noopset.onnx"
    onnx.save(m, str(path))
    with pytest.raises(InvalidModelError, match=r"noopset\.onnx declares no opset for the default ONNX domain"):
        import_onnx(path)


def test_an_initializer_whose_data_does_not_fit_its_dims_is_named():
    w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "conv.weight")
    w.raw_data = w.raw_data[:20]
    m = _model([helper.make_node("Conv", ["x", "conv.weight"], ["y"])], [_vi("x", [1, 3, 8, 8])],
               [_vi("y", [1, 4, 6, 6])], inits=[w])
    with pytest.raises(InvalidModelError, match=r"initializer 'conv\.weight'.*float32\[4, 3, 3, 3\].*20 bytes.*432"):
        import_onnx(m)


def test_a_constant_node_whose_data_does_not_fit_is_named():
    value = numpy_helper.from_array(np.ones(4, np.float32), "v")
    value.raw_data = value.raw_data[:6]
    m = _model([helper.make_node("Constant", [], ["c"], name="k", value=value),
                helper.make_node("Add", ["x", "c"], ["y"])], [_vi("x", [4])], [_vi("y", [4])])
    with pytest.raises(InvalidModelError, match=r"'k'.*attribute 'value'.*6 bytes.*16"):
        import_onnx(m)


def test_input_shapes_must_name_inputs_and_keep_their_rank():
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", ["n", 4])], [_vi("y", ["n", 4])])
    with pytest.raises(GraphError, match=r"\['z'\].*not inputs.*\['x'\]"):
        import_onnx(m, input_shapes={"z": [1, 4]})
    with pytest.raises(GraphError, match=r"'x'.*\[1, 4, 1\] \(rank 3\).*declares rank 2"):
        import_onnx(m, input_shapes={"x": [1, 4, 1]})
    with pytest.raises(InvalidModelError, match=r"'x'.*\[-1, 4\].*negative"):
        import_onnx(m, input_shapes={"x": [-1, 4]})
