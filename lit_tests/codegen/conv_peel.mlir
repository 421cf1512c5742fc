// dlc-schedule on a strided NHWC conv (not packed) with a bias and a ReLU, whose output width
// 22 the 8-wide register tile does not divide: the register tile loop runs 0..16 step 8 and
// its last iteration is peeled off as a 6-wide tile; both tiles start from the bias and apply
// the ReLU in registers before their one store (the init and the epilogue fused into the
// register tiles, with no separate pass over the output).
// RUN: dlc-opt %s -p 'builtin.module(dlc-schedule{target=avx512})' | FileCheck %s

// CHECK-LABEL: func.func @test_strided_conv_peeled
// CHECK-NOT:     linalg.
// CHECK:         scf.for %{{.*}} = %c0 to %c16 step %c8
// CHECK:           vector.fma {{.*}} : vector<32xf32>
// CHECK:           arith.maximumf {{.*}} : vector<8x32xf32>
// CHECK:         vector.fma {{.*}} : vector<32xf32>
// CHECK:         arith.maximumf {{.*}} : vector<6x32xf32>
// CHECK-NOT:     linalg.
func.func @test_strided_conv_peeled(%x: tensor<1x45x45x4xf32>, %bias: tensor<32xf32>) -> tensor<1x22x22x32xf32> {
  %w = arith.constant dense<0.5> : tensor<3x3x4x32xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x22x22x32xf32>
  %init = linalg.broadcast ins(%bias : tensor<32xf32>) outs(%e : tensor<1x22x22x32xf32>) dimensions = [0, 1, 2]
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%x, %w : tensor<1x45x45x4xf32>, tensor<3x3x4x32xf32>) outs(%init : tensor<1x22x22x32xf32>) -> tensor<1x22x22x32xf32>
  %e2 = tensor.empty() : tensor<1x22x22x32xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x22x22x32xf32>) outs(%e2 : tensor<1x22x22x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x22x22x32xf32>
  return %r : tensor<1x22x22x32xf32>
}
