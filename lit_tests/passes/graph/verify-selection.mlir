// The shape rules of the selection dlc ops (bounded outputs), checked after parsing and by
// the dlc-verify pass (same errors, same places).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// Valid IR goes through unchanged.

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.nonzero"
// CHECK-NEXT:    "dlc.unique"
// CHECK-NEXT:    return
func.func @test_valid(%x: tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<6xi64>) {
  %0:2 = "dlc.nonzero"(%x) : (tensor<2x3xf32>) -> (tensor<2x6xi64>, tensor<i64>)
  %1:5 = "dlc.unique"(%0#0) {axis = 1 : i64, sorted = 0 : i64} : (tensor<2x6xi64>) -> (tensor<2x6xi64>, tensor<6xi64>, tensor<6xi64>, tensor<6xi64>, tensor<i64>)
  return %0#0, %1#1 : tensor<2x6xi64>, tensor<6xi64>
}

// -----

func.func @test_nonzero_wrong_bound(%x: tensor<2x3xf32>) -> tensor<2x5xi64> {
  // expected-error @+1 {{'dlc.nonzero' op result type tensor<2x5xi64>, tensor<i64> does not match the inferred type tensor<2x6xi64>, tensor<i64>}}
  %0:2 = "dlc.nonzero"(%x) : (tensor<2x3xf32>) -> (tensor<2x5xi64>, tensor<i64>)
  return %0#0 : tensor<2x5xi64>
}

// -----

func.func @test_compress_condition_not_bool(%x: tensor<3x4xf32>, %c: tensor<4xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'dlc.compress' op condition must be a 1-D bool tensor, got [4] of i64}}
  %0:2 = "dlc.compress"(%x, %c) {axis = 1 : i64} : (tensor<3x4xf32>, tensor<4xi64>) -> (tensor<3x4xf32>, tensor<i64>)
  return %0#0 : tensor<3x4xf32>
}

// -----

func.func @test_runtime_topk_k_of_two_values(%x: tensor<2x5xf32>, %k: tensor<2xi64>) -> tensor<2x5xf32> {
  // expected-error @+1 {{'dlc.runtime_topk' op k must hold one value, got [2]}}
  %0:3 = "dlc.runtime_topk"(%x, %k) {axis = 1 : i64, largest = 1 : i64} : (tensor<2x5xf32>, tensor<2xi64>) -> (tensor<2x5xf32>, tensor<2x5xi64>, tensor<i64>)
  return %0#0 : tensor<2x5xf32>
}

// -----

func.func @test_nms_scores_shape(%b: tensor<1x6x4xf32>, %s: tensor<1x2x5xf32>, %m: tensor<1xi64>, %i: tensor<1xf32>, %t: tensor<1xf32>) -> tensor<4x3xi64> {
  // expected-error @+1 {{'dlc.non_max_suppression' op scores must have shape [1, classes, 6], got [1x2x5]}}
  %0:2 = "dlc.non_max_suppression"(%b, %s, %m, %i, %t) {center_point_box = 0 : i64, max_per_class = 2 : i64, use_score_threshold = 1 : i64} : (tensor<1x6x4xf32>, tensor<1x2x5xf32>, tensor<1xi64>, tensor<1xf32>, tensor<1xf32>) -> (tensor<4x3xi64>, tensor<i64>)
  return %0#0 : tensor<4x3xi64>
}

// -----

func.func @test_unique_axis_out_of_range(%x: tensor<3xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{'dlc.unique' op axis 1 is out of range [0, 1) for a rank-1 operand}}
  %0:5 = "dlc.unique"(%x) {axis = 1 : i64, sorted = 1 : i64} : (tensor<3xi32>) -> (tensor<3xi32>, tensor<3xi64>, tensor<3xi64>, tensor<3xi64>, tensor<i64>)
  return %0#0 : tensor<3xi32>
}
