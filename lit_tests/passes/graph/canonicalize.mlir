// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-canonicalize)' | FileCheck %s

// transpose(x, identity) -> x

// CHECK-LABEL: func.func @test_transpose_identity
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    return %[[X]] : tensor<2x3xf32>
func.func @test_transpose_identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// transpose(transpose(x, p), q) -> transpose(x, p[q])

// CHECK-LABEL: func.func @test_transpose_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[T:.*]] = "dlc.transpose"(%[[X]]) {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
// CHECK-NEXT:    return %[[T]] : tensor<3x2x4xf32>
func.func @test_transpose_chain(%x: tensor<2x3x4xf32>) -> tensor<3x2x4xf32> {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = "dlc.transpose"(%0) {perm = array<i64: 2, 1, 0>} : (tensor<4x2x3xf32>) -> tensor<3x2x4xf32>
  return %1 : tensor<3x2x4xf32>
}

// -----

// Inverse permutations compose to the identity, which folds away too.

// CHECK-LABEL: func.func @test_transpose_inverse
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    return %[[X]] : tensor<2x3x4xf32>
func.func @test_transpose_inverse(%x: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = "dlc.transpose"(%0) {perm = array<i64: 1, 2, 0>} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
  return %1 : tensor<2x3x4xf32>
}

// -----

// A transpose whose input is not a transpose stays.

// CHECK-LABEL: func.func @test_transpose_kept
// CHECK-NEXT:    %[[T:.*]] = "dlc.transpose"(%{{.*}}) {perm = array<i64: 1, 0>}
// CHECK-NEXT:    return %[[T]]
func.func @test_transpose_kept(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// reshape(x) to x's own shape -> x

// CHECK-LABEL: func.func @test_reshape_same_shape
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    return %[[X]] : tensor<2x3xf32>
func.func @test_reshape_same_shape(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 2, -1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// reshape(reshape(x)) -> reshape(x), with the -1 resolved

// CHECK-LABEL: func.func @test_reshape_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[R:.*]] = "dlc.reshape"(%[[X]]) {shape = array<i64: 4, 6>} : (tensor<2x3x4xf32>) -> tensor<4x6xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4x6xf32>
func.func @test_reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 24>} : (tensor<2x3x4xf32>) -> tensor<24xf32>
  %1 = "dlc.reshape"(%0) {shape = array<i64: 4, -1>} : (tensor<24xf32>) -> tensor<4x6xf32>
  return %1 : tensor<4x6xf32>
}

// -----

// A round trip through another shape folds to the input.

// CHECK-LABEL: func.func @test_reshape_roundtrip
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    return %[[X]] : tensor<2x3xf32>
func.func @test_reshape_roundtrip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<6xf32>
  %1 = "dlc.reshape"(%0) {shape = array<i64: 2, 3>} : (tensor<6xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CSE: two identical adds become one.

// CHECK-LABEL: func.func @test_cse
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = "dlc.add"(%[[A]], %[[B]])
// CHECK-NEXT:    %[[P:.*]] = "dlc.mul"(%[[S]], %[[S]])
// CHECK-NEXT:    return %[[P]]
func.func @test_cse(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "dlc.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "dlc.mul"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// No CSE when the operands differ (a - b and b - a).

// CHECK-LABEL: func.func @test_cse_operand_order
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[D1:.*]] = "dlc.sub"(%[[A]], %[[B]])
// CHECK-NEXT:    %[[D2:.*]] = "dlc.sub"(%[[B]], %[[A]])
// CHECK-NEXT:    "dlc.mul"(%[[D1]], %[[D2]])
func.func @test_cse_operand_order(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.sub"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "dlc.sub"(%b, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "dlc.mul"(%0, %1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// CSE of constants compares their values: equal constants merge, different ones stay.

// CHECK-LABEL: func.func @test_cse_constants
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>)
// CHECK-DAG:     %[[ONE:.*]] = "dlc.constant"() {value = dense<1.000000e+00> : tensor<4xf32>}
// CHECK-DAG:     %[[TWO:.*]] = "dlc.constant"() {value = dense<2.000000e+00> : tensor<4xf32>}
// CHECK:         %[[S1:.*]] = "dlc.add"(%[[A]], %[[ONE]])
// CHECK-NEXT:    %[[S2:.*]] = "dlc.add"(%[[S1]], %[[ONE]])
// CHECK-NEXT:    %[[S3:.*]] = "dlc.add"(%[[S2]], %[[TWO]])
// CHECK-NEXT:    return %[[S3]]
func.func @test_cse_constants(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = "dlc.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %c1 = "dlc.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %c2 = "dlc.constant"() {value = dense<2.0> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "dlc.add"(%a, %c0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "dlc.add"(%0, %c1) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "dlc.add"(%1, %c2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// DCE: dlc ops whose results are unused disappear, chains of them too.

// CHECK-LABEL: func.func @test_dce
// CHECK-SAME:    (%[[A:.*]]: tensor<4xf32>, %{{.*}}: tensor<4xf32>)
// CHECK-NEXT:    return %[[A]] : tensor<4xf32>
func.func @test_dce(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "dlc.relu"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %c = "dlc.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
  return %a : tensor<4xf32>
}

// -----

// Nothing to fold: the ops stay as they are.

// CHECK-LABEL: func.func @test_nothing_to_fold
// CHECK-NEXT:    %[[G:.*]] = "dlc.gemm"(%{{.*}}, %{{.*}}) {alpha = 1.000000e+00 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 0 : i64}
// CHECK-NEXT:    %[[R:.*]] = "dlc.relu"(%[[G]])
// CHECK-NEXT:    return %[[R]]
func.func @test_nothing_to_fold(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  %1 = "dlc.relu"(%0) : (tensor<4x5xf32>) -> tensor<4x5xf32>
  return %1 : tensor<4x5xf32>
}
