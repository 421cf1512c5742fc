"""Transform-dialect text shared by the schedules: tiling, splitting, the script around them.

A schedule is a list of transform ops as text (`Lines`), plus the handles of the loops whose
loop-invariant subsets (the accumulators of a contraction) are hoisted once the vector
contractions are lowered. `transform_script` wraps the schedules of all tagged ops of a module
into one `@__transform_main`, followed by the common lowering (PERF.md, steps 2 and 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Self

ANY = "!transform.any_op"


@dataclass
class Lines:
    ops: list[str] = field(default_factory=list)
    hoist_loops: list[str] = field(default_factory=list)

    def __iadd__(self, other: Lines) -> Self:
        self.ops += other.ops
        self.hoist_loops += other.hoist_loops
        return self


def tile(handle: str, sizes: list[int], prefix: str,
         interchange: list[int] | None = None) -> tuple[list[str], str, list[str]]:
    """Ops tiling `handle` by `sizes` (0: not tiled): the tiled op's and the loops' handles."""
    count = sum(1 for s in sizes if s)
    loops = [f"%{prefix}_l{i}" for i in range(count)]
    types = ", ".join([ANY] * (count + 1))
    order = f" interchange = [{', '.join(map(str, interchange))}]" if interchange else ""
    line = (f"%{prefix}_t, {', '.join(loops)} = transform.structured.tile_using_for {handle} "
            f"tile_sizes [{', '.join(map(str, sizes))}]{order} : ({ANY}) -> ({types})")
    return [line], f"%{prefix}_t", loops


def tile_forall(handle: str, sizes: list[int], prefix: str) -> tuple[list[str], str, str]:
    """Ops tiling `handle` by `sizes` (0: not tiled) with one `scf.forall` (its iterations run on
    the threads when num_threads > 1; single-threaded, a loop): the tiled op's and the forall's
    handles."""
    line = (f"%{prefix}_t, %{prefix}_forall = transform.structured.tile_using_forall {handle} "
            f"tile_sizes [{', '.join(map(str, sizes))}] : ({ANY}) -> ({ANY}, {ANY})")
    return [line], f"%{prefix}_t", f"%{prefix}_forall"


def vectorize_each(loops: str, prefix: str) -> list[str]:
    """Ops that, in each loop of handle `loops` (one per part of a split op), fold the unit
    dims of the tiled op away and vectorize the generic left (a register tile of FMAs)."""
    loop = f"%{prefix}_loop"
    return [f"transform.foreach {loops} : {ANY} {{",
            f"^bb0({loop}: {ANY}):",
            f"  transform.apply_patterns to {loop} {{",
            "    transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices",
            f"  }} : {ANY}",
            (f"  %{prefix}_fma = transform.structured.match ops{{[\"linalg.generic\"]}} "
             f"in {loop} : ({ANY}) -> {ANY}"),
            f"  transform.structured.vectorize %{prefix}_fma : {ANY}",
            "}"]


def split(handle: str, dim: int, at: int, prefix: str) -> tuple[list[str], str, str]:
    """Ops splitting `handle` along loop `dim` at `at`: the low and high parts' handles."""
    both, low, high = f"%{prefix}_s", f"%{prefix}_lo", f"%{prefix}_hi"
    return [
        f"{both} = transform.structured.split {handle} after {at} {{dimension = {dim}}} : {ANY}",
        f"{low}, {high} = transform.split_handle {both} : ({ANY}) -> ({ANY}, {ANY})",
    ], low, high


def split_point(size: int, tile_size: int) -> int | None:
    """Where to split a dimension so its first part is a multiple of `tile_size` (None: no)."""
    if size <= tile_size or size % tile_size == 0:
        return None
    return size - size % tile_size


def split_parts(handle: str, dim: int, size: int, width: int, prefix: str,
                ops: list[str]) -> list[tuple[str, int]]:
    """(handle, size) of the parts of `handle` split along `dim` into a multiple of `width`
    and a remainder (one part when `width` divides `size`); the split ops go into `ops`."""
    at = split_point(size, width)
    if at is None:
        return [(handle, size)]
    more, low, high = split(handle, dim, at, prefix)
    ops += more
    return [(low, at), (high, size - at)]


# vector.contract -> outer products -> FMA right after vectorization: canonicalization would
# otherwise turn the K=1 contraction into mulf+addf, which LLVM does not fuse (PERF.md)
_LOWER = """
    %f = transform.structured.match ops{["func.func"]} in %root : (ANY) -> ANY
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
    } : ANY
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
    } : ANY
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.cast_away_vector_leading_one_dim
    } : ANY
    transform.apply_patterns to %f {
      transform.apply_patterns.linalg.tiling_canonicalization
      transform.apply_patterns.canonicalization
    } : ANY
    transform.apply_cse to %f : ANY""".replace("ANY", ANY)


def transform_script(schedules: list[Lines], tag: str, only: int | None = None,
                     lower: bool = True) -> str:
    """One transform module: `%op<i>` is the op tagged `tag` = i, scheduled by schedules[i]
    (only schedules[only] when given: -1 for none), followed (when `lower`) by the vector
    lowering, the hoisting and a canonicalization of the whole function."""
    body: list[str] = []
    late: list[str] = []
    hoists: list[str] = []
    for index, lines in enumerate(schedules):
        hoists += lines.hoist_loops
        if only is not None and index != only:
            continue
        body.append(f"%op{index} = transform.structured.match attributes {{{tag} = {index} : i64}}"
                    f" in %root : ({ANY}) -> {ANY}")
        early, rest = fusion_prefix(lines.ops)
        body += early
        late += rest
    body += late
    if not lower:
        return _module("\n    ".join(body))
    text = "\n    ".join(body) + _LOWER
    if hoists:
        # the canonicalization in _LOWER replaces the tiled loops, which empties their handles
        # (hoisting through them silently did nothing: the accumulators were read and written
        # at every k step); the pass walks every loop, innermost first, to a fixpoint
        # (loop-invariant code motion first: the packed matmul's tile offsets are
        # affine.apply ops created inside the k loop, which subset hoisting does not move)
        text += (f"\n    %licm = transform.apply_registered_pass "
                 f"\"loop-invariant-code-motion\" to %f : ({ANY}) -> {ANY}"
                 f"\n    %hoisted = transform.apply_registered_pass "
                 f"\"loop-invariant-subset-hoisting\" to %licm : ({ANY}) -> {ANY}")
    function = "%hoisted" if hoists else "%f"
    text += f"\n    transform.apply_patterns to {function} {{\n" \
            f"      transform.apply_patterns.canonicalization\n    }} : {ANY}"
    return _module(text)


def fusion_prefix(ops: list[str]) -> tuple[list[str], list[str]]:
    """A schedule's lines up to and including its last `fuse_into_containing_op` (at the top
    level of the sequence), and the rest. The script runs every schedule's prefix first, then
    the rests, in order: fuse_into_containing_op prints its producer into a diagnostic it then
    drops (its first fusion path fails on a forall's shared output), and printing an op
    numbers the whole module, which each schedule's vectorized loops grow; BERT-base's 96
    matmul schedules spent 0.04 s (the first) to 0.18 s (the last) in it, 5 of the script's
    6.9 s. Each schedule touches only its own ops (its tagged op, its packing, its init and
    epilogue), so the order between schedules does not change the result."""
    depth, last = 0, -1
    for i, line in enumerate(ops):
        text = line.strip()
        depth -= text.startswith("}")
        if depth == 0 and "fuse_into_containing_op" in text:
            last = i
        depth += text.endswith("{")
    return ops[:last + 1], ops[last + 1:]


def _module(text: str) -> str:
    return (
        "module attributes {transform.with_named_sequence} {\n"
        f"  transform.named_sequence @__transform_main(%root: {ANY} {{transform.readonly}}) {{\n"
        f"    {text}\n    transform.yield\n  }}\n}}\n"
    )
