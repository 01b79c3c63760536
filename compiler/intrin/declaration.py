"""A tensor intrinsic, declared once: what it computes, where its operands may live, how
they must be laid out, and the rule that emits it.

- semantics: a te compute over placeholder operands (`output`), e.g.
  c[j] = sum_k a[k] * b[k, j]; tensorize matches a scheduled loop region against it;
- legality: the shapes and dtypes of the declaration, `scopes` (allowed memory scopes per
  operand name), `strides` (required element strides per operand dimension, None = any);
- emission: `emit(inputs, output, accumulate) -> Stmt`, given BufferRegion views of the
  matched buffers (backing buffer, flat element offset, strides per operand dimension).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..te.tensor import Tensor


@dataclass
class BufferRegion:
    """The part of `buffer` an intrinsic operand covers: element (i0, i1, ...) of the operand
    is buffer element offset + sum(i_d * strides[d]) (flat, row-major buffer)."""
    operand: str
    buffer: object
    offset: object          # flat element offset (loop-IR expression of the outer loops)
    strides: tuple
    shape: tuple

    @property
    def scope(self):
        return self.buffer.scope

    @property
    def dtype(self):
        return self.buffer.dtype

    def flat(self, *idx):
        """Flat element index of operand element idx (expressions or ints)."""
        from ..tir import expr as E
        out = self.offset
        for i, s in zip(idx, self.strides):
            out = out + E.to_expr(i, "int32") * s
        return out


@dataclass
class TensorIntrin:
    name: str
    output: Tensor
    emit: Callable
    scopes: dict = field(default_factory=dict)     # operand name -> tuple of allowed scopes
    strides: dict = field(default_factory=dict)    # operand name -> per-dim stride or None
    doc: str = ""
    # operands read at data-dependent places (a lookup table): the intrinsic takes the whole
    # buffer, and tensorize checks only their scope
    gathers: frozenset = frozenset()

    @property
    def inputs(self):
        return list(self.output.op.input_tensors)

    @property
    def op(self):
        return self.output.op

    def operand_names(self):
        return [t.name for t in self.inputs] + [self.output.name]

    def __post_init__(self):
        for name in list(self.scopes) + list(self.strides):
            if name not in self.operand_names():
                raise ValueError(f"intrinsic {self.name}: constraint on unknown operand {name!r}; "
                                 f"operands are {self.operand_names()}")
        if any(len(t.shape) == 0 for t in self.inputs):
            raise ValueError(f"intrinsic {self.name}: operands must have at least one dimension")


def declare_intrin(name, output, emit, scopes=None, strides=None, doc="", gathers=()):
    """Declare a tensor intrinsic (see module docstring)."""
    return TensorIntrin(name, output, emit, dict(scopes or {}), dict(strides or {}), doc, frozenset(gathers))
