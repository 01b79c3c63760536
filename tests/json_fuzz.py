"""Random and mutated JSON documents for the readers' fuzz tests (sweep, tuning log, hardware
config): a reader given any of them either accepts it or raises its own error, which names the
file; never another exception, never a hang.

    for doc in json_fuzz.documents(valid_doc, seed=0, count=300): ...

The mutations of a valid document are those a careless or hostile hand makes: a key deleted,
a value replaced by a random one at any depth (wrong type, huge or negative number, NaN,
infinity, long string, empty or deeply nested container), an unknown key added, the whole
document wrapped in a list; then wholly random documents; then nesting past the JSON reader's
recursion limit, which only a file can hold."""
from __future__ import annotations

import copy
import os
import json
import math

import numpy as np

# values that break readers that assume a type or a range
EDGE = [None, True, False, 0, -1, 1, 2 ** 31, -2 ** 63, 2 ** 64, 1e308, -1e-308, math.nan, math.inf, -math.inf,
        0.5, "", "0", "4", "pynq", "x" * 10_000, "\u0000", [], {}, [[]], {"": {}}, [1] * 1000]


def random_value(rng: np.random.Generator, depth: int = 3):
    kind = rng.integers(0, 6 if depth > 0 else 4)
    if kind == 0:
        return EDGE[rng.integers(len(EDGE))]
    if kind == 1:
        return int(rng.integers(-2 ** 40, 2 ** 40)) if rng.random() < 0.5 else int(rng.integers(-3, 40))
    if kind == 2:
        return float(rng.standard_normal() * 10 ** rng.integers(0, 12))
    if kind == 3:
        return "".join(chr(c) for c in rng.integers(32, 0x2FF, rng.integers(0, 12)))
    if kind == 4:
        return [random_value(rng, depth - 1) for _ in range(rng.integers(0, 5))]
    return {f"k{rng.integers(0, 9)}": random_value(rng, depth - 1) for _ in range(rng.integers(0, 5))}


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            yield from _paths(value, prefix + (index,))


def _mutate(doc, rng: np.random.Generator):
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    path = paths[rng.integers(len(paths))] if paths else ()
    action = rng.integers(0, 4)
    if action == 3 or not path:
        return [doc] if rng.random() < 0.5 else {**doc, f"unknown{rng.integers(9)}": random_value(rng)} \
            if isinstance(doc, dict) else random_value(rng)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if action == 0 and isinstance(parent, dict):
        del parent[path[-1]]
    elif action == 0 and isinstance(parent, list):
        parent.pop(path[-1])
    else:
        parent[path[-1]] = random_value(rng)
    return doc


def documents(valid, seed: int = 0, count: int = 300):
    """`count` mutations of `valid` (one to three each), then `count // 3` random documents."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        doc = valid
        for _ in range(rng.integers(1, 4)):
            doc = _mutate(doc, rng)
        yield doc
    for _ in range(count // 3):
        yield random_value(rng, 4)


def write(path, doc) -> None:
    """JSON as Python writes it (NaN and Infinity included: readers meet them in the wild)."""
    with open(path, "w") as f:
        json.dump(doc, f, allow_nan=True)


NESTED = ["[" * 100_000, '{"a":' * 100_000, "[" * 5000 + "]" * 5000]


def check_reader(read, path, valid, error: type, seed: int, count: int = 300) -> None:
    """`read(path)` on every document of documents(valid) and on NESTED: it returns, or raises
    `error` naming the file; any other exception fails the caller's test."""
    name = os.path.basename(os.fspath(path))
    for k, doc in enumerate(documents(valid, seed=seed, count=count)):
        write(path, doc)
        try:
            read(path)
        except error as exc:
            assert name in str(exc), (k, doc, exc)
    for text in NESTED:
        with open(path, "w") as f:
            f.write(text)
        try:
            read(path)
        except error as exc:
            assert name in str(exc), (text[:20], exc)
        else:
            raise AssertionError(f"{text[:20]}...: read without an error")
