// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-fuse-batchnorm)' | FileCheck %s

// An inference BatchNormalization after a conv, as the importer decomposes it (and
// dlc-fold-constants leaves it): (conv - mean) * inv_std * scale + bias on [C, 1, 1]
// constants. Everything folds into the conv's weights and bias.

// CHECK-LABEL: func.func @test_conv_bn
// CHECK-SAME:    (%[[X:.*]]: tensor<1x1x3x3xf32>)
// CHECK-DAG:     %[[W:.*]] = "dlc.constant"() {value = dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}-1.000000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK-DAG:     %[[B:.*]] = "dlc.constant"() {value = dense<[1.000000e+00, 3.000000e+00]> : tensor<2xf32>}
// CHECK:         %[[C:.*]] = "dlc.conv"(%[[X]], %[[W]], %[[B]])
// CHECK-NEXT:    return %[[C]]
func.func @test_conv_bn(%x: tensor<1x1x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %w = "dlc.constant"() {value = dense<[[[[1.0]]], [[[1.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %mean = "dlc.constant"() {value = dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %inv = "dlc.constant"() {value = dense<[[[0.5]], [[0.25]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %scale = "dlc.constant"() {value = dense<[[[4.0]], [[-4.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %bias = "dlc.constant"() {value = dense<[[[3.0]], [[1.0]]]> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %0 = "dlc.conv"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = "dlc.sub"(%0, %mean) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %2 = "dlc.mul"(%1, %inv) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %3 = "dlc.mul"(%2, %scale) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %4 = "dlc.add"(%3, %bias) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  return %4 : tensor<1x2x3x3xf32>
}

// -----

// A per-column scale and shift after a gemm fold into B and C.

// CHECK-LABEL: func.func @test_gemm_scale_shift
// CHECK-SAME:    (%[[A:.*]]: tensor<4x2xf32>)
// CHECK-DAG:     %[[B:.*]] = "dlc.constant"() {value = dense<{{\[\[}}2.000000e+00, 3.000000e+00], [2.000000e+00, 3.000000e+00]]> : tensor<2x2xf32>}
// CHECK-DAG:     %[[C:.*]] = "dlc.constant"() {value = dense<[3.000000e+00, 4.000000e+00]> : tensor<2xf32>}
// CHECK:         %[[G:.*]] = "dlc.gemm"(%[[A]], %[[B]], %[[C]])
// CHECK-NEXT:    return %[[G]]
func.func @test_gemm_scale_shift(%a: tensor<4x2xf32>) -> tensor<4x2xf32> {
  %b = "dlc.constant"() {value = dense<1.0> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %c = "dlc.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %s = "dlc.constant"() {value = dense<[2.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %t = "dlc.constant"() {value = dense<[[1.0, 1.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
  %0 = "dlc.gemm"(%a, %b, %c) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %1 = "dlc.mul"(%0, %s) : (tensor<4x2xf32>, tensor<2xf32>) -> tensor<4x2xf32>
  %2 = "dlc.add"(%t, %1) : (tensor<1x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}

// -----

// Negative: a conv result with another use, a scale that varies along a spatial axis, and a
// non-constant shift stay.

// CHECK-LABEL: func.func @test_no_fold
// CHECK-COUNT-1: "dlc.conv"
// CHECK:         "dlc.mul"
// CHECK:         "dlc.add"
// CHECK:         "dlc.conv"
// CHECK:         "dlc.mul"
// CHECK:         return
func.func @test_no_fold(%x: tensor<1x1x3x3xf32>, %y: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
  %w = "dlc.constant"() {value = dense<1.0> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %s = "dlc.constant"() {value = dense<2.0> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %sp = "dlc.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = "dlc.conv"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %1 = "dlc.mul"(%0, %s) : (tensor<1x2x3x3xf32>, tensor<2x1x1xf32>) -> tensor<1x2x3x3xf32>
  %2 = "dlc.add"(%0, %y) : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %3 = "dlc.conv"(%x, %w) {dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %4 = "dlc.mul"(%3, %sp) : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
  return %1, %2, %4 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
}
