// Graph passes run on IR that never went through dlc-verify (--no-dlc-verify, or a pipeline
// without dlc-verify): their rules do not trust attributes the verifier rejects. No pass fails
// with an internal error or rewrites the bad op into a valid one; dlc-verify then reports each
// bad op at its location.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-fold-constants,dlc-verify)'
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-canonicalize,dlc-verify)'
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-simplify,dlc-verify)'
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-sink-transpose,dlc-verify)'
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-convert-layout,dlc-verify)'
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-eliminate-nops,dlc-eliminate-zero-size,dlc-strength-reduce,dlc-verify)'
// RUN: dlc-opt %s --split-input-file --no-dlc-verify -p 'builtin.module(dlc-fold-constants)' | FileCheck %s

// the folder does not evaluate a transpose whose perm repeats an axis (numpy would raise)
// CHECK-LABEL: func.func @test_fold_repeated_axis
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 0, 0>}
func.func @test_fold_repeated_axis() -> tensor<2x3xf32> {
  %c = "dlc.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  // expected-error @+1 {{'dlc.transpose' op perm [0, 0] is not a permutation of the 2 axes}}
  %t = "dlc.transpose"(%c) {perm = array<i64: 0, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %t : tensor<2x3xf32>
}

// -----

// nor one whose perm names an axis the operand does not have
// CHECK-LABEL: func.func @test_fold_axis_out_of_range
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 5, 1>}
func.func @test_fold_axis_out_of_range() -> tensor<2x3xf32> {
  %c = "dlc.constant"() {value = dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>} : () -> tensor<3x2xf32>
  // expected-error @+1 {{'dlc.transpose' op perm [5, 1] is not a permutation of the 2 axes}}
  %t = "dlc.transpose"(%c) {perm = array<i64: 5, 1>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %t : tensor<2x3xf32>
}

// -----

// rules on a chain of transposes: a bad perm is neither composed nor turned into a reshape
// CHECK-LABEL: func.func @test_transpose_chain
func.func @test_transpose_chain(%x: tensor<3x2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.transpose' op perm [0, 0] is not a permutation of the 2 axes}}
  %t = "dlc.transpose"(%x) {perm = array<i64: 0, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{'dlc.transpose' op perm [5, 1] is not a permutation of the 2 axes}}
  %u = "dlc.transpose"(%t) {perm = array<i64: 5, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = "dlc.relu"(%u) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %r : tensor<2x3xf32>
}

// -----

// a bad perm under an elementwise op with a constant partner (sink-transpose reads the perm)
// CHECK-LABEL: func.func @test_transpose_under_add
func.func @test_transpose_under_add(%x: tensor<3x2xf32>) -> tensor<2x3xf32> {
  %c = "dlc.constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  // expected-error @+1 {{'dlc.transpose' op perm [1, 1] is not a permutation of the 2 axes}}
  %t = "dlc.transpose"(%x) {perm = array<i64: 1, 1>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  %s = "dlc.add"(%t, %c) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}
