// dlc-schedule vectorizes NHWC max and sum pooling over channels, like a depthwise
// convolution without a filter: an 8x32 (OW x C) tile, a kh loop carrying it in registers,
// one max (or add) per window column (strided windows: one per output column and tap).
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule{target=avx512})' | FileCheck %s

// CHECK-LABEL: func.func @test_max_pool_3x3_s2
// CHECK-NOT:     linalg.pooling
// CHECK:         scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK:           vector.transfer_read {{.*}} : tensor<1x17x32xf32>, vector<17x32xf32>
// CHECK-COUNT-24:  arith.maximumf {{.*}} : vector<32xf32>
func.func @test_max_pool_3x3_s2(%x: tensor<1x33x33x64xf32>, %acc: tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32> {
  %window = tensor.empty() : tensor<3x3xf32>
  %0 = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %window : tensor<1x33x33x64xf32>, tensor<3x3xf32>) outs(%acc : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  return %0 : tensor<1x16x16x64xf32>
}

// -----

// CHECK-LABEL: func.func @test_sum_pool_remainders
// CHECK-NOT:     linalg.pooling
// CHECK-NOT:     vector.mask
// CHECK-DAG:     arith.addf {{.*}} : vector<8x32xf32>
// CHECK-DAG:     arith.addf {{.*}} : vector<6x32xf32>
// CHECK-DAG:     arith.addf {{.*}} : vector<4x8xf32>
// CHECK-DAG:     arith.addf {{.*}} : vector<6x8xf32>
func.func @test_sum_pool_remainders(%x: tensor<1x20x23x40xf32>, %acc: tensor<1x19x22x40xf32>) -> tensor<1x19x22x40xf32> {
  %window = tensor.empty() : tensor<2x2xf32>
  %0 = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %window : tensor<1x20x23x40xf32>, tensor<2x2xf32>) outs(%acc : tensor<1x19x22x40xf32>) -> tensor<1x19x22x40xf32>
  return %0 : tensor<1x19x22x40xf32>
}

// -----

// NCHW pooling (what dlc lowers ONNX pools to today) keeps the naive path.

// CHECK-LABEL: func.func @test_nchw_pool_naive
// CHECK:         linalg.pooling_nchw_max
// CHECK-NOT:     vector.
func.func @test_nchw_pool_naive(%x: tensor<1x64x33x33xf32>, %acc: tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32> {
  %window = tensor.empty() : tensor<3x3xf32>
  %0 = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %window : tensor<1x64x33x33xf32>, tensor<3x3xf32>) outs(%acc : tensor<1x64x16x16xf32>) -> tensor<1x64x16x16xf32>
  return %0 : tensor<1x64x16x16xf32>
}
