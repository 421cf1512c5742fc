// The shape rules of dlc.conv, dlc.conv_transpose and dlc.pool, checked after parsing and by
// the dlc-verify pass (same errors, same places).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.conv"
// CHECK-NEXT:    "dlc.conv_transpose"
// CHECK-NEXT:    "dlc.pool"
// CHECK-NEXT:    return
func.func @test_valid(%x: tensor<1x2x5x5xf32>, %w: tensor<4x1x3x3xf32>, %wt: tensor<4x2x2x2xf32>) -> tensor<1x4x4x4xf32> {
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2} : (tensor<1x2x5x5xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x3x3xf32>
  %1 = "dlc.conv_transpose"(%0, %wt) {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, output_padding = array<i64: 1, 1>, group = 2} : (tensor<1x4x3x3xf32>, tensor<4x2x2x2xf32>) -> tensor<1x4x5x5xf32>
  %2 = "dlc.pool"(%1) {kind = "max", kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x4x5x5xf32>) -> tensor<1x4x4x4xf32>
  return %2 : tensor<1x4x4x4xf32>
}

// -----

func.func @test_conv_channels(%x: tensor<1x3x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+1 {{'dlc.conv' op weight [4x2x3x3] needs 2 input channels (C/group = 2, group 1), got 3}}
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1} : (tensor<1x3x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @test_conv_group_divides(%x: tensor<1x4x5x5xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32> {
  // expected-error @+1 {{'dlc.conv' op group 2 must divide the input channels (4) and the output channels (3)}}
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2} : (tensor<1x4x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  return %0 : tensor<1x3x3x3xf32>
}

// -----

func.func @test_conv_pads_length(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+1 {{'dlc.conv' op pads [1, 1] must have 4 values for 2 spatial axes}}
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1>, group = 1} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @test_conv_zero_stride(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+1 {{'dlc.conv' op strides [0, 1] must be positive}}
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 0, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @test_conv_kernel_too_large(%x: tensor<1x2x2x2xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x1x1xf32> {
  // expected-error @+1 {{'dlc.conv' op the window (kernel 3, dilation 1) is larger than the padded input (2 + 0 + 0)}}
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1} : (tensor<1x2x2x2xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x1x1xf32>
  return %0 : tensor<1x4x1x1xf32>
}

// -----

func.func @test_conv_bias_shape(%x: tensor<1x2x5x5xf32>, %w: tensor<4x2x3x3xf32>, %b: tensor<2xf32>) -> tensor<1x4x3x3xf32> {
  // expected-error @+1 {{'dlc.conv' op bias of shape [2] must be [4]}}
  %0 = "dlc.conv"(%x, %w, %b) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1} : (tensor<1x2x5x5xf32>, tensor<4x2x3x3xf32>, tensor<2xf32>) -> tensor<1x4x3x3xf32>
  return %0 : tensor<1x4x3x3xf32>
}

// -----

func.func @test_conv_integers(%x: tensor<1x2x5x5xi32>, %w: tensor<4x2x3x3xi32>) -> tensor<1x4x3x3xi32> {
  // expected-error @+1 {{'dlc.conv' op expects a floating-point element type, got i32}}
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1} : (tensor<1x2x5x5xi32>, tensor<4x2x3x3xi32>) -> tensor<1x4x3x3xi32>
  return %0 : tensor<1x4x3x3xi32>
}

// -----

func.func @test_conv_rank(%x: tensor<2x5xf32>, %w: tensor<4x2xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dlc.conv' op input must be [N, C, D1, ...] (rank >= 3), got [2x5]}}
  %0 = "dlc.conv"(%x, %w) {strides = array<i64>, dilations = array<i64>, pads = array<i64>, group = 1} : (tensor<2x5xf32>, tensor<4x2xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @test_conv_transpose_channels(%x: tensor<1x3x3x3xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<1x2x5x5xf32> {
  // expected-error @+1 {{'dlc.conv_transpose' op weight [2x2x3x3] must have 3 input channels (the input's), got 2}}
  %0 = "dlc.conv_transpose"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, output_padding = array<i64: 0, 0>, group = 1} : (tensor<1x3x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x5x5xf32>
  return %0 : tensor<1x2x5x5xf32>
}

// -----

func.func @test_conv_transpose_no_output(%x: tensor<1x1x2xf32>, %w: tensor<1x1x2xf32>) -> tensor<1x1x1xf32> {
  // expected-error @+1 {{'dlc.conv_transpose' op pads [2, 2] leave no output along spatial axis 0}}
  %0 = "dlc.conv_transpose"(%x, %w) {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 2, 2>, output_padding = array<i64: 0>, group = 1} : (tensor<1x1x2xf32>, tensor<1x1x2xf32>) -> tensor<1x1x1xf32>
  return %0 : tensor<1x1x1xf32>
}

// -----

func.func @test_pool_kind(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  // expected-error @+1 {{'dlc.pool' op kind 'min' must be one of max, avg, lp}}
  %0 = "dlc.pool"(%x) {kind = "min", kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

func.func @test_pool_avg_integers(%x: tensor<1x1x4x4xi32>) -> tensor<1x1x3x3xi32> {
  // expected-error @+1 {{'dlc.pool' op avg pooling expects a floating-point element type, got i32}}
  %0 = "dlc.pool"(%x) {kind = "avg", kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x1x4x4xi32>) -> tensor<1x1x3x3xi32>
  return %0 : tensor<1x1x3x3xi32>
}

// -----

func.func @test_pool_kernel_length(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32> {
  // expected-error @+1 {{'dlc.pool' op kernel [2] must have 2 values for 2 spatial axes}}
  %0 = "dlc.pool"(%x) {kind = "max", kernel = array<i64: 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x1x4x4xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

func.func @test_pool_ceil_result(%x: tensor<1x1x6x6xf32>) -> tensor<1x1x2x2xf32> {
  // expected-error @+1 {{'dlc.pool' op result type tensor<1x1x2x2xf32> does not match the inferred type tensor<1x1x3x3xf32>}}
  %0 = "dlc.pool"(%x) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 1, count_include_pad = 0, p = 2} : (tensor<1x1x6x6xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// The channels-last forms check the same rules on [N, D..., C] inputs and HWCF filters.

func.func @test_conv_nhwc_channels(%x: tensor<1x5x5x3xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x3x3x4xf32> {
  // expected-error @+1 {{'dlc.conv_nhwc' op weight [4x2x3x3] needs 2 input channels (C/group = 2, group 1), got 3}}
  %0 = "dlc.conv_nhwc"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1} : (tensor<1x5x5x3xf32>, tensor<3x3x2x4xf32>) -> tensor<1x3x3x4xf32>
  return %0 : tensor<1x3x3x4xf32>
}

// -----

func.func @test_pool_nhwc_rank(%x: tensor<5x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'dlc.pool_nhwc' op input must be [N, D1, ..., C] (rank >= 3), got [5x3]}}
  %0 = "dlc.pool_nhwc"(%x) {kind = "max", kernel = array<i64: 1>, strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<5x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}
