// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-conv-transpose-matmul)' | FileCheck %s

// Kernel = stride (2x2 stride 2): one matmul [N H W, C] x [C, F kh kw], then a depth-to-space
// (reshape, transpose, reshape) and the bias.

// CHECK-LABEL: func.func @test_matmul_form
// CHECK:         "dlc.transpose"(%arg0) {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         "dlc.matmul"(%{{.*}}, %{{.*}}) : (tensor<64x16xf32>, tensor<16x32xf32>) -> tensor<64x32xf32>
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 0, 3, 1, 4, 2, 5>} : (tensor<1x8x8x8x2x2xf32>) -> tensor<1x8x8x2x8x2xf32>
// CHECK:         "dlc.reshape"(%{{.*}}) {shape = array<i64: 1, 8, 16, 16>}
// CHECK:         "dlc.add"
func.func @test_matmul_form(%x: tensor<1x16x8x8xf32>, %w: tensor<16x8x2x2xf32>, %b: tensor<8xf32>) -> tensor<1x8x16x16xf32> {
  %y = "dlc.conv_transpose"(%x, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>, tensor<16x8x2x2xf32>, tensor<8xf32>) -> tensor<1x8x16x16xf32>
  return %y : tensor<1x8x16x16xf32>
}

// -----

// 4x4 stride 2 pads 1: its four sub-pixel convs. The outputs of phase (r_h, r_w) (rows 2q + r_h,
// columns 2p + r_w) read input pixels with every other row and column of the flipped kernel,
// 2x2 taps each, starting at (0, 0), (0, 1), (1, 0), (1, 1), on
// the input padded by 1 (channels-last), windows offset by the phase. Each conv carries the
// bias; the phases are interleaved by two concats and a reshape.

// CHECK-LABEL: func.func @test_conv_form
// CHECK:         %[[X:.*]] = "dlc.transpose"(%arg0) {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[XP:.*]] = "dlc.pad"(%[[X]]) {mode = "constant", pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>} : (tensor<1x8x8x16xf32>) -> tensor<1x10x10x16xf32>
// CHECK:         "dlc.slice"(%{{.*}}) {sizes = array<i64: 1, 8, 16, 4, 4>, starts = array<i64: 0, 0, 0, 3, 3>, steps = array<i64: 1, 1, 1, -1, -1>}
// CHECK:         %[[W0:.*]] = "dlc.slice"(%[[XP]]) {sizes = array<i64: 1, 9, 9, 16>, starts = array<i64: 0, 0, 0, 0>
// CHECK:         "dlc.slice"(%{{.*}}) {sizes = array<i64: 8, 16, 2, 2>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 1, 2, 2>}
// CHECK:         "dlc.conv_nhwc"(%[[W0]], %{{.*}}, %arg2) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x9x9x16xf32>, tensor<2x2x16x8xf32>, tensor<8xf32>) -> tensor<1x8x8x8xf32>
// CHECK:         "dlc.slice"(%[[XP]]) {sizes = array<i64: 1, 9, 9, 16>, starts = array<i64: 0, 0, 1, 0>
// CHECK:         "dlc.slice"(%{{.*}}) {sizes = array<i64: 8, 16, 2, 2>, starts = array<i64: 0, 0, 0, 1>, steps = array<i64: 1, 1, 2, 2>}
// CHECK:         "dlc.concat"(%{{.*}}, %{{.*}}) {axis = 4 : i64} : (tensor<1x8x1x8x1x8xf32>, tensor<1x8x1x8x1x8xf32>) -> tensor<1x8x1x8x2x8xf32>
// CHECK:         "dlc.slice"(%[[XP]]) {sizes = array<i64: 1, 9, 9, 16>, starts = array<i64: 0, 1, 0, 0>
// CHECK:         "dlc.slice"(%[[XP]]) {sizes = array<i64: 1, 9, 9, 16>, starts = array<i64: 0, 1, 1, 0>
// CHECK:         "dlc.concat"(%{{.*}}, %{{.*}}) {axis = 2 : i64} : (tensor<1x8x1x8x2x8xf32>, tensor<1x8x1x8x2x8xf32>) -> tensor<1x8x2x8x2x8xf32>
// CHECK:         "dlc.reshape"(%{{.*}}) {shape = array<i64: 1, 16, 16, 8>}
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x16x16x8xf32>) -> tensor<1x8x16x16xf32>
func.func @test_conv_form(%x: tensor<1x16x8x8xf32>, %w: tensor<16x8x4x4xf32>, %b: tensor<8xf32>) -> tensor<1x8x16x16xf32> {
  %y = "dlc.conv_transpose"(%x, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>, tensor<16x8x4x4xf32>, tensor<8xf32>) -> tensor<1x8x16x16xf32>
  return %y : tensor<1x8x16x16xf32>
}

// -----

// Dilated (2), 3x3 stride 2: the input with a zero after each pixel (cut to 15 x 15), the conv
// by the flipped kernel with its channel axes swapped, stride 1, dilation 2, pads d (k - 1) - p
// = 3.

// CHECK-LABEL: func.func @test_stuffed_form
// CHECK:         "dlc.pad"(%{{.*}}) {mode = "constant", pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1>} : (tensor<1x16x8x1x8x1xf32>) -> tensor<1x16x8x2x8x2xf32>
// CHECK:         "dlc.slice"(%{{.*}}) {sizes = array<i64: 1, 16, 15, 15>
// CHECK:         "dlc.slice"(%{{.*}}) {sizes = array<i64: 1, 8, 16, 3, 3>, starts = array<i64: 0, 0, 0, 2, 2>, steps = array<i64: 1, 1, 1, -1, -1>}
// CHECK:         "dlc.conv"(%{{.*}}, %{{.*}}, %arg2) {dilations = array<i64: 2, 2>, group = 1 : i64, pads = array<i64: 3, 3, 3, 3>, strides = array<i64: 1, 1>} : (tensor<1x16x15x15xf32>, tensor<8x16x3x3xf32>, tensor<8xf32>) -> tensor<1x8x17x17xf32>
func.func @test_stuffed_form(%x: tensor<1x16x8x8xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<8xf32>) -> tensor<1x8x17x17xf32> {
  %y = "dlc.conv_transpose"(%x, %w, %b) {dilations = array<i64: 2, 2>, group = 1 : i64, output_padding = array<i64: 0, 0>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x16x8x8xf32>, tensor<16x8x3x3xf32>, tensor<8xf32>) -> tensor<1x8x17x17xf32>
  return %y : tensor<1x8x17x17xf32>
}
