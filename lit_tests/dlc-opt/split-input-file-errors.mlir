// A failing chunk does not stop the others: they are still printed, the failing one prints
// nothing between its `// -----` markers (as in mlir-opt), the error's line is the line in the
// whole file, and the exit status is non-zero.
// RUN: not dlc-opt %s --split-input-file 2>%t.err | FileCheck %s
// RUN: FileCheck %s --check-prefix=ERR < %t.err

// CHECK-LABEL: func.func @test_first
// CHECK:       // -----
// CHECK-NEXT:  // -----
// CHECK-LABEL: func.func @test_third
// CHECK-NOT:   // -----
// CHECK-NOT:   @test_second
func.func @test_first(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @test_second(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // ERR: split-input-file-errors.mlir:[[# @LINE + 1]]:8: error: 'dlc.add' op shapes [2x3], [4] are not broadcast-compatible (axis 1)
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_third(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.relu"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
