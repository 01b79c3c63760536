"""group_signature decides which top-level nodes share one compiled kernel (CPU) or GPU program:
groups that differ only in a 0-d constant (compiled into the kernel as a literal) must not."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from emulated_gpu import EmulatedGpu, record_gpu_kernels
from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.lower_graph import group_signature, kernel_args
from vdla.driver.executor import Executor


def _two_scaled_relus(first=2.0, second=3.0):
    """relu(x) * first, transposed twice, then relu(.) * second: two Relu+Mul groups alike but
    for their scalar."""
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Mul", ["r", "c1"], ["a"]),
             helper.make_node("Transpose", ["a"], ["t"], perm=[1, 0]),
             helper.make_node("Transpose", ["t"], ["t2"], perm=[1, 0]),
             helper.make_node("Relu", ["t2"], ["r2"]), helper.make_node("Mul", ["r2", "c2"], ["y"])]
    inits = [numpy_helper.from_array(np.array(first, np.float32), "c1"),
             numpy_helper.from_array(np.array(second, np.float32), "c2")]
    graph = helper.make_graph(nodes, "scaled_relus",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 8])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _relu_mul_signatures(model):
    g = optimize(import_onnx(model), layout=False)
    groups = [n for n in g.nodes if n.attrs.get("pattern") == "Relu+Mul"]
    assert len(groups) == 2
    return [group_signature(g, n, kernel_args(g, n)) for n in groups]


def test_groups_differing_in_a_literal_have_different_signatures():
    first, second = _relu_mul_signatures(_two_scaled_relus(2.0, 3.0))
    assert first != second
    first, second = _relu_mul_signatures(_two_scaled_relus(2.0, 2.0))
    assert first == second


def test_cpu_kernels_keep_each_groups_literal():
    model = _two_scaled_relus()
    x = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)
    got = Executor(compile_model(model, target="cpu")).run({"x": x})["y"]
    np.testing.assert_allclose(got, np.maximum(x, 0) * 6, rtol=1e-6)


def test_gpu_programs_keep_each_groups_literal(monkeypatch):
    model = _two_scaled_relus()
    with record_gpu_kernels(monkeypatch) as kernels:
        artifact = compile_model(model, target="cuda")
    assert sum(p["name"].endswith("relu_mul") for p in artifact.header["gpu_programs"]) == 2
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    got = Executor(artifact, device=EmulatedGpu(kernels)).run({"x": x})["y"]
    np.testing.assert_allclose(got, np.maximum(x, 0) * 6, rtol=1e-6)


def _square():
    graph = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["y"])], "square",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 5])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_tensor_read_twice_is_one_kernel_argument(monkeypatch):
    """Mul(x, x): x is one argument (a second placeholder would be read by nothing, which the
    GPU schedule refuses), on the CPU and the GPU path."""
    g = optimize(import_onnx(_square()), layout=False)
    assert kernel_args(g, g.nodes[0]) == ["x", "y"]
    x = np.random.default_rng(2).standard_normal((3, 5)).astype(np.float32)
    cpu = compile_model(_square(), target="cpu")
    assert not cpu.header["compile"]["host_reasons"]
    np.testing.assert_allclose(Executor(cpu).run({"x": x})["y"], x * x, rtol=1e-6)
    with record_gpu_kernels(monkeypatch) as kernels:
        gpu = compile_model(_square(), target="cuda")
    assert not gpu.header["compile"]["host_reasons"]
    np.testing.assert_allclose(Executor(gpu, device=EmulatedGpu(kernels)).run({"x": x})["y"], x * x, rtol=1e-6)
