"""`vdla info MODEL.vdla`: what an artifact holds and was built for."""
from __future__ import annotations

import json
from collections import Counter


def add_parser(sub):
    p = sub.add_parser("info", help="describe a .vdla artifact")
    p.add_argument("artifact")
    p.add_argument("--steps", action="store_true", help="list every step")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object as the last line: the header, and per node its placement, "
                        "reason, MACs and quantization error")
    return p


def run(args) -> int:
    from vdla.driver.artifact import load
    artifact = load(args.artifact)
    h = artifact.header
    placement = h.get("compile", {}).get("placement", {})
    nodes = [{"name": n, "placement": p["device"], "reason": p["reason"], "macs": p["macs"],
              "sqnr_db": p.get("sqnr_db"), "fused_into": p.get("fused_into")} for n, p in placement.items()]
    if args.json:
        print(json.dumps({"header": h, "nodes": nodes}, sort_keys=True))
        return 0
    plan = h["plan"]
    print(f"model {plan['name']}  (artifact format {h['format_version']}, created {h.get('created', '?')})")
    print("  versions: " + ", ".join(f"{k} {v}" for k, v in h["versions"].items()))
    t = h["target"]
    if t.get("kind") == "cuda":
        programs = h.get("gpu_programs", [])
        print(f"  target: cuda {t.get('arch')}, {len(programs)} GPU programs "
              f"({sum(len(p['kernels']) for p in programs)} kernels)")
    else:
        print(f"  target: {t.get('kind')} {t.get('triple', '(no kernels)')} cpu {t.get('cpu', '-')}, "
              f"{len(t.get('features', []))} CPU features required, {t.get('threads', '-')} threads")
    print(f"  hardware config: {h['hardware'] or 'none'}")
    for spec in plan["inputs"]:
        print(f"  input  {spec['name']}: {spec['dtype']}{spec['shape']}")
    for spec in plan["outputs"]:
        print(f"  output {spec['name']}: {spec['dtype']}{spec['shape']}")
    kinds = Counter(s["kind"] for s in plan["steps"])
    print(f"  steps: {len(plan['steps'])} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))})")
    for triple, entry in h["kernels"].items():
        code = sum(e["nbytes"] for k, e in h["object_files"].items() if k.startswith(triple + "/"))
        print(f"  kernels for {triple}: {len(entry['names'])} functions, {code} bytes of object code")
    nparams = sum(e["nbytes"] for e in h["params"].values())
    print(f"  parameters: {len(h['params'])} tensors, {nparams} bytes")
    print(f"  memory plan: arena {plan['arena_bytes']} B vs one buffer per tensor "
          f"{plan['naive_bytes']} B ({plan['arena_bytes'] / max(plan['naive_bytes'], 1):.1%})")
    if placement:
        macs = sum(p["macs"] for p in placement.values()) or 1
        on = sum(p["macs"] for p in placement.values() if p["device"] == "vdla")
        print(f"  placement: {sum(p['device'] == 'vdla' for p in placement.values())} nodes on the accelerator "
              f"({on / macs:.1%} of {macs:,} MACs), {sum(p['device'] == 'cpu' for p in placement.values())} on the CPU")
        width = max([len("node"), *(len(n["name"]) for n in nodes)]) + 1     # names whole: they are what --kernel takes
        print(f"    {'node':<{width}}{'on':<6}{'MACs':>14}{'SQNR dB':>9}  reason")
        for n in nodes:
            db = "" if n["sqnr_db"] is None else f"{n['sqnr_db']:.1f}"
            why = f"fused into {n['fused_into']}" if n["fused_into"] else n["reason"]
            print(f"    {n['name']:<{width}}{n['placement']:<6}{n['macs']:>14,}{db:>9}  {why}")
    reasons = h.get("compile", {}).get("host_reasons", {})
    if args.steps:
        for s in plan["steps"]:
            extra = f"  [{reasons[s['name']]}]" if s["name"] in reasons else ""
            print(f"    {s['kind']:<6} {s['op']:<28} {s['name']}{extra}")
    elif reasons:
        print(f"  host steps with reasons: {len(reasons)} (see --steps)")
    return 0
