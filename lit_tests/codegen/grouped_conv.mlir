// dlc-schedule computes a grouped NHWC convolution (linalg.conv_2d_nhwgc_gfhwc, a constant
// filter) as a generic of FMAs with its kernel taps unrolled (one strided view of the input and
// one slice of the packed filter per tap), in a forall of output tiles with its bias init fused:
// register tiles of 7 output positions x the 8 channels of a group, the input channels of the
// group by 1 carrying the accumulator in registers, 9 FMAs per channel for a 3x3 kernel.
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-schedule{target=avx2})' | FileCheck %s

// CHECK-LABEL: func.func @test_grouped_3x3
// CHECK-NOT:     linalg.conv_2d_nhwgc_gfhwc
// CHECK-COUNT-9: tensor.extract_slice %{{.*}} [1, 14, 14, 26, 8] [1, 1, 1, 1, 1]
// CHECK:         scf.forall
// CHECK:           scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<7x8xf32>)
// CHECK-COUNT-9:     math.fma {{.*}} : vector<7x8xf32>
// CHECK:             scf.yield {{.*}} : vector<7x8xf32>
// CHECK:           vector.transfer_write {{.*}} : vector<7x8xf32>, tensor<7x8xf32>
// CHECK-NOT:     vector.mask
func.func @test_grouped_3x3(%x: tensor<1x16x16x208xf32>, %b: tensor<208xf32>) -> tensor<1x14x14x208xf32> {
  %w = arith.constant dense<0.5> : tensor<26x8x3x3x8xf32>
  %e = tensor.empty() : tensor<1x14x14x26x8xf32>
  %bg = tensor.expand_shape %b [[0, 1]] output_shape [26, 8] : tensor<208xf32> into tensor<26x8xf32>
  %acc = linalg.broadcast ins(%bg : tensor<26x8xf32>) outs(%e : tensor<1x14x14x26x8xf32>) dimensions = [0, 1, 2]
  %xg = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 16, 16, 26, 8] : tensor<1x16x16x208xf32> into tensor<1x16x16x26x8xf32>
  %y = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xg, %w : tensor<1x16x16x26x8xf32>, tensor<26x8x3x3x8xf32>) outs(%acc : tensor<1x14x14x26x8xf32>) -> tensor<1x14x14x26x8xf32>
  %r = tensor.collapse_shape %y [[0], [1], [2], [3, 4]] : tensor<1x14x14x26x8xf32> into tensor<1x14x14x208xf32>
  return %r : tensor<1x14x14x208xf32>
}

// -----

// Strided: each tap reads a strided view of the input (no copy); 16 channels per group take two
// 8-lane vectors, so the register tile is 6 output positions wide (12 accumulators).

// CHECK-LABEL: func.func @test_grouped_strided
// CHECK-NOT:     linalg.conv_2d_nhwgc_gfhwc
// CHECK:         tensor.extract_slice %{{.*}}[0, 0, 0, 0, 0] [1, 6, 6, 20, 8] [1, 2, 2, 1, 1]
// CHECK:         tensor.extract_slice %{{.*}}[0, 2, 2, 0, 0] [1, 6, 6, 20, 8] [1, 2, 2, 1, 1]
// CHECK:         scf.forall
// CHECK:           scf.for {{.*}} -> (vector<6x16xf32>)
// CHECK-COUNT-9:     math.fma {{.*}} : vector<6x16xf32>
// CHECK-NOT:     vector.mask
func.func @test_grouped_strided(%x: tensor<1x13x13x160xf32>) -> tensor<1x6x6x320xf32> {
  %w = arith.constant dense<0.25> : tensor<20x16x3x3x8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x20x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x20x16xf32>) -> tensor<1x6x6x20x16xf32>
  %xg = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 13, 13, 20, 8] : tensor<1x13x13x160xf32> into tensor<1x13x13x20x8xf32>
  %y = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%xg, %w : tensor<1x13x13x20x8xf32>, tensor<20x16x3x3x8xf32>) outs(%acc : tensor<1x6x6x20x16xf32>) -> tensor<1x6x6x20x16xf32>
  %r = tensor.collapse_shape %y [[0], [1], [2], [3, 4]] : tensor<1x6x6x20x16xf32> into tensor<1x6x6x320xf32>
  return %r : tensor<1x6x6x320xf32>
}

// -----

// A filter that is not a constant keeps the naive path.

// CHECK-LABEL: func.func @test_grouped_naive
// CHECK:         linalg.conv_2d_nhwgc_gfhwc
func.func @test_grouped_naive(%x: tensor<1x16x16x208xf32>, %w: tensor<26x8x3x3x8xf32>, %acc: tensor<1x14x14x26x8xf32>) -> tensor<1x14x14x26x8xf32> {
  %xg = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 16, 16, 26, 8] : tensor<1x16x16x208xf32> into tensor<1x16x16x26x8xf32>
  %y = linalg.conv_2d_nhwgc_gfhwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%xg, %w : tensor<1x16x16x26x8xf32>, tensor<26x8x3x3x8xf32>) outs(%acc : tensor<1x14x14x26x8xf32>) -> tensor<1x14x14x26x8xf32>
  return %y : tensor<1x14x14x26x8xf32>
}
