"""Knob and layer dataclasses from a tuning log's JSON objects, type-checked field by field."""
from __future__ import annotations

from dataclasses import fields

from .errors import TuningFileError

_TYPES = {   # a field's annotation -> (does a JSON value fit it, what was expected)
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "tuple": (lambda v: isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v),
              "a list of integers"),
}


def build_dataclass(cls, doc, where: str):
    """A knobs or layer dataclass from its JSON object; TuningFileError saying what is wrong
    (the dataclasses check ranges, not types: a tile of "4" is no tile)."""
    if not isinstance(doc, dict):
        raise TuningFileError(f"{where} must be a JSON object of {cls.__name__} fields, got {doc!r}")
    known = {f.name: f.type for f in fields(cls)}
    unknown = sorted(set(doc) - set(known))
    if unknown:
        raise TuningFileError(f"{where}: unknown {cls.__name__} field(s) {', '.join(unknown)}; "
                              f"expected {', '.join(known)}")
    for name, value in doc.items():
        fits, expected = _TYPES[known[name]]
        if not fits(value):
            raise TuningFileError(f"{where}: {name} must be {expected}, got {value!r}")
    values = {k: tuple(v) if known[k] == "tuple" else v for k, v in doc.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise TuningFileError(f"{where}: not a valid {cls.__name__}: {exc}") from None
