// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-clip-taps{min-macs=0})' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-clip-taps)' | FileCheck %s --check-prefix=OFF

// (The defaults leave these small convs alone: under 16M multiply-adds.) A 3x1 conv of
// dilation 4 and padding 4 on 6 rows: output rows 0-1 read the input with taps 1 and 2 only,
// rows 2-3 with tap 1, rows 4-5 with taps 0 and 1. Three convs without padding, each on the
// input rows its taps read, with those rows of the filter, joined along the rows.

// CHECK-LABEL: func.func @test_clip_rows
// CHECK:         %[[X0:.*]] = "dlc.slice"(%[[X:.*]]) {sizes = array<i64: 1, 6, 5, 8>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 1, 1>}
// CHECK:         %[[Y0:.*]] = "dlc.conv_nhwc"(%[[X0]], %{{.*}}, %[[B:.*]]) {dilations = array<i64: 4, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x6x5x8xf32>, tensor<2x1x8x4xf32>, tensor<4xf32>) -> tensor<1x2x5x4xf32>
// CHECK:         %[[X1:.*]] = "dlc.slice"(%[[X]]) {sizes = array<i64: 1, 2, 5, 8>, starts = array<i64: 0, 2, 0, 0>
// CHECK:         %[[Y1:.*]] = "dlc.conv_nhwc"(%[[X1]], %{{.*}}, %[[B]]) {dilations = array<i64: 1, 1>, {{.*}} -> tensor<1x2x5x4xf32>
// CHECK:         %[[X2:.*]] = "dlc.slice"(%[[X]]) {sizes = array<i64: 1, 6, 5, 8>, starts = array<i64: 0, 0, 0, 0>
// CHECK:         %[[Y2:.*]] = "dlc.conv_nhwc"(%[[X2]], %{{.*}}, %[[B]]) {dilations = array<i64: 4, 1>, {{.*}} -> tensor<1x2x5x4xf32>
// CHECK:         %[[C:.*]] = "dlc.concat"(%[[Y0]], %[[Y1]]) {axis = 1 : i64}
// CHECK:         %[[Y:.*]] = "dlc.concat"(%[[C]], %[[Y2]]) {axis = 1 : i64} {{.*}} -> tensor<1x6x5x4xf32>
// CHECK:         return %[[Y]]
// OFF-LABEL: func.func @test_clip_rows
// OFF:         "dlc.conv_nhwc"
// OFF-NOT:     "dlc.conv_nhwc"
// OFF:         return
func.func @test_clip_rows(%x: tensor<1x6x5x8xf32>) -> tensor<1x6x5x4xf32> {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<3x1x8x4xf32>} : () -> tensor<3x1x8x4xf32>
  %b = "dlc.constant"() {value = dense<1.5> : tensor<4xf32>} : () -> tensor<4xf32>
  %y = "dlc.conv_nhwc"(%x, %w, %b) {dilations = array<i64: 4, 1>, group = 1 : i64, pads = array<i64: 4, 0, 4, 0>, strides = array<i64: 1, 1>} : (tensor<1x6x5x8xf32>, tensor<3x1x8x4xf32>, tensor<4xf32>) -> tensor<1x6x5x4xf32>
  return %y : tensor<1x6x5x4xf32>
}

// -----

// A dilation past the input (ASPP's 36 on a small map): only the centre tap reads the input,
// a 1x1 conv.

// CHECK-LABEL: func.func @test_centre_tap_only
// CHECK:         %[[X0:.*]] = "dlc.slice"(%{{.*}}) {sizes = array<i64: 1, 6, 6, 8>, starts = array<i64: 0, 0, 0, 0>
// CHECK:         %[[Y:.*]] = "dlc.conv_nhwc"(%[[X0]], %{{.*}}, %{{.*}}) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>, tensor<1x1x8x4xf32>, tensor<4xf32>) -> tensor<1x6x6x4xf32>
// CHECK-NOT:     "dlc.concat"
// CHECK:         return %[[Y]]
func.func @test_centre_tap_only(%x: tensor<1x6x6x8xf32>) -> tensor<1x6x6x4xf32> {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<3x3x8x4xf32>} : () -> tensor<3x3x8x4xf32>
  %b = "dlc.constant"() {value = dense<1.5> : tensor<4xf32>} : () -> tensor<4xf32>
  %y = "dlc.conv_nhwc"(%x, %w, %b) {dilations = array<i64: 36, 36>, group = 1 : i64, pads = array<i64: 36, 36, 36, 36>, strides = array<i64: 1, 1>} : (tensor<1x6x6x8xf32>, tensor<3x3x8x4xf32>, tensor<4xf32>) -> tensor<1x6x6x4xf32>
  return %y : tensor<1x6x6x4xf32>
}

// -----

// An undilated conv reads padding at its borders only: left to its direct schedule.

// CHECK-LABEL: func.func @test_undilated_left
// CHECK:         "dlc.conv_nhwc"(%{{.*}}, %{{.*}}, %{{.*}}) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>
// CHECK-NOT:     "dlc.conv_nhwc"
func.func @test_undilated_left(%x: tensor<1x3x3x8xf32>) -> tensor<1x3x3x4xf32> {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<3x3x8x4xf32>} : () -> tensor<3x3x8x4xf32>
  %b = "dlc.constant"() {value = dense<1.5> : tensor<4xf32>} : () -> tensor<4xf32>
  %y = "dlc.conv_nhwc"(%x, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x3x8xf32>, tensor<3x3x8x4xf32>, tensor<4xf32>) -> tensor<1x3x3x4xf32>
  return %y : tensor<1x3x3x4xf32>
}
