"""Pareto fronts: the points no other point beats on every objective (all minimized)."""
from __future__ import annotations


def dominates(a: tuple, b: tuple) -> bool:
    """a is at least as good as b everywhere and better somewhere (smaller is better)."""
    return all(x <= y for x, y in zip(a, b)) and any(x < y for x, y in zip(a, b))


def pareto_front(rows: list[dict], keys: tuple[str, ...]) -> list[int]:
    """Indices (ascending) of the rows on the front of `keys`; rows lacking a key (None or
    absent) take no part. Equal rows are all kept: neither dominates the other.

    Rows are visited in lexicographic order of their objectives, so a row can only be
    dominated by one visited before it, and only the front found so far has to be checked."""
    scored = [(tuple(row[k] for k in keys), i) for i, row in enumerate(rows)
              if all(row.get(k) is not None for k in keys)]
    scored.sort()
    front = []
    for score, index in scored:
        if not any(dominates(kept, score) for kept, _ in front):
            front.append((score, index))
    return sorted(index for _, index in front)
