#!/usr/bin/env bash
# Everything the GPU path needs checked on a machine with an NVIDIA GPU, in one call, offline:
#
#   OUT=/some/folder bash benchmarks/gpu_device_check.sh      # OUT: default out/gpu_device_check
#   STAGES="kernels constants" bash benchmarks/gpu_device_check.sh   # some of: kernels e2e constants models
#
# 1. what the machine has (nvidia-smi, Python, numpy/llvmlite/onnx/onnxruntime/torch/cuda-bindings);
# 2. vdla importable from this checkout without installing anything: a folder of symlinks
#    vdla/hw -> vdla_hw/, ... (setup.py's FOLDERS) put on PYTHONPATH. Wheels in out/gpu_wheels
#    (pytest where the machine's Python lacks it, a newer llvmlite, ...) are installed there first,
#    ahead of the machine's own packages (prepare them where there is a network:
#    python -m pip download --no-deps --python-version 3.12 --only-binary=:all: -d out/gpu_wheels
#    llvmlite==0.50.0; out/ is git-ignored, so carry it);
# 3. the GPU execution tests with VDLA_TESTS_ON_GPU=1: every GPU test kernel launched on the
#    device against numpy (tests/driver/devices/test_cuda.py), whole models and the onnx node
#    tests compiled --target cuda and run on the GPU instead of the CPU emulation;
# 4. benchmarks/e2e_gpu.py --json (ResNet-18 and MobileNetV2, batch 1 and 16, against
#    onnxruntime's CUDA provider and PyTorch eager where they run);
# 5. (before the models and node tests of 3, the longest stage) benchmarks/gpu_constants.py --json: Winograd against direct convs, and cross-thread against
#    per-thread reductions, each at shapes around the threshold that chooses it (from
#    out/gpu_constants/programs.json when it was compiled ahead with --prepare, so the GPU machine
#    only times).
# Everything is teed to $OUT: check.log (all of it), env.txt, tests.log, e2e_gpu.log,
# e2e_gpu.json and gpu_constants.json (the benchmarks' JSON lines). The stages' time limits add
# up to 12.5 minutes, past the 10 one command may take on the lent GPU machines, but on an H100
# the whole check takes about 4. Exit status: 0 when every stage passed, else the number of
# stages that failed; 2 at once when the machine has no usable GPU.
set -u -o pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-python3}
OUT=${OUT:-$REPO/out/gpu_device_check}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check.log") 2>&1
failed=0
stage() { echo; echo "== $* ($(date -u +%H:%M:%S))"; }
# STAGES picks the stages after the set-up (a rerun of what failed): any of these words.
STAGES=" ${STAGES:-kernels e2e constants models} "
want() { [[ "$STAGES" == *" $1 "* ]]; }

stage "the machine"
{
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1
    else
        echo "nvidia-smi: not found"
    fi
    "$PY" - <<'EOF'
import importlib, platform
print("python", platform.python_version(), platform.machine())
for name in ("numpy", "llvmlite", "onnx", "onnxruntime", "torch", "cuda.bindings", "pytest"):
    try:
        m = importlib.import_module(name)
        extra = ""
        if name == "onnxruntime":
            extra = " providers=" + ",".join(m.get_available_providers())
        if name == "torch":
            extra = f" cuda={m.version.cuda} available={m.cuda.is_available()}"
        print(f"{name} {getattr(m, '__version__', '?')}{extra}")
    except Exception as exc:
        print(f"{name}: MISSING ({type(exc).__name__}: {exc})")
EOF
} | tee "$OUT/env.txt"

stage "vdla from this checkout"
SITE=$(mktemp -d)/site
mkdir -p "$SITE/vdla"
"$PY" - "$REPO" "$SITE" <<'EOF' || exit 2
import ast, os, sys
repo, site = sys.argv[1:]
tree = ast.parse(open(os.path.join(repo, "setup.py")).read())
folders = next(ast.literal_eval(n.value) for n in tree.body
               if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "FOLDERS")
for package, folder in folders.items():          # "vdla.hw": "vdla_hw"
    os.symlink(os.path.join(repo, folder), os.path.join(site, *package.split(".")))
print("vdla packages:", ", ".join(f"{p} -> {f}/" for p, f in folders.items()))
EOF
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G "$REPO/out/gpu_wheels/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$REPO"/out/gpu_wheels/*.whl \
        && echo "from out/gpu_wheels: $(cd "$REPO/out/gpu_wheels" && ls *.whl | tr '\n' ' ')" \
        || echo "out/gpu_wheels: install failed"
fi
"$PY" -c "import llvmlite, pytest; print('llvmlite', llvmlite.__version__, '| pytest', pytest.__version__)" \
    || echo "llvmlite or pytest is missing: the stages that need them will fail (see the header)"
"$PY" - <<'EOF' || { echo "no usable GPU: stopping"; exit 2; }
import sys
import vdla.compiler
from vdla.driver.device import DeviceError
from vdla.driver.devices.cuda import CudaDevice
print(f"vdla from {vdla.compiler.__path__[0]}")
try:
    device = CudaDevice()
except DeviceError as exc:
    sys.exit(f"{exc}")
print(repr(device))
device.close()
EOF

if want kernels; then
stage "GPU test kernels on the device"
VDLA_TESTS_ON_GPU=1 timeout 120 "$PY" -m pytest -q -p no:cacheprovider -p no:xdist \
    tests/driver/devices/test_cuda.py 2>&1 | tee "$OUT/tests.log" || failed=$((failed + 1))
fi

if want e2e; then
stage "benchmarks/e2e_gpu.py --json"
timeout 240 "$PY" benchmarks/e2e_gpu.py --json 2>&1 | tee "$OUT/e2e_gpu.log" || failed=$((failed + 1))
tail -n 1 "$OUT/e2e_gpu.log" | grep '^{' > "$OUT/e2e_gpu.json" || echo "e2e_gpu.py printed no JSON line"
fi

if want constants; then
stage "benchmarks/gpu_constants.py --json"
PREPARED=()
[ -f "$REPO/out/gpu_constants/programs.json" ] && PREPARED=(--run "$REPO/out/gpu_constants")
timeout 90 "$PY" benchmarks/gpu_constants.py "${PREPARED[@]}" --json 2>&1 | tee "$OUT/gpu_constants.log" \
    || failed=$((failed + 1))
tail -n 1 "$OUT/gpu_constants.log" | grep '^{' > "$OUT/gpu_constants.json" || echo "gpu_constants.py printed no JSON line"
fi

if want models; then
stage "models and onnx node tests on the device"
# 900 node-test cases: in 8 processes (each with its own CUDA context) where pytest-xdist is there
PARALLEL=(-p no:xdist)
"$PY" -c "import xdist" 2>/dev/null && PARALLEL=(-n 8)
VDLA_TESTS_ON_GPU=1 timeout 300 "$PY" -m pytest -q -p no:cacheprovider "${PARALLEL[@]}" \
    tests/e2e/test_cuda_model.py tests/e2e/test_cuda_winograd.py tests/compiler/test_compile_cuda.py \
    tests/onnx_backend/test_onnx_node_tests_cuda.py 2>&1 | tee -a "$OUT/tests.log" || failed=$((failed + 1))
fi

stage "done: $failed stage(s) failed; files in $OUT"
exit "$failed"
