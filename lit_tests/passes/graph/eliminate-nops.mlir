// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-eliminate-nops)' | FileCheck %s

// Ops that return their operand unchanged disappear: reshape and cast to the same type, the
// identity transpose, a zero pad, a broadcast (Expand) to the same shape, a whole slice and a
// reduction over no axis.

// CHECK-LABEL: func.func @test_nops
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT:    return %[[X]] : tensor<2x3xf32>
func.func @test_nops(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "dlc.cast"(%0) {to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "dlc.transpose"(%1) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "dlc.pad"(%2) {mode = "constant", pads = array<i64: 0, 0, 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "dlc.broadcast"(%3) {shape = array<i64: 2, 3>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = "dlc.slice"(%4) {starts = array<i64: 0, 0>, sizes = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %6 = "dlc.reduce"(%5) {fn = "sum", axes = array<i64>, keepdims = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %6 : tensor<2x3xf32>
}

// -----

// Negative: each of these changes its operand and stays.

// CHECK-LABEL: func.func @test_not_nops
// CHECK:         "dlc.reshape"
// CHECK:         "dlc.cast"
// CHECK:         "dlc.transpose"
// CHECK:         "dlc.pad"
// CHECK:         "dlc.broadcast"
// CHECK:         "dlc.slice"
// CHECK:         "dlc.reduce"{{.*}}fn = "l1"
// CHECK:         return
func.func @test_not_nops(%x: tensor<2x3xf32>) -> tensor<2x3xf64> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 3, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = "dlc.cast"(%0) {to = f64} : (tensor<3x2xf32>) -> tensor<3x2xf64>
  %2 = "dlc.transpose"(%1) {perm = array<i64: 1, 0>} : (tensor<3x2xf64>) -> tensor<2x3xf64>
  %3 = "dlc.pad"(%2) {mode = "constant", pads = array<i64: 0, 1, 0, 0>} : (tensor<2x3xf64>) -> tensor<2x4xf64>
  %4 = "dlc.broadcast"(%3) {shape = array<i64: 3, 2, 4>} : (tensor<2x4xf64>) -> tensor<3x2x4xf64>
  %5 = "dlc.slice"(%4) {starts = array<i64: 0, 0, 1>, sizes = array<i64: 1, 2, 3>, steps = array<i64: 1, 1, 1>} : (tensor<3x2x4xf64>) -> tensor<1x2x3xf64>
  %6 = "dlc.reduce"(%5) {fn = "l1", axes = array<i64>, keepdims = 1 : i64} : (tensor<1x2x3xf64>) -> tensor<1x2x3xf64>
  %7 = "dlc.reshape"(%6) {shape = array<i64: 2, 3>} : (tensor<1x2x3xf64>) -> tensor<2x3xf64>
  return %7 : tensor<2x3xf64>
}
