// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-polyphase{min-filter-bytes=0 min-channels=16})' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-polyphase)' | FileCheck %s --check-prefix=OFF

// (The defaults leave this small conv alone: a filter of 18 KiB.) A stride-2 3x3 conv with a
// constant filter becomes four stride-1 convs on the phases of its padded input (rows and
// columns 0, 2, 4... and 1, 3, 5...): 2x2, 2x1, 1x2 and 1x1 taps of the filter, 9 in all;
// the first carries the bias, the others are added.

// CHECK-LABEL: func.func @test_polyphase
// CHECK:         %[[XP:.*]] = "dlc.pad"(%{{.*}}) {mode = "constant", pads = array<i64: 0, 1, 1, 0, 0, 0, 0, 0>} : (tensor<1x14x14x16xf32>) -> tensor<1x15x15x16xf32>
// CHECK:         %[[P0:.*]] = "dlc.slice"(%[[XP]]) {sizes = array<i64: 1, 8, 8, 16>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 2, 2, 1>}
// CHECK:         %[[W0:.*]] = "dlc.constant"() {{.*}} tensor<2x2x16x32xf32>
// CHECK:         %[[Y0:.*]] = "dlc.conv_nhwc"(%[[P0]], %[[W0]], %{{.*}}) {{.*}}strides = array<i64: 1, 1>} : (tensor<1x8x8x16xf32>, tensor<2x2x16x32xf32>, tensor<32xf32>) -> tensor<1x7x7x32xf32>
// CHECK:         "dlc.slice"(%[[XP]]) {sizes = array<i64: 1, 8, 7, 16>, starts = array<i64: 0, 0, 1, 0>, steps = array<i64: 1, 2, 2, 1>}
// CHECK:         "dlc.conv_nhwc"({{.*}} : (tensor<1x8x7x16xf32>, tensor<2x1x16x32xf32>) -> tensor<1x7x7x32xf32>
// CHECK:         "dlc.add"(%[[Y0]], %{{.*}})
// CHECK:         "dlc.slice"(%[[XP]]) {sizes = array<i64: 1, 7, 8, 16>, starts = array<i64: 0, 1, 0, 0>, steps = array<i64: 1, 2, 2, 1>}
// CHECK:         "dlc.conv_nhwc"({{.*}} : (tensor<1x7x8x16xf32>, tensor<1x2x16x32xf32>) -> tensor<1x7x7x32xf32>
// CHECK:         "dlc.slice"(%[[XP]]) {sizes = array<i64: 1, 7, 7, 16>, starts = array<i64: 0, 1, 1, 0>, steps = array<i64: 1, 2, 2, 1>}
// CHECK:         "dlc.conv_nhwc"({{.*}} : (tensor<1x7x7x16xf32>, tensor<1x1x16x32xf32>) -> tensor<1x7x7x32xf32>
// CHECK:         %[[Y:.*]] = "dlc.add"
// CHECK:         return %[[Y]]
// OFF-LABEL: func.func @test_polyphase
// OFF:         "dlc.conv_nhwc"
// OFF-NOT:     "dlc.conv_nhwc"
// OFF:         return
func.func @test_polyphase(%x: tensor<1x14x14x16xf32>) -> tensor<1x7x7x32xf32> {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<3x3x16x32xf32>} : () -> tensor<3x3x16x32xf32>
  %b = "dlc.constant"() {value = dense<1.5> : tensor<32xf32>} : () -> tensor<32xf32>
  %y = "dlc.conv_nhwc"(%x, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x14x14x16xf32>, tensor<3x3x16x32xf32>, tensor<32xf32>) -> tensor<1x7x7x32xf32>
  return %y : tensor<1x7x7x32xf32>
}

// -----

// Negative: stride 1, a strided 1x1 conv, and a filter of integers (a quantized conv's: its
// integer kernels are exact) keep their one conv each.

// CHECK-LABEL: func.func @test_alone
// CHECK-COUNT-3: "dlc.conv_nhwc"
// CHECK-NOT:     "dlc.conv_nhwc"
func.func @test_alone(%x: tensor<1x28x28x16xf32>) -> (tensor<1x28x28x16xf32>, tensor<1x14x14x16xf32>, tensor<1x14x14x16xf32>) {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<3x3x16x16xf32>} : () -> tensor<3x3x16x16xf32>
  %p = "dlc.constant"() {value = dense<0.25> : tensor<1x1x16x16xf32>} : () -> tensor<1x1x16x16xf32>
  %q = "dlc.constant"() {value = dense<3.0> : tensor<3x3x16x16xf32>} : () -> tensor<3x3x16x16xf32>
  %a = "dlc.conv_nhwc"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x28x28x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x28x28x16xf32>
  %b = "dlc.conv_nhwc"(%x, %p) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x28x28x16xf32>, tensor<1x1x16x16xf32>) -> tensor<1x14x14x16xf32>
  %c = "dlc.conv_nhwc"(%x, %q) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x28x28x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x14x14x16xf32>
  return %a, %b, %c : tensor<1x28x28x16xf32>, tensor<1x14x14x16xf32>, tensor<1x14x14x16xf32>
}
