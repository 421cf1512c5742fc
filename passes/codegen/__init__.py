"""Schedules per op class, as transform-dialect text, applied by `dlc-schedule`.

Each family module (`matmul`, `elementwise`) has `match(op) -> Problem | None` (the static
problem of an op it can schedule, None to leave the op to the naive loop path), `volume(problem)`
(work, compared with the pass's threshold so that tiny ops skip scheduling) and
`lines(handle, problem, prefix) -> Lines` (transform ops scheduling the op behind `handle`).
`script.py` assembles one transform module for a whole payload module; `family.py` is the
families' protocol and precedence.

What belongs here: the schedule families and what they share (targets, fusion plans, the
script). What does not: the pass that applies them (`passes/linalg/schedule.py`), graph-level
rewrites (`passes/graph/`) or lowering patterns (`passes/lowering/`).
"""
