"""The lowering of dlc ops to linalg/tensor/arith/math: one module per op family.

Each family module has a `PATTERNS` table (OpDef -> rewrite function); `all_patterns()`
merges them for dlc-to-linalg; its `DYNAMIC_OPS` tuple names the ops whose pattern takes a
dynamic size (`dynamic_ops()`). A family may also have a `LIMITS` table (OpDef -> function of the
op returning why this instance cannot be lowered, or None); `all_limits()` merges those, and
dlc-to-linalg checks them before any rewrite.

What belongs here: one dlc op family's linalg form. What does not: the pass driving them
(`passes/linalg/dlc_to_linalg.py`), schedules (`passes/codegen/`), graph rewrites.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache


@cache
def all_patterns() -> dict:
    table: dict[object, Callable] = {}
    for module in pkgutil.iter_modules(__path__):
        family = importlib.import_module(f"{__name__}.{module.name}")
        patterns = getattr(family, "PATTERNS", {})
        clash = [op.name for op in set(table) & set(patterns)]
        if clash:
            raise RuntimeError(f"ops {sorted(clash)} lowered by two families")
        table.update(patterns)
    return table


@cache
def dynamic_ops() -> frozenset:
    """The ops whose lowering takes a dynamic size (`?`): each family's `DYNAMIC_OPS` tuple lists
    those whose pattern builds every tensor through the builders (`empty_like`, `filled`,
    `elementwise`, `reshaped`), which give a `?` the function's one dynamic size, and computes
    nothing else from a size that may be `?`."""
    found = set()
    for module in pkgutil.iter_modules(__path__):
        family = importlib.import_module(f"{__name__}.{module.name}")
        found.update(getattr(family, "DYNAMIC_OPS", ()))
    return frozenset(found)


@cache
def all_limits() -> dict:
    table: dict[object, Callable] = {}
    for module in pkgutil.iter_modules(__path__):
        family = importlib.import_module(f"{__name__}.{module.name}")
        table.update(getattr(family, "LIMITS", {}))
    return table
