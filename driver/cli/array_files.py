"""Arrays on the command line: `--input NAME=FILE.npy` files read with errors that name the flag
and the file, random inputs (seeded) for the rest of a model's inputs, and the one-line summary
`vdla run` prints per output. A local and a remote run take their inputs alike."""
from __future__ import annotations

import os
import zipfile

import numpy as np
from numpy.lib.format import MAGIC_PREFIX as NPY_MAGIC

from vdla.hw.errors import ModelError


class InputFileError(ModelError, ValueError):
    """An --input file that is not one plain .npy array (or no file at all): the model's input
    is what is wrong, so the CLI exits with the model category's code."""


def read_input(item: str) -> tuple[str, np.ndarray]:
    """NAME=FILE.npy -> (NAME, the array). Anything but one plain .npy array is an error that
    says what the file holds (an .npz archive and its arrays, a pickle, not numpy at all)."""
    name, _, path = item.partition("=")
    if not name or not path:
        raise InputFileError(f"--input {item!r}: expected NAME=FILE.npy")
    where = f"--input {name}={path}"
    if not os.path.isfile(path):
        raise InputFileError(f"{where}: no such file")
    if zipfile.is_zipfile(path):
        with np.load(path, allow_pickle=False) as archive:
            names = ", ".join(archive.files) or "none"
        raise InputFileError(f"{where}: the file is an .npz archive (arrays: {names}), not a .npy array; save "
                             f"the one array as .npy (numpy.save(FILE, archive[KEY]))")
    with open(path, "rb") as f:
        magic = f.read(len(NPY_MAGIC))
    if magic != NPY_MAGIC:
        raise InputFileError(f"{where}: the file is not a .npy array (it lacks numpy's .npy header; write it "
                             "with numpy.save)")
    try:
        value = np.load(path, allow_pickle=False)
    except ValueError as exc:
        what = "holds Python objects (a pickle), which vdla does not load" if "pickle" in str(exc) else \
            f"is not a readable .npy array ({exc})"
        raise InputFileError(f"{where}: the file {what}") from None
    except (OSError, EOFError) as exc:
        raise InputFileError(f"{where}: cannot read the file: {exc}") from None
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
        raise InputFileError(f"{where}: the file holds {getattr(value, 'dtype', type(value).__name__)} data; "
                             "expected a numeric array")
    return name, value


def random_input(spec, rng: np.random.Generator) -> np.ndarray:
    """An array for an input spec (the plan's ValueSpec: shape, dtype): normal floats, 0/1
    booleans, integers within int8's range (a quantized model's)."""
    dtype = np.dtype(spec.dtype)
    if dtype.kind == "f":
        return rng.standard_normal(spec.shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, spec.shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -128), min(info.max, 127) + 1, spec.shape).astype(dtype)


def input_feeds(inputs, items, seed) -> dict[str, np.ndarray]:
    """The model's `inputs` (the plan's specs) from `--input` items, the others random from
    `seed`; an item that names none of them is an error listing them."""
    given = dict(read_input(item) for item in items)
    rng = np.random.default_rng(seed)
    feeds = {s.name: given.pop(s.name) if s.name in given else random_input(s, rng) for s in inputs}
    if given:
        raise InputFileError(f"unknown inputs {sorted(given)}; the model's inputs are {list(feeds)}")
    return feeds


def describe(value: np.ndarray) -> str:
    """dtype[shape] with min, max and mean; an empty array has none of them."""
    head = f"{value.dtype}{list(value.shape)}"
    if value.size == 0:
        return f"{head} (empty)"
    return (f"{head} min {value.min():.6g} max {value.max():.6g} "
            f"mean {value.astype(np.float64).mean():.6g}")
