"""The dlc stage's passes, on the dlc dialect's graph, and what they share.

One module per pass (`fold_constants.py` is `dlc-fold-constants`: the registry imports every
module of the stage folders); what several of them use:

- `match`: reading the graph (producers, constant values, uses) and the rule driver
  `apply_rules`, which runs a table {OpDef: [rule, ...]} greedily and erases dead dlc ops
  as it goes (so rules count live uses only);
- `evaluate`: numpy evaluators of dlc ops, the table constant folding uses;
- `report`: op counts, intermediate-memory liveness and the Graphviz picture of a dlc graph
  (`dlc compile --stats`, `--emit=dot`).

What belongs here: passes on the dlc dialect's graph (before dlc-to-linalg). What does not:
anything on linalg, buffers or the llvm dialect (`linalg/`, `buffer/`, `llvm/`).
"""

from dlc.passes.graph import evaluate, match, report

__all__ = ["evaluate", "match", "report"]
