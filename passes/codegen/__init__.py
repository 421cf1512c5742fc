"""Schedules per op class, as transform-dialect text, applied by `dlc-schedule`.

Each family module (`matmul`, `elementwise`) has `match(op) -> Problem | None` (the static
problem of an op it can schedule, None to leave the op to the naive loop path), `volume(problem)`
(work, compared with the pass's threshold so that tiny ops skip scheduling) and
`lines(handle, problem, prefix) -> Lines` (transform ops scheduling the op behind `handle`).
`script.py` assembles one transform module for a whole payload module.
"""
