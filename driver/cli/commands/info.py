"""`vdla info MODEL.vdla`: what an artifact holds and was built for."""
from __future__ import annotations

import json
from collections import Counter


def add_parser(sub):
    p = sub.add_parser("info", help="describe a .vdla artifact")
    p.add_argument("artifact")
    p.add_argument("--steps", action="store_true", help="list every step")
    p.add_argument("--json", action="store_true", help="print the header as JSON")
    return p


def run(args) -> int:
    from vdla.driver.artifact import load
    artifact = load(args.artifact)
    h = artifact.header
    if args.json:
        print(json.dumps(h, indent=1, sort_keys=True))
        return 0
    plan = h["plan"]
    print(f"model {plan['name']}  (artifact format {h['format_version']}, created {h.get('created', '?')})")
    print("  versions: " + ", ".join(f"{k} {v}" for k, v in h["versions"].items()))
    t = h["target"]
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
    reasons = h.get("compile", {}).get("host_reasons", {})
    if args.steps:
        for s in plan["steps"]:
            extra = f"  [{reasons[s['name']]}]" if s["name"] in reasons else ""
            print(f"    {s['kind']:<6} {s['op']:<28} {s['name']}{extra}")
    elif reasons:
        print(f"  host steps with reasons: {len(reasons)} (see --steps)")
    return 0
