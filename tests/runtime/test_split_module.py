"""The cut of an llvm dialect module into parts (`dlc.runtime.split_module`): every function is
defined in exactly one part, the parts' sizes are balanced, the mutable globals are defined
once, and the same module always gives the same parts."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlir import ir

from dlc.runtime import split_module

FUNCTION = """
  llvm.func internal @f{k}(%arg0: !llvm.ptr) attributes {{sym_visibility = "private"}} {{
{body}    llvm.return
  }}"""


def module_text(sizes: list[int]) -> str:
    """f0 .. fn (f_k stores 1.0 `sizes[k]` times into the arena), main calling each."""
    functions = []
    for k, size in enumerate(sizes):
        body = "    %c = llvm.mlir.constant(1.0 : f32) : f32\n"
        body += "    llvm.store %c, %arg0 : f32, !llvm.ptr\n" * size
        functions.append(FUNCTION.format(k=k, body=body))
    calls = "".join(f"    llvm.call @f{k}(%a) : (!llvm.ptr) -> ()\n" for k in range(len(sizes)))
    return f"""module {{
  llvm.mlir.global private @arena() {{addr_space = 0 : i32, alignment = 64 : i64}} : !llvm.array<64 x i8> {{
    %0 = llvm.mlir.undef : !llvm.array<64 x i8>
    llvm.return %0 : !llvm.array<64 x i8>
  }}
  llvm.mlir.global private constant @table(dense<[1, 2]> : tensor<2xi64>) {{addr_space = 0 : i32}} : !llvm.array<2 x i64>
{"".join(functions)}
  llvm.func @main() {{
    %a = llvm.mlir.addressof @arena : !llvm.ptr
    %t = llvm.mlir.addressof @table : !llvm.ptr
{calls}    llvm.return
  }}
}}"""


def parts_of(tmp_path: Path, sizes: list[int], count: int) -> list[str]:
    with ir.Context():
        module = ir.Module.parse(module_text(sizes))
        written = list(split_module.write_parts(module, count, tmp_path))
        assert written == list(range(len(written)))
        texts = []
        for k in written:
            with open(tmp_path / f"part{k}.mlirbc", "rb") as file:
                texts.append(str(ir.Module.parse(file.read())))
        return texts


def defined(text: str) -> set[str]:
    return {line.split("@")[1].split("(")[0] for line in text.splitlines()
            if "llvm.func" in line and line.rstrip().endswith("{")}


@pytest.mark.parametrize("count", [2, 3])
def test_each_function_is_defined_once_and_the_parts_are_balanced(tmp_path, count):
    sizes = [40, 35, 30, 10, 10, 5, 5, 1]
    texts = parts_of(tmp_path, sizes, count)
    assert len(texts) == count
    sets = [defined(text) for text in texts]
    names = {f"f{k}" for k in range(len(sizes))} | {"main"}
    assert set().union(*sets) == names and sum(len(s) for s in sets) == len(names)
    loads = [sum(sizes[int(n[1:])] for n in s if n != "main") for s in sets]
    assert max(loads) - min(loads) <= max(sizes) // 2 + 2, loads
    for text in texts:  # the others' functions are declared, hidden, where called
        assert "internal" not in text and "sym_visibility" not in text


def test_mutable_globals_are_defined_in_part_0_and_constants_copied(tmp_path):
    texts = parts_of(tmp_path, [20, 20, 20], 2)
    arena = [line for text in texts for line in text.splitlines() if "@arena(" in line]
    assert "llvm.mlir.global external hidden @arena()" in texts[0]
    assert sum(line.rstrip().endswith("{") for line in arena) == 1  # (one definition)
    main = next(k for k, text in enumerate(texts) if "main" in defined(text))
    assert "private constant @table(dense<[1, 2]>" in texts[main]


def test_the_same_module_gives_the_same_parts(tmp_path):
    sizes = [7, 7, 7, 3, 3, 9]
    first = parts_of(tmp_path / "a" if (tmp_path / "a").mkdir() is None else tmp_path, sizes, 3)
    second = parts_of(tmp_path / "b" if (tmp_path / "b").mkdir() is None else tmp_path, sizes, 3)
    assert first == second


def test_fewer_functions_than_processes_gives_fewer_parts(tmp_path):
    assert len(parts_of(tmp_path, [5], 4)) == 2  # (f0 and main)
