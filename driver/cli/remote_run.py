"""`vdla run M.vdla --remote HOST:PORT --key-file F --server-key S.pub [--input ...] [--output DIR]
[--profile]`: the run happens on the device of a board's `vdla serve` (vdla.driver.remote);
inputs, outputs and the profile table and chart are handled here as in a local run."""
from __future__ import annotations

import os

import numpy as np

from .array_files import describe, input_feeds
from .options import OptionError

# what needs the executor or device in this process, with the reason given to the user
_LOCAL_ONLY = {"trace": "--trace", "timeline": "--timeline", "timeline_layer": "--timeline-layer",
               "hw_config": "--hw-config"}


def run_remote(args) -> int:
    from vdla.driver.artifact import from_bytes
    from vdla.driver.artifact_trust import TrustPolicy
    from vdla.driver.remote import RemoteRunner, parse_address
    from vdla.driver.remote.client import read_artifact

    if not args.remote:
        raise OptionError("--key-file, --server-key and --insecure-loopback are for a remote run: give --remote "
                          "HOST:PORT too")
    for attr, flag in _LOCAL_ONLY.items():
        if getattr(args, attr, None):
            raise OptionError(f"{flag} is not available with --remote: it needs the device in this process "
                              "(run it on the board, or without --remote)")
    host, port = parse_address(args.remote)
    runner = RemoteRunner(host, port, args.key_file, server_key=args.server_key,
                          insecure_loopback=args.insecure_loopback)
    data = read_artifact(args.artifact)
    policy = TrustPolicy.for_cli(args.trust_key, args.allow_hmac)
    plan = from_bytes(data, args.artifact, policy).plan   # checked here too, before it is uploaded
    feeds = input_feeds(plan.inputs, args.input, args.seed)
    result = runner.run_detailed(data, feeds, profile=args.profile, repeat=max(1, args.repeat), threads=args.threads)
    print(f"ran on vdla serve at {runner.address}: {result.device}")
    for name, value in result.outputs.items():
        print(f"{name}: {describe(value)}")
        if args.output:
            os.makedirs(args.output, exist_ok=True)
            np.save(os.path.join(args.output, f"{name.replace('/', '_')}.npy"), value)
    print(f"latency: {np.median(result.times_s) * 1e3:.3f} ms (median of {len(result.times_s)}, on the server)")
    if result.profile is not None:
        from vdla.driver.profile import format_table, write_chart
        print(format_table(result.profile))
        if any(r.placement == "vdla" for r in result.profile):
            chart = os.path.join(args.output or ".", "profile.png")
            os.makedirs(os.path.dirname(chart) or ".", exist_ok=True)
            write_chart(result.profile, chart, result.chart_title)
            print(f"chart written to {chart}")
    return 0
