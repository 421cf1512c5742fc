// The shape rules of the image dlc ops (resample, grid_sample), checked after parsing and by
// the dlc-verify pass, with the same messages at the same places.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.resample"
// CHECK-NEXT:    "dlc.resample"
// CHECK-NEXT:    "dlc.grid_sample"
// CHECK-NEXT:    return
func.func @test_valid(%x: tensor<1x1x2x3xi1>, %y: tensor<1x1x2x3xi8>, %g: tensor<1x4x4x2xf32>) -> tensor<1x1x4x4xf32> {
  %0 = "dlc.resample"(%x) {axis = 3, taps = 1, indices = array<i64: 0, 1, 2, 2>, weights = array<f64: 1.0, 1.0, 1.0, 1.0>, bias = array<f64: 0.0, 0.0, 0.0, 0.0>, to = i1} : (tensor<1x1x2x3xi1>) -> tensor<1x1x2x4xi1>
  %1 = "dlc.resample"(%y) {axis = 2, taps = 2, indices = array<i64: 0, 1>, weights = array<f64: 0.5, 0.5>, bias = array<f64: 0.0>, to = f32} : (tensor<1x1x2x3xi8>) -> tensor<1x1x1x3xf32>
  %2 = "dlc.grid_sample"(%1, %g) {mode = "cubic", padding_mode = "border", align_corners = 1} : (tensor<1x1x1x3xf32>, tensor<1x4x4x2xf32>) -> tensor<1x1x4x4xf32>
  return %2 : tensor<1x1x4x4xf32>
}

// -----

func.func @test_resample_axis_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.resample' op axis 2 is out of range [0, 2) for a rank-2 operand}}
  %0 = "dlc.resample"(%x) {axis = 2, taps = 1, indices = array<i64: 0>, weights = array<f64: 1.0>, bias = array<f64: 0.0>, to = f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_resample_index_out_of_range(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'dlc.resample' op index 3 is out of range [0, 3) of axis 1}}
  %0 = "dlc.resample"(%x) {axis = 1, taps = 1, indices = array<i64: 0, 3>, weights = array<f64: 1.0, 1.0>, bias = array<f64: 0.0, 0.0>, to = f32} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @test_resample_table_size(%x: tensor<2x3xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{'dlc.resample' op weights has 3 entries, expected 4 (2 outputs x 2 taps)}}
  %0 = "dlc.resample"(%x) {axis = 1, taps = 2, indices = array<i64: 0, 1, 1, 2>, weights = array<f64: 1.0, 1.0, 0.5>, bias = array<f64: 0.0, 0.0>, to = f32} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @test_resample_bool_blend(%x: tensor<3xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'dlc.resample' op operand element type i1 must be numeric (float or integer) unless the table only picks elements}}
  %0 = "dlc.resample"(%x) {axis = 0, taps = 1, indices = array<i64: 0, 1>, weights = array<f64: 0.5, 1.0>, bias = array<f64: 0.0, 0.0>, to = i1} : (tensor<3xi1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @test_resample_wrong_result(%x: tensor<2x3xf32>) -> tensor<2x2xf64> {
  // expected-error @+1 {{'dlc.resample' op result type tensor<2x2xf64> does not match the inferred type tensor<2x2xf32>}}
  %0 = "dlc.resample"(%x) {axis = 1, taps = 1, indices = array<i64: 0, 2>, weights = array<f64: 1.0, 1.0>, bias = array<f64: 0.0, 0.0>, to = f32} : (tensor<2x3xf32>) -> tensor<2x2xf64>
  return %0 : tensor<2x2xf64>
}

// -----

func.func @test_grid_sample_grid_rank(%x: tensor<1x1x3x3xf32>, %g: tensor<1x2x2x3xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'dlc.grid_sample' op x [1x1x3x3] and grid [1x2x2x3] must be [N, C, D1..Dr] and [N, O1..Or, r] with r >= 1}}
  %0 = "dlc.grid_sample"(%x, %g) {mode = "linear", padding_mode = "zeros", align_corners = 0} : (tensor<1x1x3x3xf32>, tensor<1x2x2x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @test_grid_sample_batch(%x: tensor<2x1x3x3xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<2x1x2x2xf32> {
  // expected-error @+1 {{'dlc.grid_sample' op batch sizes differ: x 2, grid 1}}
  %0 = "dlc.grid_sample"(%x, %g) {mode = "linear", padding_mode = "zeros", align_corners = 0} : (tensor<2x1x3x3xf32>, tensor<1x2x2x2xf32>) -> tensor<2x1x2x2xf32>
  return %0 : tensor<2x1x2x2xf32>
}

// -----

func.func @test_grid_sample_mode(%x: tensor<1x1x3x3xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'dlc.grid_sample' op mode 'bilinear' is not one of nearest, linear, cubic}}
  %0 = "dlc.grid_sample"(%x, %g) {mode = "bilinear", padding_mode = "zeros", align_corners = 0} : (tensor<1x1x3x3xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @test_grid_sample_padding_mode(%x: tensor<1x1x3x3xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'dlc.grid_sample' op padding_mode 'wrap' is not one of zeros, border, reflection}}
  %0 = "dlc.grid_sample"(%x, %g) {mode = "linear", padding_mode = "wrap", align_corners = 0} : (tensor<1x1x3x3xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

func.func @test_grid_sample_integer_linear(%x: tensor<1x1x3x3xi32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xi32> {
  // expected-error @+1 {{'dlc.grid_sample' op x element type i32 must be float (or numeric with mode nearest)}}
  %0 = "dlc.grid_sample"(%x, %g) {mode = "linear", padding_mode = "zeros", align_corners = 0} : (tensor<1x1x3x3xi32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xi32>
  return %0 : tensor<1x1x2x2xi32>
}

// -----

func.func @test_grid_sample_integer_grid(%x: tensor<1x1x3x3xf32>, %g: tensor<1x2x2x2xi32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'dlc.grid_sample' op grid must hold floats, got i32}}
  %0 = "dlc.grid_sample"(%x, %g) {mode = "linear", padding_mode = "zeros", align_corners = 0} : (tensor<1x1x3x3xf32>, tensor<1x2x2x2xi32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
