"""Anchor-specific CPU schedules (filled in by the performance work; generic otherwise)."""
from __future__ import annotations


def try_schedule_anchor(s, outputs, target):
    """Schedule a recognized anchor and the outputs it feeds; return the stages handled."""
    return set()
