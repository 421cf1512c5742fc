// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-simplify)' | FileCheck %s

// x * 1 -> x, x + 0 -> x, x - 0 -> x, x / 1 -> x, -(-x) -> x (constants on either side of
// the commutative ops)

// CHECK-LABEL: func.func @test_identities
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    return %[[X]] : tensor<2x3xf32>
func.func @test_identities(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %one = "dlc.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %zero = "dlc.constant"() {value = dense<0.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = "dlc.mul"(%one, %x) : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "dlc.add"(%0, %zero) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %2 = "dlc.sub"(%1, %zero) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = "dlc.div"(%2, %one) : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %4 = "dlc.unary"(%3) {fn = "neg", params = array<f64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = "dlc.unary"(%4) {fn = "neg", params = array<f64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %5 : tensor<2x3xf32>
}

// -----

// Negative: 0 - x, x * 2, a 1 that broadcasts x to a larger shape, a single negation.

// CHECK-LABEL: func.func @test_not_identities
// CHECK:         "dlc.sub"
// CHECK:         "dlc.mul"
// CHECK:         "dlc.mul"
// CHECK:         "dlc.unary"{{.*}}"neg"
// CHECK-NEXT:    return
func.func @test_not_identities(%x: tensor<3xf32>) -> tensor<2x3xf32> {
  %zero = "dlc.constant"() {value = dense<0.0> : tensor<3xf32>} : () -> tensor<3xf32>
  %two = "dlc.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %ones = "dlc.constant"() {value = dense<1.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %0 = "dlc.sub"(%zero, %x) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = "dlc.mul"(%0, %two) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = "dlc.mul"(%1, %ones) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "dlc.unary"(%2) {fn = "neg", params = array<f64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %3 : tensor<2x3xf32>
}

// -----

// Transpose and reshape chains merge; inverse ones vanish.

// CHECK-LABEL: func.func @test_chains
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[T:.*]] = "dlc.transpose"(%[[X]]) {perm = array<i64: 1, 0, 2>}
// CHECK-NEXT:    %[[R:.*]] = "dlc.reshape"(%[[T]]) {shape = array<i64: 6, 4>}
// CHECK-NEXT:    return %[[R]]
func.func @test_chains(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = "dlc.transpose"(%0) {perm = array<i64: 2, 1, 0>} : (tensor<4x2x3xf32>) -> tensor<3x2x4xf32>
  %2 = "dlc.reshape"(%1) {shape = array<i64: 24>} : (tensor<3x2x4xf32>) -> tensor<24xf32>
  %3 = "dlc.reshape"(%2) {shape = array<i64: 6, 4>} : (tensor<24xf32>) -> tensor<6x4xf32>
  return %3 : tensor<6x4xf32>
}

// -----

// A transpose that only moves axes of size 1 moves no data: it is a reshape. One that
// reorders two axes of size > 1 stays.

// CHECK-LABEL: func.func @test_transpose_as_reshape
// CHECK-NEXT:    %[[R:.*]] = "dlc.reshape"(%{{.*}}) {shape = array<i64: 2, 1, 3>}
// CHECK-NEXT:    %[[T:.*]] = "dlc.transpose"(%{{.*}}) {perm = array<i64: 2, 1, 0>}
// CHECK-NEXT:    return %[[R]], %[[T]]
func.func @test_transpose_as_reshape(%x: tensor<1x2x3xf32>) -> (tensor<2x1x3xf32>, tensor<3x2x1xf32>) {
  %0 = "dlc.transpose"(%x) {perm = array<i64: 1, 0, 2>} : (tensor<1x2x3xf32>) -> tensor<2x1x3xf32>
  %1 = "dlc.transpose"(%x) {perm = array<i64: 2, 1, 0>} : (tensor<1x2x3xf32>) -> tensor<3x2x1xf32>
  return %0, %1 : tensor<2x1x3xf32>, tensor<3x2x1xf32>
}

// -----

// Aᵀ·Bᵀ -> (B·A)ᵀ (batched too: the perm swaps the last two axes)

// CHECK-LABEL: func.func @test_transposed_product
// CHECK-SAME:    (%[[A:.*]]: tensor<5x4x3xf32>, %[[B:.*]]: tensor<5x2x4xf32>)
// CHECK-NEXT:    %[[P:.*]] = "dlc.matmul"(%[[B]], %[[A]]) : (tensor<5x2x4xf32>, tensor<5x4x3xf32>) -> tensor<5x2x3xf32>
// CHECK-NEXT:    %[[T:.*]] = "dlc.transpose"(%[[P]]) {perm = array<i64: 0, 2, 1>}
// CHECK-NEXT:    return %[[T]] : tensor<5x3x2xf32>
func.func @test_transposed_product(%a: tensor<5x4x3xf32>, %b: tensor<5x2x4xf32>) -> tensor<5x3x2xf32> {
  %0 = "dlc.transpose"(%a) {perm = array<i64: 0, 2, 1>} : (tensor<5x4x3xf32>) -> tensor<5x3x4xf32>
  %1 = "dlc.transpose"(%b) {perm = array<i64: 0, 2, 1>} : (tensor<5x2x4xf32>) -> tensor<5x4x2xf32>
  %2 = "dlc.matmul"(%0, %1) : (tensor<5x3x4xf32>, tensor<5x4x2xf32>) -> tensor<5x3x2xf32>
  return %2 : tensor<5x3x2xf32>
}

// -----

// Negative: only one operand transposed.

// CHECK-LABEL: func.func @test_one_transposed
// CHECK-NEXT:    "dlc.transpose"
// CHECK-NEXT:    "dlc.matmul"
// CHECK-NEXT:    return
func.func @test_one_transposed(%a: tensor<4x3xf32>, %b: tensor<4x2xf32>) -> tensor<3x2xf32> {
  %0 = "dlc.transpose"(%a) {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %1 = "dlc.matmul"(%0, %b) : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
  return %1 : tensor<3x2xf32>
}

// -----

// A reshape that only drops unit dims of a broadcast moves before it (the broadcast then runs
// at the lower rank); one of a transpose stays.

// CHECK-LABEL: func.func @test_lower_rank
// CHECK:         %[[R:.*]] = "dlc.reshape"(%arg0) {shape = array<i64: 1, 512, 64>} : (tensor<1x1x1x512x1x64xf32>) -> tensor<1x512x64xf32>
// CHECK:         "dlc.broadcast"(%[[R]]) {shape = array<i64: 12, 512, 64>} : (tensor<1x512x64xf32>) -> tensor<12x512x64xf32>
// CHECK:         "dlc.transpose"(%arg1) {perm = array<i64: 0, 2, 1, 3>}
// CHECK:         "dlc.reshape"(%{{.*}}) {shape = array<i64: 12, 512, 64>} : (tensor<1x12x512x64xf32>) -> tensor<12x512x64xf32>
func.func @test_lower_rank(%x: tensor<1x1x1x512x1x64xf32>, %k: tensor<1x512x12x64xf32>) -> (tensor<12x512x64xf32>, tensor<12x64x512xf32>) {
  %0 = "dlc.broadcast"(%x) {shape = array<i64: 12, 1, 1, 512, 1, 64>} : (tensor<1x1x1x512x1x64xf32>) -> tensor<12x1x1x512x1x64xf32>
  %1 = "dlc.reshape"(%0) {shape = array<i64: 12, 512, 64>} : (tensor<12x1x1x512x1x64xf32>) -> tensor<12x512x64xf32>
  %2 = "dlc.transpose"(%k) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x512x12x64xf32>) -> tensor<1x12x512x64xf32>
  %3 = "dlc.reshape"(%2) {shape = array<i64: 12, 512, 64>} : (tensor<1x12x512x64xf32>) -> tensor<12x512x64xf32>
  %4 = "dlc.transpose"(%3) {perm = array<i64: 0, 2, 1>} : (tensor<12x512x64xf32>) -> tensor<12x64x512xf32>
  return %1, %4 : tensor<12x512x64xf32>, tensor<12x64x512xf32>
}
