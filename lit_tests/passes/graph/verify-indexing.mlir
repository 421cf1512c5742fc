// The shape rules of the gather/scatter and indexing dlc ops, checked after parsing and by
// the dlc-verify pass (same errors, same places).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// Valid IR goes through unchanged.

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.gather"
// CHECK-NEXT:    "dlc.topk"
// CHECK-NEXT:    return
func.func @test_valid(%d: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<3x2xi64> {
  %0 = "dlc.gather"(%d, %i) {axis = 0 : i64} : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  %1:2 = "dlc.topk"(%0) {k = 2 : i64, axis = 1 : i64, largest = 1 : i64} : (tensor<3x4xf32>) -> (tensor<3x2xf32>, tensor<3x2xi64>)
  return %1#1 : tensor<3x2xi64>
}

// -----

// ---------------------------------------------------------------- gathers

func.func @test_gather_axis_out_of_range(%d: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'dlc.gather' op axis 2 is out of range [0, 2) for a rank-2 operand}}
  %0 = "dlc.gather"(%d, %i) {axis = 2 : i64} : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @test_gather_float_indices(%d: tensor<5x4xf32>, %i: tensor<3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'dlc.gather' op indices must be signed integers (i32 or i64), got f32}}
  %0 = "dlc.gather"(%d, %i) {axis = 0 : i64} : (tensor<5x4xf32>, tensor<3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @test_gather_wrong_result_type(%d: tensor<5x4xf32>, %i: tensor<3xi64>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'dlc.gather' op result type tensor<5x3xf32> does not match the inferred type tensor<3x4xf32>}}
  %0 = "dlc.gather"(%d, %i) {axis = 0 : i64} : (tensor<5x4xf32>, tensor<3xi64>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @test_gather_from_empty_axis(%d: tensor<0x4xf32>, %i: tensor<3xi64>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'dlc.gather' op axis 0 of [0x4] is empty: there is nothing to index}}
  %0 = "dlc.gather"(%d, %i) {axis = 0 : i64} : (tensor<0x4xf32>, tensor<3xi64>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @test_gather_elements_rank_mismatch(%d: tensor<3x4xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{'dlc.gather_elements' op indices [3] must have the data's rank 2}}
  %0 = "dlc.gather_elements"(%d, %i) {axis = 0 : i64} : (tensor<3x4xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @test_gather_nd_tuple_too_long(%d: tensor<3x4xf32>, %i: tensor<2x3xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.gather_nd' op the last axis of indices (3) must be in [1, 2] for rank-2 data}}
  %0 = "dlc.gather_nd"(%d, %i) {batch_dims = 0 : i64} : (tensor<3x4xf32>, tensor<2x3xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_gather_nd_batch_mismatch(%d: tensor<3x4xf32>, %i: tensor<2x1xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.gather_nd' op batch axes differ: data [3x4], indices [2x1] (batch_dims 1)}}
  %0 = "dlc.gather_nd"(%d, %i) {batch_dims = 1 : i64} : (tensor<3x4xf32>, tensor<2x1xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// ---------------------------------------------------------------- scatters

func.func @test_scatter_elements_unknown_reduction(%d: tensor<4xf32>, %i: tensor<2xi64>, %u: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.scatter_elements' op reduction 'sum' is not one of none, add, mul, max, min}}
  %0 = "dlc.scatter_elements"(%d, %i, %u) {axis = 0 : i64, reduction = "sum"} : (tensor<4xf32>, tensor<2xi64>, tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @test_scatter_elements_updates_shape(%d: tensor<4xf32>, %i: tensor<2xi64>, %u: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.scatter_elements' op updates of shape [3] must have shape [2]}}
  %0 = "dlc.scatter_elements"(%d, %i, %u) {axis = 0 : i64, reduction = "none"} : (tensor<4xf32>, tensor<2xi64>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @test_scatter_nd_updates_element_type(%d: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf16>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'dlc.scatter_nd' op updates must have the data's element type f32, got f16}}
  %0 = "dlc.scatter_nd"(%d, %i, %u) {reduction = "none"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x3xf16>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @test_scatter_nd_updates_shape(%d: tensor<4x3xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'dlc.scatter_nd' op updates of shape [2x4] must have shape [2x3]}}
  %0 = "dlc.scatter_nd"(%d, %i, %u) {reduction = "add"} : (tensor<4x3xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// ---------------------------------------------------------------- one_hot

func.func @test_one_hot_values_shape(%i: tensor<3xi64>, %v: tensor<3xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'dlc.one_hot' op values must hold two elements [off, on], got [3]}}
  %0 = "dlc.one_hot"(%i, %v) {depth = 5 : i64, axis = 1 : i64} : (tensor<3xi64>, tensor<3xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @test_one_hot_axis(%i: tensor<3xi64>, %v: tensor<2xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{'dlc.one_hot' op axis 2 is out of range [0, 1] for rank-1 indices}}
  %0 = "dlc.one_hot"(%i, %v) {depth = 5 : i64, axis = 2 : i64} : (tensor<3xi64>, tensor<2xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

// ---------------------------------------------------------------- topk

func.func @test_topk_k_too_large(%x: tensor<3x4xf32>) -> tensor<3x5xi64> {
  // expected-error @+1 {{'dlc.topk' op k 5 is out of range [0, 4] (axis 1 of [3x4])}}
  %0:2 = "dlc.topk"(%x) {k = 5 : i64, axis = 1 : i64, largest = 1 : i64} : (tensor<3x4xf32>) -> (tensor<3x5xf32>, tensor<3x5xi64>)
  return %0#1 : tensor<3x5xi64>
}

// -----

func.func @test_topk_bool(%x: tensor<4xi1>) -> tensor<2xi64> {
  // expected-error @+1 {{'dlc.topk' op expects a numeric element type, got i1}}
  %0:2 = "dlc.topk"(%x) {k = 2 : i64, axis = 0 : i64, largest = 1 : i64} : (tensor<4xi1>) -> (tensor<2xi1>, tensor<2xi64>)
  return %0#1 : tensor<2xi64>
}

// -----

func.func @test_topk_indices_not_i64(%x: tensor<4xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'dlc.topk' op result type tensor<2xf32>, tensor<2xi32> does not match the inferred type tensor<2xf32>, tensor<2xi64>}}
  %0:2 = "dlc.topk"(%x) {k = 2 : i64, axis = 0 : i64, largest = 1 : i64} : (tensor<4xf32>) -> (tensor<2xf32>, tensor<2xi32>)
  return %0#1 : tensor<2xi32>
}

// -----

// Two results are checked by IRDL, at parse time.
func.func @test_topk_one_result(%x: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{op expects exactly 2 results, but got 1}}
  %0 = "dlc.topk"(%x) {k = 2 : i64, axis = 0 : i64, largest = 1 : i64} : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
