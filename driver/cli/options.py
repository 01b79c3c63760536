"""The options several `vdla` commands share, stated once: --debug on every command (added by
build_parser) and --device on those that run on an accelerator, whose kinds are
vdla.driver.devices.KINDS."""
from __future__ import annotations

import argparse

from vdla.driver.devices import DEFAULT_DEVICE, DEVICE_KINDS, KINDS
from vdla.hw.errors import ConfigError


class OptionError(ConfigError, ValueError):
    """A command-line option's value, or a combination of options, that cannot be used: the
    message names the flags and what they need."""


def add_debug_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--debug", action="store_true", help="show tracebacks")


def add_device_option(parser: argparse.ArgumentParser, *, default: str | None = DEFAULT_DEVICE, gpu: bool = False,
                      more_help: str = "") -> None:
    """--device, one of the accelerator kinds; with gpu=True also cuda or cuda:N (the CUDA GPU
    of ordinal N) for the GPU steps of a --target cuda artifact."""
    kinds = [KINDS[name].description + (" (default)" if name == DEFAULT_DEVICE else "") for name in DEVICE_KINDS]
    help_text = f"where accelerator steps run: {', '.join(kinds[:-1])} or {kinds[-1]}{more_help}"
    if gpu:
        parser.add_argument("--device", type=_device_or_gpu, default=default,
                            metavar="{" + ",".join((*DEVICE_KINDS, "cuda", "cuda:N")) + "}", help=help_text)
    else:
        parser.add_argument("--device", choices=DEVICE_KINDS, default=default, help=help_text)


def cuda_ordinal(name: str | None) -> int | None:
    """cuda -> 0, cuda:N -> N; None for any other name."""
    if name == "cuda":
        return 0
    if name and name.startswith("cuda:") and name[5:].isdigit():
        return int(name[5:])
    return None


def _device_or_gpu(text: str) -> str:
    if text in DEVICE_KINDS or cuda_ordinal(text) is not None:
        return text
    raise argparse.ArgumentTypeError(f"invalid device {text!r}: choose {', '.join(DEVICE_KINDS)}, cuda or cuda:N "
                                     "(N: a CUDA GPU's ordinal)")
