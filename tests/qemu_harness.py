"""Running a board's CPU kernels on this machine under Debian's qemu-user (tests only).

`ensure_emulators()` installs qemu-user and the ARM glibc that the board's dynamic loader and
libm come from (Debian's libc6-armhf-cross / libc6-arm64-cross: the same glibc a PYNQ image
has, hard-float on armv7), as root with apt-get; it returns why it cannot, for a skip.
`build_host(triple, folder)` builds qemu_kernel_host.c for the board with zig cc.
`EmulatedKernels(triple, host)` is an Executor kernel host: it loads the artifact's linked
shared object, the very bytes a board would dlopen, into the harness under qemu and serves
each kernel call through the kernel ABI (the buffers go over a pipe and come back).
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import weakref

import numpy as np

from vdla.driver import cpu_kernel, kernel_abi, machine

# architecture family -> (qemu-user binary, the glibc sysroot it runs binaries against)
EMULATORS = {"arm": ("qemu-arm", "/usr/arm-linux-gnueabihf"), "aarch64": ("qemu-aarch64", "/usr/aarch64-linux-gnu")}
PACKAGES = ["qemu-user", "libc6-armhf-cross", "libc6-arm64-cross"]
CALL_TIMEOUT_S = 120     # one kernel call under emulation; a hang ends the test, not CI
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "qemu_kernel_host.c")


def _installed() -> bool:
    return all(shutil.which(qemu) and os.path.exists(os.path.join(root, "lib")) for qemu, root in EMULATORS.values())


def ensure_emulators() -> str | None:
    """None once qemu-user and the ARM sysroots are here; else the reason they are not."""
    if _installed():
        return None
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return f"qemu-user is not installed and installing it needs root: apt-get install -y {' '.join(PACKAGES)}"
    if not shutil.which("apt-get"):
        return f"qemu-user is not installed and there is no apt-get to install {' '.join(PACKAGES)}"
    # one installer at a time: parallel test workers share the machine's dpkg
    with open(os.path.join(tempfile.gettempdir(), "vdla-qemu-install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _installed():
            return None
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        # an index that fails to download (a mirror mid-sync) fails `update` but not the install
        update = subprocess.run(["apt-get", "update", "-qq"], capture_output=True, text=True, env=env, timeout=600)
        done = subprocess.run(["apt-get", "install", "-y", "-qq", *PACKAGES], capture_output=True, text=True,
                              env=env, timeout=600)
        if done.returncode != 0:
            return (f"apt-get install {' '.join(PACKAGES)} failed (exit {done.returncode}): "
                    f"{(update.stderr + done.stderr).strip()[-500:]}")
    return None if _installed() else f"apt-get installed {' '.join(PACKAGES)} but qemu-arm/qemu-aarch64 are missing"


def build_host(triple: str, folder: str) -> str:
    """qemu_kernel_host built for `triple` (dynamically linked against the board's glibc)."""
    from vdla.compiler.codegen.link import zig_cc, zig_target
    out = os.path.join(folder, f"qemu_kernel_host-{machine.key(triple).arch}")
    subprocess.run([*zig_cc(), "-target", zig_target(triple), "-O2", SOURCE, "-o", out, "-ldl"],
                   check=True, capture_output=True, timeout=600)
    return out


class EmulatedKernels:
    """An Executor kernel host for `triple`, running its kernels under qemu-user with `threads`
    threads for their parallel loops."""

    def __init__(self, triple: str, host: str, threads: int = 1):
        self.triple, self.host, self.threads = triple, host, threads
        self.qemu, self.sysroot = EMULATORS[machine.key(triple).arch]

    def load(self, artifact, triple: str) -> cpu_kernel.KernelLibrary:
        names = artifact.header["kernels"][triple]["names"]
        return self.load_shared(artifact.objects[kernel_abi.shared_object_key(triple)], names)

    def load_shared(self, shared_object: bytes, names) -> cpu_kernel.KernelLibrary:
        process = _HarnessProcess(self, shared_object)
        kernels = {}
        for name in names:
            specs = kernel_abi.decode_argspec(process.string(kernel_abi.argspec_symbol(name)))
            kernels[name] = (_EmulatedKernel(process, name, specs), specs, 0)
        return cpu_kernel.KernelLibrary(process, kernels)


class _HarnessProcess:
    """One qemu_kernel_host process holding one shared object; ends when garbage collected."""

    def __init__(self, emulated: EmulatedKernels, shared_object: bytes):
        self.folder = tempfile.TemporaryDirectory(prefix="vdla-qemu-")
        path = os.path.join(self.folder.name, "kernels.so")
        with open(path, "wb") as f:
            f.write(shared_object)
        self.stderr = open(os.path.join(self.folder.name, "stderr.txt"), "w+")
        self.proc = subprocess.Popen([emulated.qemu, "-L", emulated.sysroot, emulated.host, path,
                                      str(emulated.threads)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr)
        self.lock = threading.Lock()
        weakref.finalize(self, _stop, self.proc, self.stderr, self.folder)

    def exchange(self, request: bytes, reply_bytes, what: str) -> bytes:
        """Send `request`, read the reply (reply_bytes: a count, or a function of the first 4 bytes)."""
        with self.lock:
            timer = threading.Timer(CALL_TIMEOUT_S, self.proc.kill)
            timer.start()
            try:
                self.proc.stdin.write(request)
                self.proc.stdin.flush()
                head = self._read(4, what)
                rest = self._read(reply_bytes(head) if callable(reply_bytes) else reply_bytes - 4, what)
            except BrokenPipeError:
                raise cpu_kernel.CpuKernelError(self._died(what)) from None
            finally:
                timer.cancel()
            return head + rest

    def _read(self, n: int, what: str) -> bytes:
        data = self.proc.stdout.read(n) if n else b""
        if len(data) != n:
            raise cpu_kernel.CpuKernelError(self._died(what))
        return data

    def _died(self, what: str) -> str:
        code = self.proc.poll()
        self.stderr.seek(0)
        said = self.stderr.read().strip()
        state = "killed after %d s" % CALL_TIMEOUT_S if code is not None and code < 0 else f"exit {code}"
        return f"{what} under qemu: the harness stopped ({state}): {said[-500:]}"

    def string(self, symbol: str) -> str:
        name = ("?" + symbol).encode()
        reply = self.exchange(struct.pack("<I", len(name)) + name, lambda head: struct.unpack("<I", head)[0],
                              f"reading {symbol}")
        return reply[4:].decode()


def _stop(proc, stderr, folder):
    try:
        proc.stdin.write(struct.pack("<I", 0))
        proc.stdin.close()
        proc.wait(timeout=10)
    except (OSError, ValueError, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
    stderr.close()
    folder.cleanup()


class _EmulatedKernel:
    """A kernel called like its ctypes function: with the ABI's array of buffer pointers."""

    def __init__(self, process: _HarnessProcess, name: str, specs):
        self.process, self.name = process, name
        self.sizes = [int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize for shape, dtype in specs]

    def __call__(self, pointers) -> int:
        name = self.name.encode()
        parts = [struct.pack("<I", len(name)), name, struct.pack("<I", len(self.sizes))]
        for k, size in enumerate(self.sizes):
            parts += [struct.pack("<Q", size), ctypes.string_at(pointers[k], size) if size else b""]
        reply = self.process.exchange(b"".join(parts), 4 + sum(self.sizes), f"kernel {self.name}")
        at = 4
        for k, size in enumerate(self.sizes):
            if size:
                ctypes.memmove(pointers[k], reply[at:at + size], size)
            at += size
        return struct.unpack_from("<i", reply)[0]


# Debian's armhf Python and numpy, as on a PYNQ image (whose Python has no llvmlite wheel), and
# what they load: downloaded with apt-get into a private apt state (the machine's dpkg is left
# alone), unpacked with dpkg -x into a sysroot that qemu-arm runs against.
BOARD_PYTHON_PACKAGES = ["python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib", "libc6", "libexpat1",
                         "zlib1g", "libffi8", "libbz2-1.0", "liblzma5", "libcrypt1", "libssl3", "python3-numpy",
                         "libblas3", "liblapack3", "libgfortran5", "libgcc-s1", "libstdc++6"]
BOARD_PYTHON = "/usr/bin/python3.11"


def board_python(cache: str) -> tuple[str | None, str]:
    """(sysroot, "") with an armhf Python and numpy under `cache` (reused when there), or
    (None, why not)."""
    root = os.path.join(cache, "armhf-python")
    if os.path.exists(os.path.join(root, BOARD_PYTHON.lstrip("/"))):
        return root, ""
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        return None, "no apt-get and dpkg to fetch Debian's armhf Python"
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, "armhf-python.lock"), "w") as lock:   # one builder at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.exists(os.path.join(root, BOARD_PYTHON.lstrip("/"))):
            return root, ""
        return _fetch_board_python(root)


def _fetch_board_python(root: str) -> tuple[str | None, str]:
    state = tempfile.mkdtemp(prefix="vdla-armhf-apt-")
    try:
        for sub in ("lists/partial", "cache/archives/partial", "debs"):
            os.makedirs(os.path.join(state, sub))
        open(os.path.join(state, "status"), "w").close()
        options = ["-o", "APT::Architecture=armhf", "-o", "APT::Architectures::=armhf",
                   "-o", f"Dir::State::Lists={state}/lists", "-o", f"Dir::State::Status={state}/status",
                   "-o", f"Dir::Cache={state}/cache", "-o", "Debug::NoLocking=1"]
        update = subprocess.run(["apt-get", *options, "update", "-qq"], capture_output=True, text=True, timeout=600)
        debs = os.path.join(state, "debs")
        done = subprocess.run(["apt-get", *options, "download", *BOARD_PYTHON_PACKAGES], cwd=debs,
                              capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            return None, f"apt-get download of armhf Python failed: {(update.stderr + done.stderr).strip()[-500:]}"
        partial = root + ".partial"
        shutil.rmtree(partial, ignore_errors=True)
        os.makedirs(partial)
        for deb in sorted(os.listdir(debs)):
            subprocess.run(["dpkg", "-x", os.path.join(debs, deb), partial], check=True, timeout=300)
        libs = os.path.join(partial, "usr/lib/arm-linux-gnueabihf")
        for name in ("blas", "lapack"):      # what update-alternatives would link on a real install
            os.symlink(f"{name}/lib{name}.so.3", os.path.join(libs, f"lib{name}.so.3"))
        os.replace(partial, root)
        return root, ""
    finally:
        shutil.rmtree(state, ignore_errors=True)


def deploy_runtime_tree(repo: str, dest: str) -> str:
    """What a board installs of vdla: vdla.driver and vdla.hw (Python files and the JSON data
    they read), nothing of the compiler or the simulator. Returns the folder for PYTHONPATH."""
    for package, folder in (("driver", "driver"), ("hw", "vdla_hw")):
        shutil.copytree(os.path.join(repo, folder), os.path.join(dest, "vdla", package),
                        ignore=lambda d, names: [n for n in names if n == "__pycache__" or
                                                 (os.path.isfile(os.path.join(d, n)) and not n.endswith((".py", ".json")))])
    return dest


def run_board_python(sysroot: str, pythonpath: str, args: list[str], timeout: float = 300):
    """Run the board's Python under qemu-arm with only `pythonpath` besides its own library."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": pythonpath, "PYTHONDONTWRITEBYTECODE": "1", "HOME": pythonpath}
    return subprocess.run(["qemu-arm", "-L", sysroot, os.path.join(sysroot, BOARD_PYTHON.lstrip("/")), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)
