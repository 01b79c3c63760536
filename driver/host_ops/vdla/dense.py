"""VdlaDense: a matrix product of packed int8 rows with packed int8 weights on the GEMM core,
with its ALU epilogue."""
from __future__ import annotations

import numpy as np

from .exact import int_matmul
from .packed import epilogue, extras, table_operand
from .semantics import VdlaSemantics


def dense(inputs, attrs):
    x, w = inputs[0], inputs[1]
    ep = attrs["epilogue"]
    mb, kb, batch, block = x.shape
    a = x.transpose(0, 2, 1, 3).reshape(mb * batch, kb * block)
    nb = w.shape[0]
    bmat = w.transpose(0, 2, 1, 3).reshape(nb * block, kb * block)
    bias, scale, residual, rscale = extras(inputs, ep)
    if residual is not None:
        residual = residual.transpose(0, 2, 1, 3).reshape(mb * batch, nb * block)
    y = epilogue(int_matmul(a, bmat.T), ep, bias, scale, residual, rscale, table_operand(inputs, ep))
    return [np.ascontiguousarray(y.reshape(mb, batch, nb, block).transpose(0, 2, 1, 3))]


SEMANTICS = VdlaSemantics("VdlaDense", dense)
