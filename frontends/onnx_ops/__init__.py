"""The ONNX op importers, one module per op family, each with an `IMPORTERS` table.

`importers()` merges the tables: ONNX op type -> importer. Adding an ONNX op is adding an
entry to the table of its family's module (or a new module here).

What belongs here: reading an ONNX node (attributes, opset rules, constant inputs) and building
dlc ops; math both frontends need is `frontends/decompose.py`'s. What does not: optimizations
(graph passes) and lowering (passes).
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from dlc.frontends.onnx_node import Importer


@cache
def importers() -> dict[str, Importer]:
    table: dict[str, Importer] = {}
    for module in pkgutil.iter_modules(__path__):
        family = importlib.import_module(f"{__name__}.{module.name}")
        clash = set(table) & set(family.IMPORTERS)
        if clash:
            raise RuntimeError(f"ONNX ops {sorted(clash)} imported by two families")
        table.update(family.IMPORTERS)
    return table
