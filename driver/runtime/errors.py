"""Errors of the instruction-stream runtime: each names the call, the field and the fix."""
from vdla.hw.errors import RunError


class RuntimeStreamError(RunError):
    """A runtime call would produce an illegal or wrong instruction stream."""


class KernelError(RuntimeStreamError):
    """A micro-op kernel is malformed, too large, out of range or breaks the accumulator hazard rule."""


class DependenceError(RuntimeStreamError):
    """A dependence push/pop names an illegal direction, or tokens do not balance at synchronize."""
