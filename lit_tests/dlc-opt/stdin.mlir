// No file argument, or `-`, reads stdin; diagnostics then name `<stdin>`.
// RUN: dlc-opt < %s | FileCheck %s
// RUN: dlc-opt - -p 'builtin.module(dlc-to-linalg)' < %s | FileCheck %s --check-prefix=LOWERED
// RUN: echo 'func.func @f(%%a: tensor<4xf32>) -> tensor<3xf32> {' | not dlc-opt 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not dlc-opt %S/no-such-file.mlir 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @test_stdin
// CHECK:         "dlc.relu"
// LOWERED-LABEL: func.func @test_stdin
// LOWERED:         linalg.generic
func.func @test_stdin(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// BAD: <stdin>:1:51: error: expected operation name in quotes
// MISSING: dlc-opt: error: cannot read '{{.*}}no-such-file.mlir': No such file or directory
