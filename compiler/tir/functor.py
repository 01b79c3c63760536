"""Generic traversal of IR trees: post-order visit and rebuild-on-change mutation.

Nodes declare their children in `_fields`; a child is a Node, a tuple of Nodes, or
something else (ignored). Rebuilding copies the node and replaces changed children only,
so unchanged subtrees keep their identity.
"""
from __future__ import annotations

import copy

from .expr import Node, Var


def visit(node, fn):
    """Call fn(n) on every node of the tree, children before parents."""
    if isinstance(node, (tuple, list)):
        for c in node:
            visit(c, fn)
        return
    if not isinstance(node, Node):
        return
    for _, child in node.children():
        visit(child, fn)
    fn(node)


def _map_child(child, fn):
    if isinstance(child, Node):
        return fn(child)
    if isinstance(child, tuple) and any(isinstance(c, Node) for c in child):
        return tuple(fn(c) if isinstance(c, Node) else c for c in child)
    return child


def map_children(node, fn):
    """A shallow copy of `node` with every child c replaced by fn(c) (same node if no change)."""
    changed = {}
    for name, child in node.children():
        new = _map_child(child, fn)
        if new is not child and not (isinstance(child, tuple) and new == child and
                                     all(a is b for a, b in zip(new, child))):
            changed[name] = new
    if not changed:
        return node
    out = copy.copy(node)
    out.__dict__.pop("_linear", None)        # arith.linear's cached form of the old children
    for k, v in changed.items():
        setattr(out, k, v)
    if hasattr(out, "_retype"):
        out._retype()
    return out


def transform(node, post):
    """Bottom-up rewrite: children first, then post(new_node) -> replacement or None."""
    def rec(n):
        n2 = map_children(n, rec)
        r = post(n2)
        return n2 if r is None else r
    return rec(node)


def substitute(node, mapping: dict):
    """Replace Vars (by identity) with expressions."""
    if not mapping:
        return node

    def post(n):
        if isinstance(n, Var):
            return mapping.get(n)
        return None
    return transform(node, post)


def free_vars(node) -> set:
    out = set()
    visit(node, lambda n: out.add(n) if isinstance(n, Var) else None)
    return out


def uses_var(node, var) -> bool:
    found = []
    visit(node, lambda n: found.append(1) if n is var else None)
    return bool(found)
