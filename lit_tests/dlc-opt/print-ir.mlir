// --mlir-print-ir-before-all / --mlir-print-ir-after-all print the IR around every pass, dlc's
// Python passes and upstream ones alike, on stderr; --mlir-timing prints each pass's time.
// RUN: dlc-opt %s -p 'builtin.module(dlc-canonicalize,dlc-to-linalg,canonicalize)' --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER
// RUN: dlc-opt %s -p 'builtin.module(dlc-to-linalg)' --mlir-print-ir-before-all 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE
// RUN: dlc-opt %s -p 'builtin.module(dlc-to-linalg,cse)' --mlir-timing 2>&1 >/dev/null | FileCheck %s --check-prefix=TIMING

// AFTER:      IR Dump After {{.*}}(dlc-canonicalize)
// AFTER:        "dlc.relu"
// AFTER:      IR Dump After {{.*}}(dlc-to-linalg)
// AFTER-NOT:    "dlc.relu"
// AFTER:        linalg.generic
// AFTER:      IR Dump After {{.*}}(canonicalize)

// BEFORE:     IR Dump Before {{.*}}(dlc-to-linalg)
// BEFORE:       "dlc.relu"

// TIMING:     Execution time report
// TIMING-DAG: dlc-to-linalg
// TIMING-DAG: CSE
// TIMING:     Total
func.func @test_print_ir(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
