"""`vdla compile MODEL.onnx -o MODEL.vdla --target cpu|TRIPLE|vdla|cuda`: compile a model into an
artifact. --target vdla puts what the accelerator can run on it (int8, quantized with
--calibrate samples) and the rest on the CPU (this machine, or --host-triple); --target cuda
what the GPU path takes on an NVIDIA GPU (PTX), the rest on the host (numpy)."""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

from ..options import OptionError


def _shape_arg(text: str) -> tuple[str, list[int]]:
    name, _, dims = text.partition("=")
    if not dims:
        raise OptionError(f"--input-shape {text!r}: expected NAME=D0,D1,... (e.g. input=1,3,224,224)")
    return name, [int(d) for d in dims.split(",")]


def add_parser(sub):
    p = sub.add_parser("compile", help="compile an ONNX model into a .vdla artifact")
    p.add_argument("model", help="ONNX model file (external data is read next to it)")
    p.add_argument("-o", "--output", required=True, help="artifact file to write")
    p.add_argument("--target", default="cpu",
                   help="cpu (this machine), an LLVM triple to cross-compile for (e.g. aarch64-linux-gnu), vdla "
                        "(the accelerator, with CPU fallback) or cuda (an NVIDIA GPU; cuda:sm_NN names its "
                        "architecture)")
    p.add_argument("--gpu-arch", default=None, metavar="sm_NN",
                   help="with --target cuda: the GPU architecture to emit PTX for (sm_70, sm_75, sm_80, sm_86, "
                        "sm_89, sm_90); default this machine's GPU, else sm_80")
    p.add_argument("--calibrate", default=None, metavar="CALIB.npz",
                   help="--target vdla: calibration samples, one array per model input named like the input, "
                        "first axis = samples")
    p.add_argument("--host-triple", default=None, metavar="TRIPLE",
                   help="--target vdla: the CPU the fallback nodes run on, e.g. armv7a-linux-gnueabihf "
                        "(PYNQ-Z1/Z2) or aarch64-linux-gnu; default this machine")
    p.add_argument("--hw-config", default=None,
                   help="hardware config (preset name or JSON) recorded and checked at load")
    p.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                   help="fix a symbolic input shape (repeatable)")
    p.add_argument("--threads", type=int, default=None, help="threads the kernels use")
    p.add_argument("--jobs", type=int, default=None,
                   help="processes compiling the kernels side by side (CPU kernels, and the accelerator's "
                        "default schedules timed on the simulator; default: one per core)")
    p.add_argument("--no-kernels", action="store_true",
                   help="run every op as a numpy host step (no tensor compiler)")
    p.add_argument("--sign-key", default=None, metavar="KEY",
                   help="sign the artifact with this Ed25519 private key (vdla keygen -o KEY), so runs that trust "
                        "KEY.pub accept it")
    p.add_argument("--link", action=argparse.BooleanOptionalAction, default=None,
                   help="link the CPU kernels into a shared object that the runtime loads without llvmlite (needs "
                        "the ziglang package); default: for a board's triple (--target or --host-triple), not "
                        "for this machine")
    p.add_argument("--vta-compat", action="store_true",
                   help="with --target vdla: instruction streams VTA's hardware computes the same "
                        "(no VDLA extensions; check one with vdla disasm --check vta)")
    p.add_argument("--tuning", default=None, metavar="TUNING.json",
                   help="schedules from a tuning log (vdla tune) for the kernels it has records of: accelerator "
                        "kernels on this hardware (--target vdla), CPU kernels on this CPU; the others keep their "
                        "default schedules")
    return p


def run(args) -> int:
    from vdla.compiler.compile_model import compile_model  # lazy: the runtime needs no compiler
    start = time.perf_counter()
    _check_output(args.model, args.output)     # before the compile, which may take minutes
    sign_key = None
    if args.sign_key:   # read first: a bad key file should not cost a whole compile
        from vdla.driver.artifact_trust import read_signing_key
        sign_key = read_signing_key(args.sign_key, what="--sign-key")
    jobs = (os.cpu_count() or 1) if args.jobs is None else args.jobs
    if jobs < 1:
        raise OptionError(f"--jobs {jobs}: at least one process compiles the kernels")
    shapes = dict(_shape_arg(s) for s in args.input_shape)
    calibration = None
    if args.calibrate:
        import numpy as np
        if args.target != "vdla":
            raise OptionError("--calibrate quantizes for the accelerator: use it with --target vdla")
        with np.load(args.calibrate) as data:
            calibration = {k: data[k] for k in data.files}
    if args.host_triple and args.target != "vdla":
        raise OptionError("--host-triple names the CPU beside the accelerator: use it with --target vdla "
                          "(for a CPU-only artifact give the triple as --target)")
    target = args.target
    if args.gpu_arch:
        if target not in ("cuda", f"cuda:{args.gpu_arch}"):
            raise OptionError(f"--gpu-arch {args.gpu_arch} names a GPU: use it with --target cuda "
                              f"(got --target {target})")
        target = f"cuda:{args.gpu_arch}"
    tuning = None
    if args.tuning:     # read first: a bad tuning log should not cost a whole compile
        from vdla.compiler.tune import load_tuning
        tuning = load_tuning(args.tuning)
    with warnings.catch_warnings(record=True) as caught:      # the compiler's cautions, one line each
        warnings.simplefilter("always", UserWarning)
        artifact = compile_model(args.model, target=target, hw_config=args.hw_config or
                                 ("pynq" if args.target == "vdla" else None), input_shapes=shapes,
                                 kernels=not args.no_kernels, threads=args.threads, calibration=calibration,
                                 host_triple=args.host_triple, vta_compat=args.vta_compat, tuning=tuning,
                                 link=args.link, jobs=jobs, progress=None)
    for caution in caught:
        if issubclass(caution.category, UserWarning):
            print(f"vdla compile: warning: {caution.message}", file=sys.stderr)
        else:
            warnings.showwarning(caution.message, caution.category, caution.filename, caution.lineno)
    size = artifact.save(args.output, sign_key=sign_key)
    plan = artifact.plan
    kinds = [s.kind for s in plan.steps]
    vdla = f"{kinds.count('vdla')} accelerator, " if "vdla" in kinds else ""
    vdla += f"{kinds.count('gpu')} gpu, " if "gpu" in kinds else ""
    views = f"{kinds.count('alias')} alias" + (f", {kinds.count('parts')} in place" if "parts" in kinds else "")
    print(f"wrote {args.output}: {size} bytes, {len(kinds)} steps ({vdla}{kinds.count('kernel')} kernel, "
          f"{kinds.count('host')} host, {views}), arena {plan.arena_bytes} B "
          f"(one buffer per tensor: {plan.naive_bytes} B), {time.perf_counter() - start:.2f} s"
          + (f", signed by key {sign_key.key_id.hex()}" if sign_key else ""))
    _print_cpu_layers(artifact)
    _print_host_steps(artifact)
    if tuning is not None:
        _print_tuning(args.tuning, tuning, artifact)
    return 0


def _check_output(model: str, output: str) -> None:
    """-o must be a regular file (or none yet), and not the model being compiled."""
    from vdla.driver.artifact import output_target
    target = output_target(output)
    if os.path.exists(target) and os.path.exists(model) and os.path.samefile(model, target):
        raise OptionError(f"-o {output} is the model being compiled: writing the artifact there would destroy it; "
                          "give another output path")


def _print_cpu_layers(artifact, shown: int = 4) -> None:
    """--target vdla: the layers with MACs that stay on the CPU, and why (no tiling fits the
    SRAMs, cheaper on the CPU, ...); vdla info lists every node."""
    place = artifact.header.get("compile", {}).get("placement") or {}
    layers = [(name, p) for name, p in place.items() if p["device"] == "cpu" and p.get("macs")]
    if not layers:
        return
    total = sum(p.get("macs", 0) for p in place.values()) or 1
    on_cpu = sum(p["macs"] for _, p in layers)
    listed = "; ".join(f"{name} ({p['reason']})" for name, p in layers[:shown])
    more = f"; and {len(layers) - shown} more (vdla info)" if len(layers) > shown else ""
    print(f"on the CPU: {len(layers)} layer(s), {on_cpu / total:.1%} of the MACs: {listed}{more}")


def _print_host_steps(artifact, shown: int = 4) -> None:
    """The nodes that run as numpy host steps and why (an op without a kernel, a shape known
    only at run time, control flow); vdla info --steps lists every one."""
    reasons = artifact.header.get("compile", {}).get("host_reasons") or {}
    if not reasons:
        return
    ops = {s.name: s.op for s in artifact.plan.steps}
    listed = "; ".join(f"{name} ({ops.get(name, '?')}): {why}" for name, why in list(reasons.items())[:shown])
    more = f"; and {len(reasons) - shown} more (vdla info --steps)" if len(reasons) > shown else ""
    print(f"host steps: {len(reasons)}: {listed}{more}")


def _print_tuning(path, tuning, artifact) -> None:
    from vdla.hw import load_config
    info = artifact.header["compile"]
    if "tuning" in info:
        used = info["tuning"]
        other = tuning.other_hardware(load_config(artifact.header["hardware"]["config"]))
        print(f"tuning: {used.get('tuned', 0)} of {used.get('tunable', 0)} conv/dense kernels scheduled from "
              f"{path}, {used.get('default', 0)} on default schedules (no record for their layer on this hardware)"
              + (f"; {other} record(s) for other hardware ignored" if other else ""))
    cpu = info.get("cpu_tuning", {})
    others = cpu.get("other_hosts", {})
    if cpu.get("tunable") or others:
        ignored = ", ".join(f"{n} on {host}" for host, n in others.items())
        print(f"tuning: {cpu.get('tuned', 0)} of {cpu.get('tunable', 0)} CPU kernels scheduled from {path}, "
              f"{cpu.get('default', 0)} on default schedules (no record for them on this CPU)"
              + (f"; record(s) measured on another CPU ignored: {ignored}" if ignored else ""))
