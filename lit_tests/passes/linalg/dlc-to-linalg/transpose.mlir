// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.transpose(x) {perm} -> linalg.transpose into a tensor.empty of the permuted shape

// CHECK-LABEL: func.func @test_transpose_2d
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<3x2xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.transpose ins(%[[X]] : tensor<2x3xf32>) outs(%[[INIT]] : tensor<3x2xf32>) permutation = [1, 0]
// CHECK-NEXT:    return %[[R]] : tensor<3x2xf32>
func.func @test_transpose_2d(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func @test_transpose_3d
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<4x2x3xi32>
// CHECK-NEXT:    linalg.transpose ins(%[[X]] : tensor<2x3x4xi32>) outs(%[[INIT]] : tensor<4x2x3xi32>) permutation = [2, 0, 1]
func.func @test_transpose_3d(%x: tensor<2x3x4xi32>) -> tensor<4x2x3xi32> {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xi32>) -> tensor<4x2x3xi32>
  return %0 : tensor<4x2x3xi32>
}

// -----

// The identity permutation disappears: the greedy driver folds the linalg.transpose.

// CHECK-LABEL: func.func @test_transpose_identity
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    return %[[X]] : tensor<2x3xf32>
func.func @test_transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
