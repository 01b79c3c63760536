"""Elementwise, broadcast and layout stages (with their fused producers inlined): one output
element per thread, consecutive threads on consecutive elements (coalesced)."""
from __future__ import annotations

from .common import bind_flat


def schedule_injective(s, stage):
    bind_flat(stage)
