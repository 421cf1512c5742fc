"""The linalg stage's passes: the lowering of the dlc dialect to linalg (`dlc_to_linalg`, its
op patterns in `passes/lowering/`), elementwise generalization and fusion, polynomial math,
the schedules (`schedule`: `dlc-schedule`, its families in `passes/codegen/`) and padding in
place. What does not belong here: passes on the dlc graph (`graph/`), on buffers (`buffer/`)
or on the llvm dialect (`llvm/`)."""
