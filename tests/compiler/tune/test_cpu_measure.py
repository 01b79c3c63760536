"""The CPU tuner's probe and output arrays are laid out as the executor lays out its buffers."""
from vdla.compiler import te
from vdla.compiler.tune.cpu_measure import probe_inputs, zeroed


def test_probe_and_output_arrays_are_aligned_as_the_executors_buffers():
    """A candidate is timed on buffers aligned as the executor's (kernel_abi.BUFFER_ALIGN): on
    numpy's 16-byte alignment every 64-byte vector access would span two cache lines."""
    from vdla.driver.kernel_abi import BUFFER_ALIGN
    tensors = [te.placeholder(shape, dtype, f"t{k}") for k, (shape, dtype) in
               enumerate([((3, 5), "float32"), ((7,), "int8"), ((1, 2, 9, 16), "uint8")])]
    for a in probe_inputs(tensors, 0) + zeroed(tensors):
        assert a.ctypes.data % BUFFER_ALIGN == 0 and a.flags.c_contiguous and a.flags.writeable
