// A syntax error prints file:line:col, the source line and a caret; the exit status is 1 and
// there is no Python traceback.
// RUN: not dlc-opt %s 2>&1 | FileCheck %s
// RUN: sh -c 'dlc-opt %s 2>/dev/null; test $? -eq 1'

// CHECK-NOT:   Traceback
// CHECK:       parse-error.mlir:[[# @LINE + 5]]:22: error: expected ':' followed by operation type
// CHECK-NEXT:  {{^}}  %0 = "dlc.relu"(%a) -> tensor<4xf32>
// CHECK-NEXT:  {{^}}                     ^
// CHECK-NOT:   Traceback
func.func @test_missing_type(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.relu"(%a) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
