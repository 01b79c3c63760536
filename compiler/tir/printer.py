"""The loop IR's readable text form (Python-like).

Each node class states its own form beside its definition (an expression's __repr__, a
statement's lines()), so printing needs no case per node type here and the node modules need
no printer to implement repr.
"""
from __future__ import annotations


def to_text(node) -> str:
    """A kernel, statement or expression as text."""
    return repr(node)
