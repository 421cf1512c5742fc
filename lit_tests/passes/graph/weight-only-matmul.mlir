// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-weight-only-matmul)' | FileCheck %s

// A matmul by per-column int8 weights whose values fit in 4 bits: the weights are packed in
// nibbles (one panel of 16 columns, 8 bytes a row), never dequantized into a float constant;
// shifted to unsigned values, they have the zero point 8 (a byte a column).

// CHECK-LABEL: func.func @test_per_column_int4_values
// CHECK-SAME:    (%[[A:.*]]: tensor<2x4xf32>)
// CHECK-DAG:     %[[B:.*]] = "dlc.constant"() {value = dense<{{.*}}[9, 6, 11, 0, 0, 0, 0, 0], [12, 13, 2, 0{{.*}}> : tensor<1x4x8xui8>}
// CHECK-DAG:     %[[S:.*]] = "dlc.constant"() {{.*}} : () -> tensor<1x1x16xf32>
// CHECK-DAG:     %[[Z:.*]] = "dlc.constant"() {value = dense<{{.*}}8, 8, 8, 0, 0{{.*}}> : tensor<1x1x16xui8>}
// CHECK:         %[[R:.*]] = "dlc.matmul_nbits"(%[[A]], %[[B]], %[[S]], %[[Z]]) {bits = 4 : i64, block_size = 4 : i64, n = 3 : i64}
// CHECK-NOT:     "dlc.dequantize"
// CHECK:         return %[[R]]
func.func @test_per_column_int4_values(%a: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = "dlc.constant"() {value = dense<[[1, -2, 3], [4, 5, -6], [7, -8, 0], [1, 1, 1]]> : tensor<4x3xi8>} : () -> tensor<4x3xi8>
  %s = "dlc.constant"() {value = dense<[0.5, 0.25, 2.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = "dlc.dequantize"(%w, %s) {axis = 1 : i64, block_size = 0 : i64, to = f32} : (tensor<4x3xi8>, tensor<3xf32>) -> tensor<4x3xf32>
  %1 = "dlc.matmul"(%a, %0) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// Blocked uint8 weights (block_size 2 along K) with zero points: 8 bits, A of rank 3 flattened.

// CHECK-LABEL: func.func @test_blocked_uint8
// CHECK:         "dlc.reshape"
// CHECK:         "dlc.matmul_nbits"({{.*}}) {bits = 8 : i64, block_size = 2 : i64, n = 2 : i64} : (tensor<6x4xf32>, tensor<1x4x16xui8>, tensor<1x2x16xf32>, tensor<1x2x16xui8>) -> tensor<6x2xf32>
// CHECK:         "dlc.reshape"
// CHECK-NOT:     "dlc.dequantize"
func.func @test_blocked_uint8(%a: tensor<2x3x4xf32>) -> tensor<2x3x2xf32> {
  %w = "dlc.constant"() {value = dense<[[100, 2], [3, 200], [5, 6], [7, 8]]> : tensor<4x2xui8>} : () -> tensor<4x2xui8>
  %s = "dlc.constant"() {value = dense<[[0.5, 0.25], [1.0, 2.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %z = "dlc.constant"() {value = dense<[[128, 1], [2, 3]]> : tensor<2x2xui8>} : () -> tensor<2x2xui8>
  %0 = "dlc.dequantize"(%w, %s, %z) {axis = 0 : i64, block_size = 2 : i64, to = f32} : (tensor<4x2xui8>, tensor<2x2xf32>, tensor<2x2xui8>) -> tensor<4x2xf32>
  %1 = "dlc.matmul"(%a, %0) : (tensor<2x3x4xf32>, tensor<4x2xf32>) -> tensor<2x3x2xf32>
  return %1 : tensor<2x3x2xf32>
}

// -----

// Quantized activations (a QDQ model) keep the dequantization: the integer matmul path.

// CHECK-LABEL: func.func @test_qdq_activations_kept
// CHECK-NOT:     "dlc.matmul_nbits"
// CHECK:         "dlc.matmul"
func.func @test_qdq_activations_kept(%x: tensor<2x4xi8>) -> tensor<2x3xf32> {
  %sx = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %a = "dlc.dequantize"(%x, %sx) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x4xi8>, tensor<f32>) -> tensor<2x4xf32>
  %w = "dlc.constant"() {value = dense<[[1, -2, 3], [4, 5, -6], [7, -8, 0], [1, 1, 1]]> : tensor<4x3xi8>} : () -> tensor<4x3xi8>
  %s = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "dlc.dequantize"(%w, %s) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<4x3xi8>, tensor<f32>) -> tensor<4x3xf32>
  %1 = "dlc.matmul"(%a, %0) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// A scale per row of W (axis 0, not blocked) is not a K block granularity: left as it is.

// CHECK-LABEL: func.func @test_per_row_kept
// CHECK-NOT:     "dlc.matmul_nbits"
func.func @test_per_row_kept(%a: tensor<2x4xf32>) -> tensor<2x3xf32> {
  %w = "dlc.constant"() {value = dense<[[1, -2, 3], [4, 5, -6], [7, -8, 0], [1, 1, 1]]> : tensor<4x3xi8>} : () -> tensor<4x3xi8>
  %s = "dlc.constant"() {value = dense<[0.5, 0.25, 2.0, 1.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "dlc.dequantize"(%w, %s) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<4x3xi8>, tensor<4xf32>) -> tensor<4x3xf32>
  %1 = "dlc.matmul"(%a, %0) : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
