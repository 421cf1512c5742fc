"""What dlc's graph-level passes share: matching helpers, the rule driver, numpy evaluators.

The passes themselves are top-level modules of `dlc.passes` (one per pipeline argument, e.g.
`passes/fold_constants.py` is `dlc-fold-constants`), so that the registry finds them; this
subpackage holds what several of them use:

- `match`: reading the graph (producers, constant values, uses) and the rule driver
  `apply_rules`, which runs a table {OpDef: [rule, ...]} greedily and erases dead dlc ops
  as it goes (so rules count live uses only);
- `evaluate`: numpy evaluators of dlc ops, the table constant folding uses;
- `report`: op counts, intermediate-memory liveness and the Graphviz picture of a dlc graph
  (`dlc compile --stats`, `--emit=dot`).
"""

from dlc.passes.graph import evaluate, match, report

__all__ = ["evaluate", "match", "report"]
