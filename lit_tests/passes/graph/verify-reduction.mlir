// The shape rules of the reduction ops (dlc.reduce, dlc.argreduce, dlc.hardmax, dlc.cumulative,
// dlc.det).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.reduce"
// CHECK-NEXT:    "dlc.argreduce"
// CHECK-NEXT:    "dlc.cumulative"
// CHECK-NEXT:    "dlc.hardmax"
// CHECK-NEXT:    "dlc.det"
func.func @test_valid(%x: tensor<2x3xf32>, %m: tensor<4x3x3xf64>) -> tensor<2x1xf32> {
  %0 = "dlc.reduce"(%x) {fn = "sum", axes = array<i64: 1>, keepdims = 1} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  %1 = "dlc.argreduce"(%x) {fn = "max", axis = 0, keepdims = 0, select_last_index = 1} : (tensor<2x3xf32>) -> tensor<3xi64>
  %2 = "dlc.cumulative"(%x) {fn = "prod", axis = 1, exclusive = 0, reverse = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "dlc.hardmax"(%x) {axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "dlc.det"(%m) : (tensor<4x3x3xf64>) -> tensor<4xf64>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @test_reduce_unknown_fn(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.reduce' op unknown fn 'median'; expected one of sum, mean, max, min, prod, l1, l2, logsum, logsumexp, sumsquare}}
  %0 = "dlc.reduce"(%x) {fn = "median", axes = array<i64: 1>, keepdims = 0} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_reduce_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.reduce' op axis 2 is out of range [0, 2) for a rank-2 operand}}
  %0 = "dlc.reduce"(%x) {fn = "sum", axes = array<i64: 2>, keepdims = 0} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_reduce_axes_unsorted(%x: tensor<2x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'dlc.reduce' op axes [1, 0] must be sorted and distinct}}
  %0 = "dlc.reduce"(%x) {fn = "sum", axes = array<i64: 1, 0>, keepdims = 0} : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @test_reduce_log_of_integers(%x: tensor<2x3xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'dlc.reduce' op fn 'logsumexp' expects a float element type, got i32}}
  %0 = "dlc.reduce"(%x) {fn = "logsumexp", axes = array<i64: 1>, keepdims = 0} : (tensor<2x3xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @test_reduce_sum_of_bools(%x: tensor<2x3xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'dlc.reduce' op fn 'sum' expects a numeric element type, got i1}}
  %0 = "dlc.reduce"(%x) {fn = "sum", axes = array<i64: 1>, keepdims = 0} : (tensor<2x3xi1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @test_reduce_keepdims_result(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.reduce' op result type tensor<2xf32> does not match the inferred type tensor<2x1xf32>}}
  %0 = "dlc.reduce"(%x) {fn = "max", axes = array<i64: 1>, keepdims = 1} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_reduce_bad_keepdims(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.reduce' op keepdims must be 0 or 1, got 2}}
  %0 = "dlc.reduce"(%x) {fn = "max", axes = array<i64: 1>, keepdims = 2} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_argreduce_result_is_i64(%x: tensor<2x3xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'dlc.argreduce' op result type tensor<2xi32> does not match the inferred type tensor<2xi64>}}
  %0 = "dlc.argreduce"(%x) {fn = "max", axis = 1, keepdims = 0, select_last_index = 0} : (tensor<2x3xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @test_argreduce_empty_axis(%x: tensor<2x0xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'dlc.argreduce' op cannot take the argmin of an empty axis 1}}
  %0 = "dlc.argreduce"(%x) {fn = "min", axis = 1, keepdims = 0, select_last_index = 0} : (tensor<2x0xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @test_argreduce_unknown_fn(%x: tensor<2x3xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{'dlc.argreduce' op unknown fn 'sum'; expected one of max, min}}
  %0 = "dlc.argreduce"(%x) {fn = "sum", axis = 1, keepdims = 0, select_last_index = 0} : (tensor<2x3xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}

// -----

func.func @test_hardmax_integer(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  // expected-error @+1 {{'dlc.hardmax' op fn 'hardmax' expects a float element type, got i32}}
  %0 = "dlc.hardmax"(%x) {axis = 1} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// -----

func.func @test_cumulative_axis_out_of_range(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.cumulative' op axis -1 is out of range [0, 1) for a rank-1 operand}}
  %0 = "dlc.cumulative"(%x) {fn = "sum", axis = -1, exclusive = 0, reverse = 0} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @test_cumulative_unknown_fn(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.cumulative' op unknown fn 'max'; expected one of sum, prod}}
  %0 = "dlc.cumulative"(%x) {fn = "max", axis = 0, exclusive = 0, reverse = 0} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @test_cumulative_of_bools(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error @+1 {{'dlc.cumulative' op fn 'prod' expects a numeric element type, got i1}}
  %0 = "dlc.cumulative"(%x) {fn = "prod", axis = 0, exclusive = 0, reverse = 0} : (tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @test_cumulative_bad_exclusive(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'dlc.cumulative' op exclusive must be 0 or 1, got 3}}
  %0 = "dlc.cumulative"(%x) {fn = "sum", axis = 0, exclusive = 3, reverse = 0} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @test_det_not_square(%x: tensor<2x3x4xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.det' op det expects a batch of square matrices [B, n, n], got [2x3x4]}}
  %0 = "dlc.det"(%x) : (tensor<2x3x4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_det_not_batched(%x: tensor<3x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'dlc.det' op det expects a batch of square matrices [B, n, n], got [3x3]}}
  %0 = "dlc.det"(%x) : (tensor<3x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

func.func @test_det_integer(%x: tensor<1x2x2xi32>) -> tensor<1xi32> {
  // expected-error @+1 {{'dlc.det' op fn 'det' expects a float element type, got i32}}
  %0 = "dlc.det"(%x) : (tensor<1x2x2xi32>) -> tensor<1xi32>
  return %0 : tensor<1xi32>
}

// -----

func.func @test_det_result_shape(%x: tensor<2x2x2xf32>) -> tensor<2x1xf32> {
  // expected-error @+1 {{'dlc.det' op result type tensor<2x1xf32> does not match the inferred type tensor<2xf32>}}
  %0 = "dlc.det"(%x) : (tensor<2x2x2xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}
