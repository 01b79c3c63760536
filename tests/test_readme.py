"""Every code block of README.md and docs/*.md runs as written, or says why it cannot on a CI
machine.

The blocks run in order in one folder that holds the small CNN's files under the names the
README uses (model.onnx, calib.npz, x.npy; HOME points there too, for ~/.vdla): Python blocks
in one namespace, as a reader pastes them one after another; shell blocks line by line, each
`vdla ...` line through the CLI's own entry point (an `[--option value]` is an option the
reader may add, left out here; `NAME=value` before a command sets its environment), which must
exit 0; JSON blocks through the reader of what they show (a DSE sweep). A block that needs what
CI lacks (a board, a GPU, a network peer, a fresh venv) carries the line
`<!-- doc-test: skip: WHY -->` right above it; a shell line that is not a `vdla` command in an
unmarked block fails the test, so no block goes untested by accident."""
from __future__ import annotations

import json
import os
import pathlib
import re
import shlex

import pytest

from vdla.driver.cli import main

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!-- doc-test: skip: (.+) -->")


def blocks(path: pathlib.Path) -> list[tuple[str, str, str, str | None]]:
    """(where, language, text, skip reason or None) of each fenced block of `path`."""
    lines = path.read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        if lines[i].startswith("```") and len(lines[i]) > 3:
            start, lang = i, lines[i][3:].strip()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            marker = SKIP.match(lines[i - 1]) if i else None
            found.append((f"{path.name} line {start + 1}", lang, "\n".join(lines[i + 1:end]),
                          marker.group(1) if marker else None))
            i = end
        i += 1
    return found


def shell_commands(text: str) -> list[tuple[dict, list[str]]]:
    """(environment, argv) of each line: continuations joined, comments and [optional] parts
    dropped."""
    out = []
    for line in text.replace("\\\n", " ").splitlines():
        line = re.sub(r"\s#\s.*$", "", line)
        line = re.sub(r"\s*\[[^\]]*\]", "", line).strip()
        if not line:
            continue
        words = shlex.split(line)
        env = {}
        while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
            key, value = words.pop(0).split("=", 1)
            env[key] = os.path.expanduser(value)
        out.append((env, [os.path.expanduser(w) for w in words]))
    return out


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    from e2e.model_builders import write_vdla_cnn_files      # tests/ is on sys.path
    d = write_vdla_cnn_files(tmp_path_factory.mktemp("readme"))
    (d / "m.onnx").rename(d / "model.onnx")
    return d


def test_every_block_is_run_or_says_why_not():
    found = [b for path in DOCS for b in blocks(path)]
    assert len(found) >= 10
    for where, lang, text, skip in found:
        assert lang in ("sh", "python", "json"), f"{where}: a {lang!r} block the doc test cannot run"
        if skip is None and lang == "sh":
            for _, argv in shell_commands(text):
                assert argv[0] == "vdla", (f"{where}: {' '.join(argv)!r} is not a vdla command; mark the block "
                                           "<!-- doc-test: skip: WHY --> if CI cannot run it")


def run_blocks(found, folder, monkeypatch, capsys) -> None:
    """Run the unmarked blocks in `folder` (see the module docstring); AssertionError, or the
    block's own exception, at the first that fails."""
    monkeypatch.chdir(folder)
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("VDLA_TRUST_KEY", raising=False)
    namespace: dict = {}
    for where, lang, text, skip in found:
        if skip is not None:
            continue
        if lang == "python":
            exec(compile(text, where, "exec"), namespace)      # noqa: S102
        elif lang == "json":
            from vdla.compiler.dse.sweep import parse_sweep
            parse_sweep(json.loads(text), where)
        else:
            for env, argv in shell_commands(text):
                with monkeypatch.context() as m:
                    for key, value in env.items():
                        m.setenv(key, value)
                    status = main(argv[1:])
                assert status == 0, f"{where}: {' '.join(argv)} exited {status}: {capsys.readouterr().err}"


def test_the_blocks_run_as_written(folder, monkeypatch, capsys):
    run_blocks([b for path in DOCS for b in blocks(path)], folder, monkeypatch, capsys)


@pytest.mark.parametrize("block, error", [
    ("```sh\nvdla info nosuch.vdla   # a file the reader does not have\n```", "nosuch.vdla exited 6"),
    ("```python\nprint(x_packed)\n```", "name 'x_packed' is not defined"),
])
def test_a_broken_block_fails(tmp_path, monkeypatch, capsys, block, error):
    """What the README's snippets were: a name they never defined, a file no step makes."""
    doc = tmp_path / "doc.md"
    doc.write_text(f"# doc\n\n{block}\n\n<!-- doc-test: skip: the reason -->\n```sh\npip install x\n```\n")
    found = blocks(doc)
    assert [b[3] for b in found] == [None, "the reason"]
    with pytest.raises((AssertionError, NameError), match=error):
        run_blocks(found, tmp_path, monkeypatch, capsys)


def test_the_pynq_venv_line_installs_what_ci_installs():
    """The README's .venv-pynq line is skipped here because .ci/run builds that venv: it must ask
    for the same packages, or a reader's venv skips the RTL-fabric tests that CI's runs."""
    def packages(text: str) -> set[str]:
        line = next(line for line in text.splitlines() if ".venv-pynq/bin/" in line and " install " in line)
        words = shlex.split(line.split(" install ", 1)[1].split("&&")[0])
        return {w for w in words if not w.startswith("-")}
    assert packages(DOCS[0].read_text()) == packages((ROOT / ".ci" / "run").read_text())
