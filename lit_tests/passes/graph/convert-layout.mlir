// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-convert-layout)' | FileCheck %s

// conv -> relu -> conv -> add (the relu as residual) -> maxpool: everything runs NHWC; one transpose into
// the region, one out of it; the constant filters are transposed to HWCF at compile time.

// CHECK-LABEL: func.func @test_region
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x4x4xf32>)
// CHECK:         %[[T:.*]] = "dlc.transpose"(%[[X]]) {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[C1:.*]] = "dlc.conv_nhwc"(%[[T]], %{{.*}}) {{.*}} -> tensor<1x4x4x2xf32>
// CHECK:         %[[R:.*]] = "dlc.relu"(%[[C1]]) : (tensor<1x4x4x2xf32>)
// CHECK:         %[[C2:.*]] = "dlc.conv_nhwc"(%[[R]], %{{.*}}) {{.*}} -> tensor<1x4x4x2xf32>
// CHECK:         %[[A:.*]] = "dlc.add"(%[[C2]], %[[R]]) : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>)
// CHECK:         %[[P:.*]] = "dlc.pool_nhwc"(%[[A]]) {{.*}} -> tensor<1x2x2x2xf32>
// CHECK:         %[[B:.*]] = "dlc.transpose"(%[[P]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NEXT:    return %[[B]] : tensor<1x2x2x2xf32>
// CHECK-NOT:     "dlc.conv"
func.func @test_region(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32> {
  %w = "dlc.constant"() {value = dense<0.5> : tensor<2x2x3x3xf32>} : () -> tensor<2x2x3x3xf32>
  %c1 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %r = "dlc.relu"(%c1) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c2 = "dlc.conv"(%r, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %a = "dlc.add"(%c2, %r) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %p = "dlc.pool"(%a) {kind = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x2x4x4xf32>) -> tensor<1x2x2x2xf32>
  return %p : tensor<1x2x2x2xf32>
}

// -----

// The filter is transposed [M, C, KH, KW] -> [KH, KW, C, M]; a depthwise conv's [C, 1, KH, KW]
// becomes [KH, KW, 1, C]; two convs concatenated along the channels concat along axis 3.

// CHECK-LABEL: func.func @test_filters_and_concat
// CHECK:         "dlc.constant"() {value = dense<{{\[\[\[\[}}1.000000e+00, 3.000000e+00], [2.000000e+00, 4.000000e+00]]]]> : tensor<1x1x2x2xf32>}
// CHECK:         "dlc.conv_nhwc"({{.*}}) {{.*}}group = 1 : i64{{.*}} -> tensor<1x3x3x2xf32>
// CHECK:         "dlc.constant"() {value = dense<{{\[\[\[\[}}1.000000e+00, 3.000000e+00]], {{\[\[}}2.000000e+00, 4.000000e+00]]]]> : tensor<1x2x1x2xf32>}
// CHECK:         "dlc.conv_nhwc"({{.*}}) {{.*}}group = 2 : i64{{.*}} -> tensor<1x3x3x2xf32>
// CHECK:         %[[CAT:.*]] = "dlc.concat"({{.*}}) {axis = 3 : i64} : {{.*}} -> tensor<1x3x3x4xf32>
// CHECK:         "dlc.transpose"(%[[CAT]]) {perm = array<i64: 0, 3, 1, 2>}
func.func @test_filters_and_concat(%x: tensor<1x2x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %w = "dlc.constant"() {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %d = "dlc.constant"() {value = dense<[[[[1.0, 2.0]]], [[[3.0, 4.0]]]]> : tensor<2x1x1x2xf32>} : () -> tensor<2x1x1x2xf32>
  %c1 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 1} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %c2 = "dlc.conv"(%x, %d) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 1>, group = 2} : (tensor<1x2x3x3xf32>, tensor<2x1x1x2xf32>) -> tensor<1x2x3x3xf32>
  %cat = "dlc.concat"(%c1, %c2) {axis = 1} : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %cat : tensor<1x4x3x3xf32>
}

// -----

// Negative: a 1-D grouped conv, a 1-D conv and an Lp pool keep their layout.

// CHECK-LABEL: func.func @test_kept
// CHECK-NOT:     "dlc.transpose"
// CHECK:         "dlc.conv"({{.*}}) {{.*}}group = 32
// CHECK:         "dlc.conv"({{.*}}) {{.*}} : (tensor<1x2x5xf32>
// CHECK:         "dlc.pool"({{.*}}) {{.*}}kind = "lp"
// CHECK-NOT:     "dlc.transpose"
func.func @test_kept(%x: tensor<1x4x3x3xf32>, %y: tensor<1x2x5xf32>, %x64: tensor<1x64x3xf32>) -> (tensor<1x32x3xf32>, tensor<1x2x5xf32>, tensor<1x4x3x3xf32>) {
  %w = "dlc.constant"() {value = dense<1.0> : tensor<32x2x1xf32>} : () -> tensor<32x2x1xf32>
  %v = "dlc.constant"() {value = dense<1.0> : tensor<2x2x1xf32>} : () -> tensor<2x2x1xf32>
  %g = "dlc.conv"(%x64, %w) {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, group = 32} : (tensor<1x64x3xf32>, tensor<32x2x1xf32>) -> tensor<1x32x3xf32>
  %c = "dlc.conv"(%y, %v) {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, group = 1} : (tensor<1x2x5xf32>, tensor<2x2x1xf32>) -> tensor<1x2x5xf32>
  %p = "dlc.pool"(%x) {kind = "lp", kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  return %g, %c, %p : tensor<1x32x3xf32>, tensor<1x2x5xf32>, tensor<1x4x3x3xf32>
}

// -----

// A grouped conv of more than MAX_GROUPS groups, or of at most GROUPED_WIDTH filters per group
// with a constant filter, becomes one grouped NHWC conv: its filter [KH, KW, C/G, M], `group`
// kept (codegen/grouped_conv.py schedules it).

// CHECK-LABEL: func.func @test_one_grouped_conv
// CHECK:         %[[XT:.*]] = "dlc.transpose"(%{{.*}}) {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[G:.*]] = "dlc.conv_nhwc"(%[[XT]], %{{.*}}) {{.*}}group = 32 : i64{{.*}} : (tensor<1x3x3x64xf32>, tensor<1x1x2x32xf32>) -> tensor<1x3x3x32xf32>
// CHECK:         "dlc.transpose"(%[[G]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK:         %[[C:.*]] = "dlc.conv_nhwc"(%{{.*}}, %{{.*}}, %{{.*}}) {{.*}}group = 2 : i64{{.*}} : (tensor<1x3x3x4xf32>, tensor<1x1x2x6xf32>, tensor<6xf32>) -> tensor<1x3x3x6xf32>
// CHECK:         "dlc.transpose"(%[[C]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT:     "dlc.conv"(
func.func @test_one_grouped_conv(%x64: tensor<1x64x3x3xf32>, %x: tensor<1x4x3x3xf32>) -> (tensor<1x32x3x3xf32>, tensor<1x6x3x3xf32>) {
  %w = "dlc.constant"() {value = dense<1.0> : tensor<32x2x1x1xf32>} : () -> tensor<32x2x1x1xf32>
  %g = "dlc.conv"(%x64, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 32} : (tensor<1x64x3x3xf32>, tensor<32x2x1x1xf32>) -> tensor<1x32x3x3xf32>
  %v = "dlc.constant"() {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]], [[[7.0]], [[8.0]]], [[[9.0]], [[10.0]]], [[[11.0]], [[12.0]]]]> : tensor<6x2x1x1xf32>} : () -> tensor<6x2x1x1xf32>
  %b = "dlc.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>} : () -> tensor<6xf32>
  %c = "dlc.conv"(%x, %v, %b) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2} : (tensor<1x4x3x3xf32>, tensor<6x2x1x1xf32>, tensor<6xf32>) -> tensor<1x6x3x3xf32>
  return %g, %c : tensor<1x32x3x3xf32>, tensor<1x6x3x3xf32>
}

// -----

// A residual read both by the conv and by the add after it: the add takes the transpose the
// conv input already has (one transpose in, one out).

// CHECK-LABEL: func.func @test_residual_input
// CHECK:         %[[T:.*]] = "dlc.transpose"(%{{.*}}) {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[C:.*]] = "dlc.conv_nhwc"(%[[T]]
// CHECK:         %[[A:.*]] = "dlc.add"(%[[C]], %[[T2:.*]]) : (tensor<1x4x4x2xf32>, tensor<1x4x4x2xf32>)
// CHECK:         %[[R:.*]] = "dlc.relu"(%[[A]])
// CHECK:         "dlc.transpose"(%[[R]]) {perm = array<i64: 0, 3, 1, 2>}
func.func @test_residual_input(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = "dlc.constant"() {value = dense<0.5> : tensor<2x2x3x3xf32>} : () -> tensor<2x2x3x3xf32>
  %c1 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1} : (tensor<1x2x4x4xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x4x4xf32>
  %a = "dlc.add"(%c1, %x) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %r = "dlc.relu"(%a) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %r : tensor<1x2x4x4xf32>
}

// -----

// A grouped conv (2 groups of 33 filters, more than GROUPED_WIDTH; a constant filter and
// bias) becomes one NHWC conv per group on a channel slice of the input, the filter and the
// bias sliced at compile time, the results concatenated along the channels (NHWC axis 3) and
// transposed back.

// CHECK-LABEL: func.func @test_grouped
// CHECK:         %[[XT:.*]] = "dlc.transpose"(%{{.*}}) {perm = array<i64: 0, 2, 3, 1>}
// CHECK:         %[[X0:.*]] = "dlc.slice"(%[[XT]]) {{.*}}sizes = array<i64: 1, 3, 3, 2>, starts = array<i64: 0, 0, 0, 0>
// CHECK:         %[[C0:.*]] = "dlc.conv_nhwc"(%[[X0]], %{{.*}}, %{{.*}}) {{.*}}group = 1 : i64{{.*}} -> tensor<1x3x3x33xf32>
// CHECK:         %[[X1:.*]] = "dlc.slice"(%[[XT]]) {{.*}}sizes = array<i64: 1, 3, 3, 2>, starts = array<i64: 0, 0, 0, 2>
// CHECK:         %[[C1:.*]] = "dlc.conv_nhwc"(%[[X1]], %{{.*}}, %{{.*}}) {{.*}}group = 1 : i64{{.*}} -> tensor<1x3x3x33xf32>
// CHECK:         %[[Y:.*]] = "dlc.concat"(%[[C0]], %[[C1]]) {axis = 3 : i64}
// CHECK:         "dlc.transpose"(%[[Y]]) {perm = array<i64: 0, 3, 1, 2>}
// CHECK-NOT:     "dlc.conv"(
func.func @test_grouped(%x: tensor<1x4x3x3xf32>) -> tensor<1x66x3x3xf32> {
  %w = "dlc.constant"() {value = dense<0.5> : tensor<66x2x1x1xf32>} : () -> tensor<66x2x1x1xf32>
  %b = "dlc.constant"() {value = dense<1.0> : tensor<66xf32>} : () -> tensor<66xf32>
  %y = "dlc.conv"(%x, %w, %b) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2} : (tensor<1x4x3x3xf32>, tensor<66x2x1x1xf32>, tensor<66xf32>) -> tensor<1x66x3x3xf32>
  return %y : tensor<1x66x3x3xf32>
}
