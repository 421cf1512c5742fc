"""dlc's QA harnesses: programs that look for dlc's bugs, not tools a user compiles models with.

- `fuzz` (`dlc fuzz`): the differential fuzzer, dlc at -O0 and -O3 against onnxruntime on
  random graphs; `fuzz_index` (`--index-values`: runtime gather/scatter indices) and
  `fuzz_mutate` (`--mutate`: invalid mutants of the graphs) are its other modes;
- `opt_fuzz` (`python -m dlc.testing.opt_fuzz`): mutated lit test inputs must never crash
  `dlc-opt`;
- `conformance` (`dlc conformance`): the ONNX backend node tests and the light model-zoo models,
  the figures of docs/conformance.md and tests/onnx_backend/expected_failures.txt.

What belongs here: generators of test inputs, oracles and the drivers that run them, with
their reproducers. What does not: the user commands (`dlc.tools`; `dlc fuzz` and
`dlc conformance` there only parse arguments and call in here), pytest suites (tests/) and
benchmarks (benchmarks/). The library (dialects, passes, frontends, runtime, compiler) never
imports this package (tests/test_structure.py checks).
"""
