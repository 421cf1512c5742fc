"""lit configuration of a project's own dlc pass tests (copy it next to your .mlir tests).

`dlc-opt` and FileCheck are taken from the Python environment dlc is installed in: the Python
running lit (run `lit -v .` from its folder) or $DLC_PYTHON.
"""

# ruff: noqa: F821  (lit defines `config` before running this file)

import os
import subprocess
import sys

import lit.formats

config.name = "my-passes"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

python = os.environ.get("DLC_PYTHON", sys.executable)
llvm_bin = subprocess.run(
    [python, "-c", "import llvm, os; print(os.path.join(list(llvm.__path__)[0], 'bin'))"],
    capture_output=True, text=True, check=True).stdout.strip()
config.environment["PATH"] = os.pathsep.join([llvm_bin, os.environ.get("PATH", "")])
config.substitutions.append((r"(?<![\w/.%-])dlc-opt(?![\w/.-])", f"{python} -m dlc.tools.dlc_opt"))
