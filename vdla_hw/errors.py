"""The root of vdla's errors and its categories, one per exit code of the `vdla` command.

Every error vdla raises is a VdlaError of one category below; the category says whose move it
is (fix the model, the config or flags, report a compiler bug, rebuild the artifact, look at the
device, look at the server), and the CLI exits with its code (vdla.driver.cli.exit_codes):

    ModelError       3   the model or its inputs are invalid, or use what vdla does not implement
    ConfigError      4   a hardware config, target or option value vdla cannot use
    CompileError     5   the compiler or a build tool (LLVM, the linker, ptxas, Yosys) could not
                         do it for a model it accepted
    ArtifactError    6   an artifact or instruction stream is malformed, damaged, untrusted, or
                         built for other hardware or another machine
    RunError         7   running failed: the accelerator (its simulator, RTL, a board), a GPU,
                         the CPU kernels or a step of the plan
    RemoteError      8   a `vdla serve` could not be reached, or refused or failed the run

Anything else (a file not found, a flag out of range) exits 1, argparse's usage errors 2.
A class keeps the builtin base its callers caught before the tree (GraphError is a ModelError
and a ValueError). vdla.hw is the lowest package: every other one may import this module.
"""
from __future__ import annotations


class VdlaError(Exception):
    """Root of every error vdla raises; catch a category below rather than this."""


class ModelError(VdlaError):
    """The model or its inputs are invalid, or use something vdla does not implement."""


class ConfigError(VdlaError):
    """A hardware config, compile target or option value that vdla cannot use."""


class CompileError(VdlaError):
    """The compiler, or a tool it runs, could not compile a model it accepted."""


class ArtifactError(VdlaError, ValueError):
    """An artifact or instruction stream is malformed, truncated, tampered with, or built for
    something else. A ValueError too: the driver's ArtifactError was one before the tree."""


class RunError(VdlaError):
    """Running failed: on the accelerator (simulated, RTL or a board), a GPU, the CPU kernels,
    or in a step of the plan."""


class RemoteError(VdlaError):
    """Remote execution failed; the subclass (vdla.driver.remote.errors) says why. `kind` is
    the word that names it on the wire; `from_peer` is True for an error the other side
    reported in an error message (the stream is still in step after it)."""
    kind = "internal"
    from_peer = False


CATEGORIES = (ModelError, ConfigError, CompileError, ArtifactError, RunError, RemoteError)
