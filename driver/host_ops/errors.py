"""Errors of the host ops; the compiler's shape inference turns OperandError into an error that
names the graph node."""
from vdla.hw.errors import ModelError


class HostOpError(ModelError, ValueError):
    """A host op cannot run: no implementation of the op, or operands it cannot take."""


class OperandError(HostOpError):
    """An attribute or constant operand value that the op's ONNX definition forbids for these input
    shapes; the message names the attribute and says what was expected."""


class Unimplemented(HostOpError):
    """An operand value or input the op's ONNX definition allows but vdla does not implement (an
    output shape that depends on run-time values, a case where the specification's readings
    disagree); the compiler's shape inference reports it as UnsupportedModelError naming the node."""


class RuntimeShape(Unimplemented):
    """An output shape that depends on values known only at run time (NonZero of an activation):
    the compiler makes the node a host step whose outputs the executor allocates as they come."""
