"""Tensor intrinsics: declared once (semantics, legality, emission), matched by tensorize."""
from .declaration import TensorIntrin, BufferRegion, declare_intrin
from .tensorize import TensorizeError
from . import cpu, vdla
