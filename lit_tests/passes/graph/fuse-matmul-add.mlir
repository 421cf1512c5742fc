// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-fuse-matmul-add)' | FileCheck %s

// matmul(A, B) + bias -> gemm(A, B, bias); a residual of the product's shape fuses too.

// CHECK-LABEL: func.func @test_matmul_bias
// CHECK-SAME:    (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3x5xf32>, %[[C:.*]]: tensor<5xf32>, %[[R:.*]]: tensor<4x5xf32>)
// CHECK-NEXT:    %[[G:.*]] = "dlc.gemm"(%[[A]], %[[B]], %[[C]]) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64}
// CHECK-NEXT:    %[[H:.*]] = "dlc.gemm"(%[[A]], %[[B]], %[[R]])
// CHECK-NEXT:    return %[[G]], %[[H]]
func.func @test_matmul_bias(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %c: tensor<5xf32>, %r: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>) {
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %1 = "dlc.add"(%0, %c) : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %2 = "dlc.matmul"(%a, %b) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %3 = "dlc.add"(%r, %2) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return %1, %3 : tensor<4x5xf32>, tensor<4x5xf32>
}

// -----

// Negative: a batched (3-D) matmul, a product with another use, an add that broadcasts the
// product to a larger shape, integer elements.

// CHECK-LABEL: func.func @test_no_fusion
// CHECK-NOT:     "dlc.gemm"
// CHECK:         return
func.func @test_no_fusion(%a: tensor<2x4x3xf32>, %b: tensor<2x3x5xf32>, %c: tensor<5xf32>, %d: tensor<4x3xf32>, %e: tensor<3x5xf32>, %big: tensor<2x4x5xf32>, %i: tensor<4x3xi32>, %j: tensor<3x5xi32>, %k: tensor<5xi32>) -> (tensor<2x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x4x5xf32>, tensor<4x5xi32>) {
  %0 = "dlc.matmul"(%a, %b) : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
  %1 = "dlc.add"(%0, %c) : (tensor<2x4x5xf32>, tensor<5xf32>) -> tensor<2x4x5xf32>
  %2 = "dlc.matmul"(%d, %e) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %3 = "dlc.add"(%2, %c) : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  %4 = "dlc.matmul"(%d, %e) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %5 = "dlc.add"(%4, %big) : (tensor<4x5xf32>, tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
  %6 = "dlc.matmul"(%i, %j) : (tensor<4x3xi32>, tensor<3x5xi32>) -> tensor<4x5xi32>
  %7 = "dlc.add"(%6, %k) : (tensor<4x5xi32>, tensor<5xi32>) -> tensor<4x5xi32>
  return %1, %2, %3, %5, %7 : tensor<2x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>, tensor<2x4x5xf32>, tensor<4x5xi32>
}

// -----

// A product whose other user is dead (nothing reads the relu) has one live use: it fuses, and
// the dead relu is gone (the rule driver erases dead dlc ops before counting uses).

// CHECK-LABEL: func.func @test_dead_user_does_not_count
// CHECK-NEXT:    %[[G:.*]] = "dlc.gemm"
// CHECK-NEXT:    return %[[G]]
func.func @test_dead_user_does_not_count(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %c: tensor<5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %1 = "dlc.relu"(%0) : (tensor<4x5xf32>) -> tensor<4x5xf32>
  %2 = "dlc.add"(%0, %c) : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  return %2 : tensor<4x5xf32>
}
