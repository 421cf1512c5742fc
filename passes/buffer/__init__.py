"""The bufferized stage's passes: distinct results, deallocations split, copies lowered,
buffers planned into one arena, and the profile instrumentation (`profile`, with the
naive-path check `dlc-schedule` uses). What does not belong here: tensor-level passes
(`graph/`, `linalg/`) and passes on the llvm dialect (`llvm/`)."""
