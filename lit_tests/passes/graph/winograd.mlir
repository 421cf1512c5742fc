// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-winograd{min-channels=16 min-macs=0})' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-winograd{min-channels=16 min-macs=0 min-tiles=50})' | FileCheck %s --check-prefix=OFF
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-winograd)' | FileCheck %s --check-prefix=OFF
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-winograd{min-channels=16 min-macs=0 max-tile=2})' | FileCheck %s --check-prefix=F2

// (The defaults leave this small conv direct: 16 channels, 0.9 M multiply-adds.) A 3x3
// stride-1 conv with a constant filter becomes Winograd F(2x2, 3x3): the input padded
// to 16 x 16 (7 x 7 tiles of 4 x 4, 2 apart), its tiles transformed by products of stacked
// strided slices by Bᵀ, one batch matmul of the 16 tile positions by the transformed filter
// [16, C, F], the outputs transformed back by Aᵀ and interleaved by a transpose, then the bias.

// CHECK-LABEL: func.func @test_winograd
// CHECK-NOT:     dlc.conv_nhwc
// CHECK:         "dlc.pad"(%{{.*}}) {mode = "constant", pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>} : (tensor<1x14x14x16xf32>) -> tensor<1x16x16x16xf32>
// CHECK:         "dlc.slice"(%{{.*}}) {sizes = array<i64: 1, 7, 16, 16>, starts = array<i64: 0, 0, 0, 0>, steps = array<i64: 1, 2, 1, 1>}
// CHECK:         %[[U:.*]] = "dlc.constant"() {{.*}} tensor<16x16x32xf32>
// CHECK:         "dlc.matmul"(%{{.*}}, %[[U]]) : (tensor<16x49x16xf32>, tensor<16x16x32xf32>) -> tensor<16x49x32xf32>
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 2, 3, 1, 4, 0, 5>} : (tensor<2x2x1x7x7x32xf32>) -> tensor<1x7x2x7x2x32xf32>
// CHECK:         "dlc.reshape"(%{{.*}}) {shape = array<i64: 1, 14, 14, 32>}
// CHECK:         %[[Y:.*]] = "dlc.add"(%{{.*}}, %{{.*}}) : (tensor<1x14x14x32xf32>, tensor<32xf32>) -> tensor<1x14x14x32xf32>
// CHECK:         return %[[Y]]
// F2-LABEL: func.func @test_winograd
// F2:         tensor<16x49x16xf32>
// OFF-LABEL: func.func @test_winograd
// OFF:         "dlc.conv_nhwc"
func.func @test_winograd(%x: tensor<1x14x14x16xf32>) -> tensor<1x14x14x32xf32> {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<3x3x16x32xf32>} : () -> tensor<3x3x16x32xf32>
  %b = "dlc.constant"() {value = dense<1.5> : tensor<32xf32>} : () -> tensor<32xf32>
  %y = "dlc.conv_nhwc"(%x, %w, %b) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x14x14x16xf32>, tensor<3x3x16x32xf32>, tensor<32xf32>) -> tensor<1x14x14x32xf32>
  return %y : tensor<1x14x14x32xf32>
}

// -----

// With at least min-tiles (36) tiles of 4 x 4 outputs (28 x 28: 49), F(4x4, 3x3): input
// tiles of 6 x 6, 4 apart, the 6 x 6 Bᵀ, one batch matmul of the 36 tile positions, Aᵀ 4 x 6;
// max-tile=2 keeps F(2x2, 3x3) (196 tiles of 2 x 2).

// CHECK-LABEL: func.func @test_winograd_4x4
// CHECK:         "dlc.pad"(%{{.*}}) {mode = "constant", pads = array<i64: 0, 1, 1, 0, 0, 1, 1, 0>} : (tensor<1x28x28x16xf32>) -> tensor<1x30x30x16xf32>
// CHECK:         "dlc.slice"(%{{.*}}) {sizes = array<i64: 1, 7, 30, 16>, starts = array<i64: 0, 5, 0, 0>, steps = array<i64: 1, 4, 1, 1>}
// CHECK:         %[[U:.*]] = "dlc.constant"() {{.*}} tensor<36x16x32xf32>
// CHECK:         "dlc.matmul"(%{{.*}}, %[[U]]) : (tensor<36x49x16xf32>, tensor<36x16x32xf32>) -> tensor<36x49x32xf32>
// CHECK:         "dlc.transpose"(%{{.*}}) {perm = array<i64: 2, 3, 1, 4, 0, 5>} : (tensor<4x4x1x7x7x32xf32>) -> tensor<1x7x4x7x4x32xf32>
// F2-LABEL: func.func @test_winograd_4x4
// F2:         "dlc.matmul"(%{{.*}}, %{{.*}}) : (tensor<16x196x16xf32>, tensor<16x16x32xf32>) -> tensor<16x196x32xf32>
// OFF-LABEL: func.func @test_winograd_4x4
// OFF:         "dlc.conv_nhwc"
func.func @test_winograd_4x4(%x: tensor<1x28x28x16xf32>) -> tensor<1x28x28x32xf32> {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<3x3x16x32xf32>} : () -> tensor<3x3x16x32xf32>
  %y = "dlc.conv_nhwc"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x28x28x16xf32>, tensor<3x3x16x32xf32>) -> tensor<1x28x28x32xf32>
  return %y : tensor<1x28x28x32xf32>
}

// -----

// Negative: stride 2, and a filter of integers (a quantized conv's: its integer kernels are
// exact, Winograd's halves would not be) stay direct.

// CHECK-LABEL: func.func @test_direct
// CHECK:         "dlc.conv_nhwc"
// CHECK:         "dlc.conv_nhwc"
// CHECK-NOT:     "dlc.matmul"
func.func @test_direct(%x: tensor<1x28x28x16xf32>) -> (tensor<1x14x14x16xf32>, tensor<1x28x28x16xf32>) {
  %w = "dlc.constant"() {value = dense<0.25> : tensor<3x3x16x16xf32>} : () -> tensor<3x3x16x16xf32>
  %q = "dlc.constant"() {value = dense<3.0> : tensor<3x3x16x16xf32>} : () -> tensor<3x3x16x16xf32>
  %a = "dlc.conv_nhwc"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x28x28x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x14x14x16xf32>
  %b = "dlc.conv_nhwc"(%x, %q) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x28x28x16xf32>, tensor<3x3x16x16xf32>) -> tensor<1x28x28x16xf32>
  return %a, %b : tensor<1x14x14x16xf32>, tensor<1x28x28x16xf32>
}
