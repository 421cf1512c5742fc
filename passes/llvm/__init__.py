"""The llvm stage's passes and what runs just before code generation: kernels outlined
(`outline_kernels`), large functions split (`split_functions`), n-D vectors lowered and the
integer kernels' intrinsics introduced (`lower_vectors`), large weights bound at load
(`external_weights`, run by `compile_imported`). What does not belong here: tensor or buffer
passes (`graph/`, `linalg/`, `buffer/`)."""
