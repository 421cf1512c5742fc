"""Auto-tuning of the schedules' knobs, with a tuning database (`dlc tune`, issue 25).

- `families.py`: the tunable schedule families (a parameter record, its space, the
  heuristic's point); `keys.py`: an op's structural key.
- `database.py`: the sqlite database of the best parameters per op, CPU and dlc version;
  `merge`.
- `apply.py`: `dlc.compile` takes a matching record (`CompiledModel.tuning` says which ops did).
- `extract.py`: a model's distinct scheduled ops as one-op modules; `measure.py`: a
  candidate compiled and timed in a worker process (a local pool or Ray tasks); `search.py`:
  the evolutionary search and the random baseline; `tune.py`: `tune(model)`, the whole loop.

What belongs here: searching and recording schedule parameters. What does not: the schedules
and their parameter records themselves (`passes/codegen/`), the CLI (`tools/tune_cli.py`).
"""

from dlc.tuning.apply import Report, session
from dlc.tuning.database import Database, TuningWarning, default_path, merge

__all__ = ["Database", "Report", "TuningWarning", "default_path", "merge", "session"]
