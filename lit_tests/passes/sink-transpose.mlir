// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-sink-transpose)' | FileCheck %s

// A transpose sinks below relu, add (both operands transposed alike) and mul by a constant
// (transposed back at compile time), then meets its inverse and both vanish.

// CHECK-LABEL: func.func @test_sink_and_cancel
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[Y:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[R:.*]] = "dlc.relu"(%[[X]]) : (tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[A:.*]] = "dlc.add"(%[[R]], %[[Y]]) : (tensor<2x3x4xf32>, tensor<2x3x4xf32>)
// CHECK-NEXT:    %[[C:.*]] = "dlc.constant"() {value = dense<{{\[\[}}[1.000000e+00], [2.000000e+00], [3.000000e+00]]]> : tensor<1x3x1xf32>}
// CHECK-NEXT:    %[[M:.*]] = "dlc.mul"(%[[A]], %[[C]])
// CHECK-NEXT:    return %[[M]] : tensor<2x3x4xf32>
func.func @test_sink_and_cancel(%x: tensor<2x3x4xf32>, %y: tensor<2x3x4xf32>) -> tensor<2x3x4xf32> {
  %c = "dlc.constant"() {value = dense<[[[1.0, 2.0, 3.0]]]> : tensor<1x1x3xf32>} : () -> tensor<1x1x3xf32>
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %u = "dlc.transpose"(%y) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %r = "dlc.relu"(%t) : (tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %a = "dlc.add"(%r, %u) : (tensor<2x4x3xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  %m = "dlc.mul"(%a, %c) : (tensor<2x4x3xf32>, tensor<1x1x3xf32>) -> tensor<2x4x3xf32>
  %b = "dlc.transpose"(%m) {perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  return %b : tensor<2x3x4xf32>
}

// -----

// Negative: a transpose with another use stays (sinking would compute it twice), and so does
// one whose partner operand is transposed differently.

// CHECK-LABEL: func.func @test_no_sink
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 1, 0>}
// CHECK:         "dlc.relu"
// CHECK:         "dlc.add"
// CHECK:         return
func.func @test_no_sink(%x: tensor<3x3xf32>, %y: tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<3x3xf32>) {
  %t = "dlc.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %r = "dlc.relu"(%t) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %a = "dlc.add"(%t, %y) : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  return %r, %a : tensor<3x3xf32>, tensor<3x3xf32>
}

// -----

// Negative: x - transpose(x) (found by dlc fuzz, seed 20261208): the transpose is its own
// "partner" (a transpose of the other operand by the inverse permutation); sinking it rebuilt
// the same pattern forever ("failed to converge"). It stays.

// CHECK-LABEL: func.func @test_self_partner
// CHECK-SAME:    (%[[X:.*]]: tensor<2x2xf32>)
// CHECK-NEXT:    %[[T:.*]] = "dlc.transpose"(%[[X]]) {perm = array<i64: 1, 0>}
// CHECK-NEXT:    %[[S:.*]] = "dlc.sub"(%[[X]], %[[T]])
// CHECK-NEXT:    return %[[S]]
func.func @test_self_partner(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %t = "dlc.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %s = "dlc.sub"(%x, %t) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}
