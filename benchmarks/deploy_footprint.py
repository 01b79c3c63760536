"""What a board must install to run a compiled model: the deploy runtime's footprint, beside
TVM's runtime (libtvm_runtime, 300-600 KB by the TVM paper's and docs' deployment figures).

A model is compiled here with its kernels linked into a shared object (link=True: the path a
board takes, where no llvmlite exists) and run in a fresh interpreter in which vdla.compiler,
llvmlite and onnx cannot be imported. Every module that run imported is counted: vdla's own
files (as pip installs them: .py source) and third-party packages (numpy, whole, as installed).
The accelerator path is counted too: the modules a board imports to drive the PYNQ device and
replay kernel programs (vdla.driver.devices.pynq, vdla.driver.runtime), without the pynq
package itself (the board's image ships it).

Usage: .venv/bin/python benchmarks/deploy_footprint.py [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

TVM_RUNTIME_KB = (300, 600)

_PROBE = """
import importlib.abc, json, sys
BLOCKED = ("vdla.compiler", "llvmlite", "onnx")
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in BLOCKED):
            raise ImportError("blocked on a board: " + name)
sys.meta_path.insert(0, Block())
before = set(sys.modules)
import numpy as np
from vdla.driver.executor import Executor
ex = Executor(sys.argv[1])
ex.run({s.name: np.zeros(s.shape, s.dtype) for s in ex.artifact.plan.inputs})
cpu = sorted(set(sys.modules) - before)
import vdla.driver.devices.pynq, vdla.driver.runtime   # the accelerator path on a board
accel = sorted(set(sys.modules) - before)
files = {m: getattr(sys.modules[m], "__file__", None) for m in accel}
print(json.dumps({"cpu": cpu, "accel": accel, "files": files}))
"""


def _model():
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(a.astype(np.float32), n) for n, a in [
        ("w", rng.standard_normal((16, 3, 3, 3)) * 0.3), ("fc_w", rng.standard_normal((10, 16)) * 0.25),
        ("fc_b", np.zeros(10))]]
    nodes = [helper.make_node("Conv", ["input", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["r"]), helper.make_node("GlobalAveragePool", ["r"], ["p"]),
             helper.make_node("Flatten", ["p"], ["f"]), helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["l"], transB=1),
             helper.make_node("Softmax", ["l"], ["out"], axis=-1)]
    graph = helper.make_graph(nodes, "footprint",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 10])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _tree_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs
               if "__pycache__" not in d and not os.path.islink(os.path.join(d, f)))


def _vdla_bytes(modules: list[str], files: dict) -> int:
    return sum(os.path.getsize(files[m]) for m in modules if m.startswith("vdla") and files.get(m))


def _installed_vdla_bytes() -> int:
    """All of vdla as pip installs it (every package, its package data): what `pip install
    --no-deps vdla` puts on a board, most of which the runtime never imports."""
    import vdla.driver
    repo = os.path.dirname(os.path.dirname(os.path.abspath(vdla.driver.__file__)))
    kinds = (".py", ".json", ".sv", ".svh", ".tcl", ".ys", ".txt")
    return sum(os.path.getsize(os.path.join(d, f)) for folder in ("driver", "vdla_hw", "simulator", "compiler", "bitstreams")
               for d, _, fs in os.walk(os.path.join(repo, folder)) if "__pycache__" not in d
               for f in fs if f.endswith(kinds))


def measure() -> dict:
    from vdla.compiler.compile_model import compile_model
    from vdla.driver.kernel_abi import SHARED_OBJECT
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.vdla")
        artifact = compile_model(_model(), target="cpu", link=True)
        artifact.save(path)
        so = next(v for k, v in artifact.objects.items() if k.endswith("/" + SHARED_OBJECT))
        done = subprocess.run([sys.executable, "-c", _PROBE, path], capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise SystemExit(f"the deploy-only run failed:\n{done.stderr}")
        probe = json.loads(done.stdout.strip().splitlines()[-1])
    files = probe["files"]
    numpy_dir = os.path.dirname(np.__file__)
    numpy_libs = numpy_dir.rstrip("/") + ".libs"
    import llvmlite
    third_party = sorted({m.split(".")[0] for m in probe["accel"] if files.get(m) and "site-packages" in files[m]
                          and not m.startswith("vdla")})
    return {
        "vdla_cpu_kb": _vdla_bytes(probe["cpu"], files) / 1024,
        "vdla_cpu_modules": len([m for m in probe["cpu"] if m.startswith("vdla")]),
        "vdla_accel_kb": _vdla_bytes(probe["accel"], files) / 1024,
        "vdla_accel_modules": len([m for m in probe["accel"] if m.startswith("vdla")]),
        "imports_simulator": any(m.startswith("vdla.simulator") for m in probe["accel"]),
        "third_party": third_party,
        "numpy_installed_mb": (_tree_bytes(numpy_dir)
                               + (_tree_bytes(numpy_libs) if os.path.isdir(numpy_libs) else 0)) / 2**20,
        "linked_kernels_kb": len(so) / 1024,
        "vdla_installed_kb": _installed_vdla_bytes() / 1024,
        "llvmlite_installed_mb": _tree_bytes(os.path.dirname(llvmlite.__file__)) / 2**20,
        "tvm_runtime_kb": list(TVM_RUNTIME_KB),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = parser.parse_args(argv)
    r = measure()
    lo, hi = r["tvm_runtime_kb"]
    print("deploy footprint (what a board installs besides Python)")
    print(f"  vdla runtime, CPU kernels only      {r['vdla_cpu_kb']:7.0f} KB  ({r['vdla_cpu_modules']} modules, .py source)")
    print(f"  vdla runtime, with the accelerator  {r['vdla_accel_kb']:7.0f} KB  ({r['vdla_accel_modules']} modules"
          f"{'; includes vdla.simulator, imported by vdla.driver.devices' if r['imports_simulator'] else ''})")
    print(f"  TVM runtime (libtvm_runtime)        {lo:4d}-{hi} KB")
    print(f"  all of vdla as pip installs it      {r['vdla_installed_kb']:7.0f} KB  (compiler, simulator, RTL: on disk, "
          "never imported)")
    print(f"  third-party packages imported       {', '.join(r['third_party'])}: numpy {r['numpy_installed_mb']:.1f} MB "
          "installed (PYNQ images ship it)")
    print(f"  the model's linked kernels          {r['linked_kernels_kb']:7.1f} KB  (in the artifact, not the runtime)")
    print(f"  not needed: llvmlite                {r['llvmlite_installed_mb']:7.1f} MB  (no armv7l wheel exists)")
    if args.json:
        print(json.dumps(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())
