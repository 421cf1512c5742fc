// RUN: dlc-opt %s -p 'builtin.module(dlc-conv3d-as-2d)' | FileCheck %s

// A 3x3x3 conv (pads 0 in depth, 1 in H and W) on 5 input depths: 3 output depths. The input
// transposed once to [N, D, H, W, C]; depth tap t reads depths t, t+1, t+2: a slice reshaped to
// 3 images, convolved channels-last by the filter's depth slice t as HWCF, with the H/W pads;
// the first conv carries the bias, the others are added; the sum goes back to NCDHW.

// CHECK-LABEL: func.func @test_conv3d
// CHECK:         %[[X:.*]] = "dlc.transpose"(%arg0) {perm = array<i64: 0, 2, 3, 4, 1>} : (tensor<1x4x5x6x6xf32>) -> tensor<1x5x6x6x4xf32>
// CHECK:         %[[S0:.*]] = "dlc.slice"(%[[X]]) {sizes = array<i64: 1, 3, 6, 6, 4>, starts = array<i64: 0, 0, 0, 0, 0>
// CHECK:         %[[I0:.*]] = "dlc.reshape"(%[[S0]]) {shape = array<i64: 3, 6, 6, 4>}
// CHECK:         %[[Y0:.*]] = "dlc.conv_nhwc"(%[[I0]], %{{.*}}, %arg1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<3x6x6x4xf32>, tensor<3x3x4x8xf32>, tensor<8xf32>) -> tensor<3x6x6x8xf32>
// CHECK:         "dlc.slice"(%[[X]]) {sizes = array<i64: 1, 3, 6, 6, 4>, starts = array<i64: 0, 1, 0, 0, 0>
// CHECK:         %[[Y1:.*]] = "dlc.conv_nhwc"(%{{.*}}, %{{.*}}) {{.*}} -> tensor<3x6x6x8xf32>
// CHECK:         %[[A1:.*]] = "dlc.add"(%[[Y0]], %[[Y1]])
// CHECK:         "dlc.slice"(%[[X]]) {sizes = array<i64: 1, 3, 6, 6, 4>, starts = array<i64: 0, 2, 0, 0, 0>
// CHECK:         %[[Y2:.*]] = "dlc.conv_nhwc"
// CHECK:         %[[A2:.*]] = "dlc.add"(%[[A1]], %[[Y2]])
// CHECK:         %[[R:.*]] = "dlc.reshape"(%[[A2]]) {shape = array<i64: 1, 3, 6, 6, 8>}
// CHECK:         "dlc.transpose"(%[[R]]) {perm = array<i64: 0, 4, 1, 2, 3>} : (tensor<1x3x6x6x8xf32>) -> tensor<1x8x3x6x6xf32>
func.func @test_conv3d(%x: tensor<1x4x5x6x6xf32>, %b: tensor<8xf32>) -> tensor<1x8x3x6x6xf32> {
  %w = "dlc.constant"() {value = dense<0.5> : tensor<8x4x3x3x3xf32>} : () -> tensor<8x4x3x3x3xf32>
  %y = "dlc.conv"(%x, %w, %b) {dilations = array<i64: 1, 1, 1>, group = 1 : i64, pads = array<i64: 0, 1, 1, 0, 1, 1>, strides = array<i64: 1, 1, 1>} : (tensor<1x4x5x6x6xf32>, tensor<8x4x3x3x3xf32>, tensor<8xf32>) -> tensor<1x8x3x6x6xf32>
  return %y : tensor<1x8x3x6x6xf32>
}
