"""The progress display (issue 24) draws on a terminal only: a bar and a delayed spinner appear
on a pseudo-terminal, nothing is written to a pipe or under CI, and a fast block shows no
spinner at all. `dlc fuzz` on a terminal shows its bar; in a pipe its output is plain lines.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import time

import pytest

from dlc.tools import progress


@pytest.fixture
def terminal(monkeypatch):
    """A writable stream that is a terminal, and a function reading what was drawn on it."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("DLC_NO_PROGRESS", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w")
    os.set_blocking(master, False)

    def drawn() -> str:
        stream.flush()
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks).decode(errors="replace")

    yield stream, drawn
    stream.close()
    os.close(master)


def test_bar_and_spinner_on_a_terminal(terminal):
    stream, drawn = terminal
    assert progress.enabled(stream)
    with progress.bar("cases", total=4, stream=stream) as advance:
        for _ in range(4):
            advance(1, detail="3 pass")
            time.sleep(0.05)
    shown = drawn()
    assert "cases" in shown and "3 pass" in shown
    with progress.spinner("compiling", delay=0.1, stream=stream):
        time.sleep(0.6)
    assert "compiling" in drawn()
    with progress.spinner("quick", delay=5, stream=stream):
        pass
    assert "quick" not in drawn()


def test_nothing_in_a_pipe_or_under_ci(terminal, monkeypatch, tmp_path):
    stream, _ = terminal
    with open(tmp_path / "log", "w") as log:
        assert not progress.enabled(log)
        with progress.bar("cases", total=2, stream=log) as advance:
            advance(2)
        with progress.spinner("compiling", delay=0, stream=log):
            time.sleep(0.2)
    assert (tmp_path / "log").read_text() == ""
    monkeypatch.setenv("CI", "true")
    assert not progress.enabled(stream)
    monkeypatch.delenv("CI")
    monkeypatch.setenv("DLC_NO_PROGRESS", "1")
    assert not progress.enabled(stream)


def test_fuzz_bar_only_on_a_terminal(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "DLC_NO_PROGRESS")}
    env["TERM"] = "xterm"
    argv = [sys.executable, "-m", "dlc.tools.dlc_cli", "fuzz", "-n", "3", "--out",
            str(tmp_path / "out")]
    piped = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=300,
                           env=env)
    assert piped.returncode == 0, piped.stderr
    assert "\x1b[" not in piped.stdout + piped.stderr  # no escape sequences in a pipe
    master, slave = pty.openpty()
    process = subprocess.Popen(argv, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    output = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # (EIO: the child closed the terminal)
            break
        if not chunk:
            break
        output += chunk
    assert process.wait(timeout=300) == 0
    os.close(master)
    text = output.decode(errors="replace")
    assert "fuzz" in text and "3/3" in text, text[-2000:]


def test_dlc_version():
    done = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", "--version"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("dlc 0.1.0\n")
    assert "MLIR Python bindings: xtc-mlir-python-bindings 22." in done.stdout


@pytest.mark.parametrize("argv, message", [
    (["run", "m.onnx", "--repeat", "0"], "dlc run: error: argument --repeat: must be at least 1, got 0"),
    (["bench", "m.onnx", "--threads", "x"], "argument --threads: expected an integer, got 'x'"),
    (["profile", "m.onnx", "--runs", "-1"], "argument --runs: must be at least 1, got -1"),
    (["conformance", "-j", "0"], "argument -j/--jobs: must be at least 1, got 0"),
])
def test_counts_are_checked_as_command_line_errors(argv, message):
    done = subprocess.run([sys.executable, "-m", "dlc.tools.dlc_cli", *argv],
                          capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 2 and message in done.stderr, done.stderr



@pytest.mark.parametrize("flags, expected", [
    (["--dynamic"], {"dynamic": True, "dynamic_rows": False, "opt_level": 2}),
    (["--dynamic-rows"], {"dynamic_rows": True, "dynamic": False}),
    (["--light", "-O", "1", "--write-expected", "x.txt"],
     {"light": True, "opt_level": 1, "write_expected": "x.txt"}),
])
def test_conformance_takes_the_suites_options(monkeypatch, flags, expected):
    """`dlc conformance --dynamic` (the README's command) runs the suite's dynamic mode: the
    CLI once had its own option list, without it, and ran the static suite."""
    from dlc.testing import conformance
    from dlc.tools import dlc_cli

    seen = []
    monkeypatch.setattr(conformance, "run", lambda args: seen.append(args) or 0)
    assert dlc_cli.main(["conformance", "-k", "test_relu", *flags]) == 0
    (args,) = seen
    assert args.filter == "test_relu" and args.jobs == 2
    assert {name: getattr(args, name) for name in expected} == expected
