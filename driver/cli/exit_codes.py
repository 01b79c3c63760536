"""The exit status of `vdla` for an error: one per category of vdla.hw.errors (its docstring
states the same table for the reader), 1 for any other exception."""
from __future__ import annotations

from vdla.hw.errors import ArtifactError, CompileError, ConfigError, ModelError, RemoteError, RunError

EXIT_CODES = {ModelError: 3, ConfigError: 4, CompileError: 5, ArtifactError: 6, RunError: 7, RemoteError: 8}
OTHER_ERROR = 1


def exit_code(exc: BaseException) -> int:
    """The code of the first category in the exception's class order (a class that is two
    categories at once would be exited as the first of its bases)."""
    for cls in type(exc).__mro__:
        if cls in EXIT_CODES:
            return EXIT_CODES[cls]
    return OTHER_ERROR
