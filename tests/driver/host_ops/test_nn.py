"""MaxPool's Indices output (vdla.driver.host_ops.nn; the other nn ops are checked by the onnx
node tests): the flat index of each window's maximum in the unpadded input, row-major or with the
spatial axes column-major (storage_order 1), against onnxruntime; it runs as a host step, and
the MaxPool's values stay those of the kernel-less form."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize


@pytest.mark.parametrize("shape, attrs", [
    ((2, 3, 7, 6), {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}),
    ((1, 2, 9, 9), {"kernel_shape": [2, 3], "strides": [2, 2], "dilations": [2, 1], "ceil_mode": 1}),
    ((1, 2, 11), {"kernel_shape": [3], "strides": [2], "pads": [1, 2]}),
    ((1, 1, 4, 5, 6), {"kernel_shape": [2, 2, 3], "strides": [1, 2, 2]})], ids=["2d-pads", "2d-dilated-ceil", "1d", "3d"])
@pytest.mark.parametrize("storage_order", [0, 1])
def test_indices_equal_onnxruntime(rng, shape, attrs, storage_order):
    x = rng.permutation(np.arange(np.prod(shape), dtype=np.float32)).reshape(shape)   # no ties
    check_node("MaxPool", {"x": x}, {**attrs, "storage_order": storage_order}, n_outputs=2)


def test_the_indices_output_makes_the_node_a_host_step(rng):
    model = node_model("MaxPool", {"x": rng.standard_normal((1, 1, 4, 4)).astype(np.float32)},
                       {"kernel_shape": [2, 2]}, n_outputs=2)
    (node,) = optimize(import_onnx(model)).nodes
    assert node.host_only == "MaxPool's Indices output is computed on the host (no kernel writes it)"


@pytest.mark.parametrize("momentum", [0.9, 0.3])
def test_batch_norm_in_training_mode_equals_onnxruntime(rng, momentum):
    """The batch's mean and population variance normalize it; the running ones move toward them."""
    c = 3
    inputs = {"x": rng.standard_normal((4, c, 5, 6)).astype(np.float32) * 2 + 1,
              "scale": rng.uniform(0.5, 1.5, c).astype(np.float32), "b": rng.standard_normal(c).astype(np.float32),
              "mean": rng.standard_normal(c).astype(np.float32), "var": rng.uniform(0.5, 2, c).astype(np.float32)}
    check_node("BatchNormalization", inputs, {"training_mode": 1, "momentum": momentum, "epsilon": 1e-3},
               n_outputs=3, constants={"scale", "b", "mean", "var"}, rtol=1e-4, atol=1e-5)
