// dlc-schedule vectorizes an NHWC depthwise convolution over channels: tiled [1, 1, 8, 32]
// over (n, oh, ow, c), a kh loop carrying the 8x32 accumulator in registers (hoisted), one
// FMA per kernel column on the whole register tile.
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule{target=avx512})' | FileCheck %s

// CHECK-LABEL: func.func @test_depthwise_3x3
// CHECK-NOT:     linalg.depthwise_conv_2d
// CHECK:         scf.for {{.*}} step %c8
// CHECK:           vector.transfer_read {{.*}} : tensor<1x8x32xf32>, vector<8x32xf32>
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK:             vector.transfer_read {{.*}} : tensor<1x10x32xf32>, vector<10x32xf32>
// CHECK-COUNT-3:     vector.fma {{.*}} : vector<8x32xf32>
// CHECK:           vector.transfer_write {{.*}} : vector<8x32xf32>, tensor<1x8x32xf32>
func.func @test_depthwise_3x3(%x: tensor<1x18x18x32xf32>, %w: tensor<3x3x32xf32>, %b: tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32> {
  %0 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x18x18x32xf32>, tensor<3x3x32xf32>) outs(%b : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  return %0 : tensor<1x16x16x32xf32>
}

// -----

// C = 40 is split into 32 + 8 channels and OW = 19 into 16 + 3 (no masks): four parts.

// CHECK-LABEL: func.func @test_depthwise_remainders
// CHECK-NOT:     linalg.depthwise_conv_2d
// CHECK-NOT:     vector.mask
// CHECK-DAG:     vector.fma {{.*}} : vector<8x32xf32>
// CHECK-DAG:     vector.fma {{.*}} : vector<3x32xf32>
// CHECK-DAG:     vector.fma {{.*}} : vector<4x8xf32>
// CHECK-DAG:     vector.fma {{.*}} : vector<3x8xf32>
func.func @test_depthwise_remainders(%x: tensor<1x12x21x40xf32>, %w: tensor<3x3x40xf32>, %b: tensor<1x10x19x40xf32>) -> tensor<1x10x19x40xf32> {
  %0 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x12x21x40xf32>, tensor<3x3x40xf32>) outs(%b : tensor<1x10x19x40xf32>) -> tensor<1x10x19x40xf32>
  return %0 : tensor<1x10x19x40xf32>
}

// -----

// NCHW depthwise convolutions and tiny ones keep the naive path.

// CHECK-LABEL: func.func @test_depthwise_naive
// CHECK:         linalg.depthwise_conv_2d_nchw_chw
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     vector.
func.func @test_depthwise_naive(%x: tensor<1x32x18x18xf32>, %w: tensor<32x3x3xf32>, %b: tensor<1x32x16x16xf32>, %y: tensor<1x6x6x16xf32>, %v: tensor<3x3x16xf32>, %c: tensor<1x4x4x16xf32>) -> (tensor<1x32x16x16xf32>, tensor<1x4x4x16xf32>) {
  %0 = linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w : tensor<1x32x18x18xf32>, tensor<32x3x3xf32>) outs(%b : tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  %1 = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%y, %v : tensor<1x6x6x16xf32>, tensor<3x3x16xf32>) outs(%c : tensor<1x4x4x16xf32>) -> tensor<1x4x4x16xf32>
  return %0, %1 : tensor<1x32x16x16xf32>, tensor<1x4x4x16xf32>
}
