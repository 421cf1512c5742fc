// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-qdq-conv)' | FileCheck %s

// A conv of a dequantized uint8 activation by per-channel int8 weights (with zero points 1, -1)
// convolves the integers, channels last: x - zx, the centered weights as an HWCF f32
// constant (w - zw: [[0, -2], [5, 4]]); the sums go through i32, then the scales sx * sw[m]
// and the bias, per channel.

// CHECK-LABEL: func.func @test_per_channel
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x4x4xui8>, %[[B:.*]]: tensor<2xf32>)
// CHECK:         %[[F:.*]] = "dlc.cast"(%[[X]]) {to = f32}
// CHECK:         %[[C:.*]] = "dlc.sub"(%[[F]], %{{.*}}) : (tensor<1x2x4x4xf32>, tensor<f32>)
// CHECK:         %[[T:.*]] = "dlc.transpose"(%[[C]]) {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[W:.*]] = "dlc.constant"() {value = dense<{{\[\[\[\[}}0.000000e+00, 5.000000e+00], [-2.000000e+00, 4.000000e+00]]]]> : tensor<1x1x2x2xf32>}
// CHECK:         %[[Y:.*]] = "dlc.conv_nhwc"(%[[T]], %[[W]]) {{.*}} -> tensor<1x4x4x2xf32>
// CHECK:         %[[S:.*]] = "dlc.mul"(%{{.*}}, %{{.*}}) : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK:         %[[I:.*]] = "dlc.cast"(%[[Y]]) {to = i32}
// CHECK:         %[[G:.*]] = "dlc.cast"(%[[I]]) {to = f32}
// CHECK:         %[[M:.*]] = "dlc.mul"(%[[G]], %[[S]])
// CHECK:         %[[A:.*]] = "dlc.add"(%[[M]], %[[B]])
// CHECK:         %[[R:.*]] = "dlc.transpose"(%[[A]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK:         return %[[R]]
func.func @test_per_channel(%x: tensor<1x2x4x4xui8>, %b: tensor<2xf32>) -> tensor<1x2x4x4xf32> {
  %sx = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %zx = "dlc.constant"() {value = dense<128> : tensor<ui8>} : () -> tensor<ui8>
  %w = "dlc.constant"() {value = dense<[[[[1]], [[-1]]], [[[4]], [[3]]]]> : tensor<2x2x1x1xi8>} : () -> tensor<2x2x1x1xi8>
  %sw = "dlc.constant"() {value = dense<[0.25, 0.125]> : tensor<2xf32>} : () -> tensor<2xf32>
  %zw = "dlc.constant"() {value = dense<[1, -1]> : tensor<2xi8>} : () -> tensor<2xi8>
  %0 = "dlc.dequantize"(%x, %sx, %zx) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<1x2x4x4xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x2x4x4xf32>
  %1 = "dlc.dequantize"(%w, %sw, %zw) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x2x1x1xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x2x1x1xf32>
  %2 = "dlc.conv"(%0, %1, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}

// -----

// A float activation (not dequantized), or a grouped conv: left as they are.

// CHECK-LABEL: func.func @test_float_activation
// CHECK:         "dlc.conv"
// CHECK-NOT:     "dlc.conv_nhwc"
func.func @test_float_activation(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = "dlc.constant"() {value = dense<[[[[1]], [[-1]]], [[[4]], [[3]]]]> : tensor<2x2x1x1xi8>} : () -> tensor<2x2x1x1xi8>
  %sw = "dlc.constant"() {value = dense<[0.25, 0.125]> : tensor<2xf32>} : () -> tensor<2xf32>
  %1 = "dlc.dequantize"(%w, %sw) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x2x1x1xi8>, tensor<2xf32>) -> tensor<2x2x1x1xf32>
  %2 = "dlc.conv"(%x, %1) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}

// CHECK-LABEL: func.func @test_grouped
// CHECK:         "dlc.conv"
// CHECK-NOT:     "dlc.conv_nhwc"
func.func @test_grouped(%x: tensor<1x2x4x4xui8>) -> tensor<1x2x4x4xf32> {
  %sx = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %w = "dlc.constant"() {value = dense<[[[[1]]], [[[4]]]]> : tensor<2x1x1x1xi8>} : () -> tensor<2x1x1x1xi8>
  %sw = "dlc.constant"() {value = dense<[0.25, 0.125]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "dlc.dequantize"(%x, %sx) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<1x2x4x4xui8>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %1 = "dlc.dequantize"(%w, %sw) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x1x1x1xi8>, tensor<2xf32>) -> tensor<2x1x1x1xf32>
  %2 = "dlc.conv"(%0, %1) {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x4x4xf32>
  return %2 : tensor<1x2x4x4xf32>
}

// -----

// A matmul of a dequantized uint8 activation [2, 3, 2] by per-column int8 weights [2, 2] (zero
// points 1, -1): the integers' product (x - zx by the centered weights [[0, -2], [5, 4]]),
// through i32, times sx * sw[n] along the last axis.

// CHECK-LABEL: func.func @test_matmul_per_column
// CHECK:         %[[F:.*]] = "dlc.cast"(%{{.*}}) {to = f32}
// CHECK:         %[[C:.*]] = "dlc.sub"(%[[F]], %{{.*}}) : (tensor<2x3x2xf32>, tensor<f32>)
// CHECK:         %[[W:.*]] = "dlc.constant"() {value = dense<{{\[\[}}0.000000e+00, -2.000000e+00], [5.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>}
// CHECK:         %[[Y:.*]] = "dlc.matmul"(%[[C]], %[[W]]) : (tensor<2x3x2xf32>, tensor<2x2xf32>) -> tensor<2x3x2xf32>
// CHECK:         %[[S:.*]] = "dlc.mul"(%{{.*}}, %{{.*}}) : (tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
// CHECK:         %[[I:.*]] = "dlc.cast"(%[[Y]]) {to = i32}
// CHECK:         %[[G:.*]] = "dlc.cast"(%[[I]]) {to = f32}
// CHECK:         %[[M:.*]] = "dlc.mul"(%[[G]], %[[S]])
// CHECK:         return %[[M]]
func.func @test_matmul_per_column(%x: tensor<2x3x2xui8>) -> tensor<2x3x2xf32> {
  %sx = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %zx = "dlc.constant"() {value = dense<128> : tensor<ui8>} : () -> tensor<ui8>
  %w = "dlc.constant"() {value = dense<[[1, -3], [6, 3]]> : tensor<2x2xi8>} : () -> tensor<2x2xi8>
  %sw = "dlc.constant"() {value = dense<[0.25, 0.125]> : tensor<2xf32>} : () -> tensor<2xf32>
  %zw = "dlc.constant"() {value = dense<[1, -1]> : tensor<2xi8>} : () -> tensor<2xi8>
  %0 = "dlc.dequantize"(%x, %sx, %zx) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x3x2xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x3x2xf32>
  %1 = "dlc.dequantize"(%w, %sw, %zw) {axis = 1 : i64, block_size = 0 : i64, to = f32} : (tensor<2x2xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x2xf32>
  %2 = "dlc.matmul"(%0, %1) : (tensor<2x3x2xf32>, tensor<2x2xf32>) -> tensor<2x3x2xf32>
  return %2 : tensor<2x3x2xf32>
}

// -----

// Per row of W (axis 0: not one scale per output column): left alone.
// CHECK-LABEL: func.func @test_matmul_per_row_is_left
// CHECK:         "dlc.matmul"(%{{.*}}, %{{.*}}) : (tensor<3x2xf32>, tensor<2x2xf32>)
// CHECK-NOT:     "dlc.cast"
func.func @test_matmul_per_row_is_left(%x: tensor<3x2xui8>) -> tensor<3x2xf32> {
  %sx = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %zx = "dlc.constant"() {value = dense<128> : tensor<ui8>} : () -> tensor<ui8>
  %w = "dlc.constant"() {value = dense<[[1, -3], [6, 3]]> : tensor<2x2xi8>} : () -> tensor<2x2xi8>
  %sw = "dlc.constant"() {value = dense<[0.25, 0.125]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "dlc.dequantize"(%x, %sx, %zx) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<3x2xui8>, tensor<f32>, tensor<ui8>) -> tensor<3x2xf32>
  %1 = "dlc.dequantize"(%w, %sw) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x2xi8>, tensor<2xf32>) -> tensor<2x2xf32>
  %2 = "dlc.matmul"(%0, %1) : (tensor<3x2xf32>, tensor<2x2xf32>) -> tensor<3x2xf32>
  return %2 : tensor<3x2xf32>
}
