"""Tensor intrinsics: declared once (semantics, legality, emission), matched by tensorize."""
