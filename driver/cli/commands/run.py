"""`vdla run MODEL.vdla [--input NAME=FILE.npy ...] [--output DIR] [--device sim|rtl|pynq|cuda[:N]]
[--profile]`: run an artifact; its accelerator steps run on --device (the cycle-exact
simulator by default), the GPU steps of a `--target cuda` artifact on CUDA GPU N (cuda = cuda:0,
the default); a device of the other kind is refused. Inputs not given are filled with seeded random values. --profile
prints a per-layer table (placement, accelerator cycles with two and one virtual threads,
ms at the accelerator's clock, GEMM utilization, CPU ms) and writes profile.png beside the
outputs (or in the current folder). --timeline FILE.png draws the accelerator's load / compute /
store lanes over time with the token waits (vdla.driver.timeline); --trace writes the same lanes
for Perfetto."""
from __future__ import annotations

import os
import time

import numpy as np

from vdla.driver.devices import DEFAULT_DEVICE, DEVICE_KINDS

from ..array_files import describe, input_feeds
from ..options import OptionError, add_device_option, cuda_ordinal


def add_parser(sub):
    p = sub.add_parser("run", help="run a .vdla artifact")
    p.add_argument("artifact")
    p.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy",
                   help="an input from a .npy file (repeatable); others are random")
    p.add_argument("--output", default=None, metavar="DIR", help="write outputs as DIR/NAME.npy")
    p.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    p.add_argument("--repeat", type=int, default=1, help="runs to time (median is printed)")
    p.add_argument("--profile", action="store_true",
                   help="per-layer table and chart (accelerator vs CPU, with 1 and 2 virtual threads)")
    # default None: with --remote the server's --device decides, so only an explicit one is refused
    add_device_option(p, default=None, gpu=True,
                      more_help="; where a --target cuda artifact's GPU steps run: CUDA GPU N (cuda: GPU 0, the "
                                "default) (not with --remote: the server's --device decides)")
    p.add_argument("--trace", default=None, metavar="FILE",
                   help="write a Perfetto trace of the accelerator's instructions, each naming its graph node")
    p.add_argument("--timeline", default=None, metavar="FILE.png",
                   help="draw the load / compute / store lanes of the accelerator's run over time, token waits "
                        "hatched (simulator device)")
    p.add_argument("--timeline-layer", default=None, metavar="NODE",
                   help="with --timeline: only this accelerator step (a graph node name)")
    p.add_argument("--threads", type=int, default=None, help="threads for parallel kernel loops")
    p.add_argument("--hw-config", default=None, help="check the artifact was built for this config")
    p.add_argument("--trust-key", action="append", default=[], metavar="KEY",
                   help="run only artifacts signed with this public key (FILE.pub of `vdla keygen -o FILE`; "
                        "repeatable; default: the key files in "
                        "VDLA_TRUST_KEY; with neither, unsigned artifacts run: an artifact is code)")
    p.add_argument("--allow-hmac", action="store_true",
                   help="also trust legacy HMAC key files given as --trust-key (symmetric: whoever verifies can "
                        "sign; for artifacts signed before Ed25519, this release only; or VDLA_ALLOW_HMAC=1)")
    p.add_argument("--remote", default=None, metavar="HOST:PORT",
                   help="run on the device of a board's `vdla serve` (its --device) instead of here")
    p.add_argument("--key-file", default=None, metavar="FILE",
                   help="with --remote: this host's private key (vdla keygen -o FILE; the server lists FILE.pub "
                        "with --client-key), or a legacy shared secret")
    p.add_argument("--server-key", default=None, metavar="PUB",
                   help="with --remote and an Ed25519 --key-file: the server's public key (its --key-file's .pub); "
                        "a server holding another key is refused before anything is sent")
    p.add_argument("--insecure-loopback", action="store_true",
                   help="with --remote: no key, for a server on this machine started with --insecure-loopback")
    return p


def _gpu_device(artifact, name: str | None):
    """The CUDA GPU for an artifact with GPU steps (None without any); a device name of the other
    kind is an error either way, not silently ignored."""
    gpu_steps = sum(s.kind == "gpu" for s in artifact.plan.steps)
    ordinal = cuda_ordinal(name)
    if not gpu_steps:
        if ordinal is not None:
            raise OptionError(f"--device {name} runs the GPU steps of an artifact compiled with --target cuda, and "
                              "this artifact has none; leave --device out, or give sim, rtl or pynq for its "
                              "accelerator steps")
        return None
    if name is not None and ordinal is None:
        raise OptionError(f"--device {name} runs accelerator steps, and this artifact's {gpu_steps} steps run on a "
                          "GPU (compiled with --target cuda); give --device cuda or cuda:N (the GPU's ordinal), "
                          "or leave --device out for GPU 0")
    from vdla.driver.devices.cuda import CudaDevice
    return CudaDevice(ordinal or 0)


def _device(artifact, kind: str, trace: str | None):
    """The accelerator for an artifact with accelerator steps (None without any); `trace` names
    the flag that needs the simulator's instruction trace, if any."""
    if not any(s.kind == "vdla" for s in artifact.plan.steps):
        if trace:
            raise OptionError(f"{trace} shows accelerator instructions, and this artifact has no accelerator step")
        return None
    from vdla.driver.artifact_errors import ArtifactError
    from vdla.driver.devices import device_kind, open_device_for
    if trace and kind != "sim":
        raise OptionError(f"{trace} needs the simulator device (--device sim)")
    if device_kind(kind).has_own_config:   # a board: the executor checks the artifact against its config
        return open_device_for(kind, None)
    hardware = artifact.header.get("hardware") or {}
    if "config" not in hardware:     # (the executor says the same; no default board stands in for it)
        raise ArtifactError("the artifact has accelerator steps but records no hardware config; recompile it")
    return open_device_for(kind, hardware["config"], **({"trace": True} if trace else {}))


def _print_latency(times, executor, device, kind: str) -> None:
    """What a run took, labelled with what it measures: on a board or the CPU the wall time is
    the inference's; on the simulator or the RTL it is this machine simulating the accelerator,
    whose own time is its cycles at its clock (the CPU steps' time comes on top)."""
    from vdla.driver.devices import device_kind
    from vdla.hw.parts import clock_label
    wall = f"{np.median(times) * 1e3:.3f} ms (median of {len(times)})"
    if device is None or device_kind(kind).has_own_config:
        print(f"latency: {wall}, wall time on this machine")
        return
    cycles = sum(launch.cycles for launch in executor.last_launches.values())
    clock = device.config.clock_mhz
    print(f"host wall time: {wall}, simulating the accelerator ({kind}) on this machine")
    print(f"accelerator time: {cycles:,} cycles = {cycles / (clock * 1e3):.3f} ms at {clock_label(clock)} "
          f"(simulated; the CPU steps' time is not in it)")


def run(args) -> int:
    if args.remote or args.key_file or args.server_key or args.insecure_loopback:
        if args.device is not None:
            raise OptionError(f"--device {args.device} is not available with --remote: the device is the one the "
                              "board's `vdla serve --device` opened; leave --device out")
        from ..remote_run import run_remote
        return run_remote(args)
    from vdla.driver.artifact import load
    from vdla.driver.artifact_trust import TrustPolicy
    from vdla.driver.executor import Executor
    hw = None
    if args.hw_config:
        from vdla.hw import load_config
        hw = load_config(args.hw_config)
    policy = TrustPolicy.for_cli(args.trust_key, args.allow_hmac)
    artifact = load(args.artifact, policy=policy)
    if args.timeline_layer and not args.timeline:
        raise OptionError("--timeline-layer picks the step --timeline draws: give --timeline FILE.png too")
    needs_trace = "--trace" if args.trace else "--timeline" if args.timeline else None
    gpu = _gpu_device(artifact, args.device)
    device = _device(artifact, args.device if args.device in DEVICE_KINDS else DEFAULT_DEVICE, needs_trace)
    executor = Executor(artifact, hw_config=hw, threads=args.threads, device=gpu or device)
    plan = executor.artifact.plan
    feeds = input_feeds(plan.inputs, args.input, args.seed)
    times = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        outputs = executor.run(feeds, profile=args.profile)
        times.append(time.perf_counter() - start)
    if args.trace:
        from vdla.driver.profile import write_trace
        n = write_trace(executor, args.trace)
        print(f"trace: {n} events written to {args.trace} (open in ui.perfetto.dev)")
    if args.timeline:
        from vdla.driver.timeline import write_timeline
        lanes = write_timeline(executor, args.timeline, args.timeline_layer,
                               f"{plan.name}{' / ' + args.timeline_layer if args.timeline_layer else ''} on "
                               f"{device.config.name} @ {device.config.clock_mhz} MHz")
        print(f"timeline written to {args.timeline}: " + ", ".join(
            f"{lane} busy {v['busy']:.0%} (token wait {v['wait']:.0%})" for lane, v in lanes.items()))
    for name, value in outputs.items():
        print(f"{name}: {describe(value)}")
        if args.output:
            os.makedirs(args.output, exist_ok=True)
            np.save(os.path.join(args.output, f"{name.replace('/', '_')}.npy"), value)
    _print_latency(times, executor, device, args.device if args.device in DEVICE_KINDS else DEFAULT_DEVICE)
    if args.profile and device is not None:
        from vdla.driver.profile import format_table, profile_run, write_chart
        _, rows = profile_run(artifact, feeds, device)
        print(format_table(rows))
        chart = os.path.join(args.output or ".", "profile.png")
        os.makedirs(os.path.dirname(chart) or ".", exist_ok=True)
        write_chart(rows, chart, f"{plan.name} on {device.config.name} @ {device.config.clock_mhz} MHz")
        print(f"chart written to {chart}")
    elif args.profile:
        total = sum(t.seconds for t in executor.last_timings) or 1.0
        for t in sorted(executor.last_timings, key=lambda t: -t.seconds):
            print(f"  {t.seconds * 1e3:9.3f} ms {100 * t.seconds / total:5.1f}%  {t.kind:<6} {t.op:<28} {t.name}")
    return 0
