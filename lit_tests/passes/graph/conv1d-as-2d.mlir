// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-conv1d-as-2d)' | FileCheck %s

// A 1-D conv (stride 2, pads 1 and 2, dilation 1, 2 groups) is the 2-D conv of height 1:
// the input and the weight reshaped to [., ., 1, .], the window's attributes with a leading
// 1 (pads 0 above and below), the result reshaped back.

// CHECK-LABEL: func.func @test_conv1d
// CHECK:         %[[X:.*]] = "dlc.reshape"(%arg0) {shape = array<i64: 1, 8, 1, 20>}
// CHECK:         %[[W:.*]] = "dlc.reshape"(%arg1) {shape = array<i64: 6, 4, 1, 3>}
// CHECK:         %[[Y:.*]] = "dlc.conv"(%[[X]], %[[W]], %arg2) {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 1, 0, 2>, strides = array<i64: 1, 2>} : (tensor<1x8x1x20xf32>, tensor<6x4x1x3xf32>, tensor<6xf32>) -> tensor<1x6x1x11xf32>
// CHECK:         "dlc.reshape"(%[[Y]]) {shape = array<i64: 1, 6, 11>}
func.func @test_conv1d(%x: tensor<1x8x20xf32>, %w: tensor<6x4x3xf32>, %b: tensor<6xf32>) -> tensor<1x6x11xf32> {
  %y = "dlc.conv"(%x, %w, %b) {dilations = array<i64: 1>, group = 2 : i64, pads = array<i64: 1, 2>, strides = array<i64: 2>} : (tensor<1x8x20xf32>, tensor<6x4x3xf32>, tensor<6xf32>) -> tensor<1x6x11xf32>
  return %y : tensor<1x6x11xf32>
}
