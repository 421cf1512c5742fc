// A misspelled pass, option or anchor: one line, exit 1, and the closest name as a suggestion.
// RUN: not dlc-opt %s -p 'builtin.module(dlc-canonicalise)' 2>&1 | FileCheck %s --check-prefix=DLC
// RUN: not dlc-opt %s -p 'builtin.module(func.func(canonicalze))' 2>&1 | FileCheck %s --check-prefix=MLIR
// RUN: not dlc-opt %s -p 'builtin.module(convert-linalg-to-loop)' 2>&1 | FileCheck %s --check-prefix=PLURAL
// RUN: not dlc-opt %s -p 'builtin.module(canonicalize{max-iteratons=3})' 2>&1 | FileCheck %s --check-prefix=OPTION
// RUN: not dlc-opt %s -p 'builtin.module(func.fnc(cse))' 2>&1 | FileCheck %s --check-prefix=ANCHOR
// RUN: not dlc-opt %s -p 'builtin.module(qqqqqq)' 2>&1 | FileCheck %s --check-prefix=FAR

// DLC:        dlc-opt: error: unknown pass 'dlc-canonicalise': {{.*}}; did you mean 'dlc-canonicalize'?
// DLC-NOT:    Traceback
// MLIR:       dlc-opt: error: unknown pass 'canonicalze': {{.*}}; did you mean 'canonicalize'?
// PLURAL:     did you mean 'convert-linalg-to-loops'?
// OPTION:     dlc-opt: error: invalid pipeline 'canonicalize{max-iteratons=3}': {{.*}}no such option max-iteratons{{.*}}; did you mean 'max-iterations'?
// ANCHOR:     dlc-opt: error: 'func.fnc(...)' in the pipeline names no registered operation: the passes nested in it would never run; did you mean 'func.func'?
// FAR:        dlc-opt: error: unknown pass 'qqqqqq'
// FAR-NOT:    did you mean

func.func @test_unused(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
