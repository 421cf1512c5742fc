// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-fold-constants)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-fold-constants{max-elements=2})' | FileCheck %s --check-prefix=LIMIT

// BatchNormalization's per-channel factor 1 / sqrt(var + eps), reshaped to [C, 1, 1], folds
// into one constant; the op on the input stays.

// CHECK-LABEL: func.func @test_fold_chain
// CHECK-SAME:    (%[[X:.*]]: tensor<4x2x2xf32>)
// CHECK-NEXT:    %[[C:.*]] = "dlc.constant"() {value = dense<{{\[\[\[}}1.000000e+00]], {{\[\[}}5.000000e-01]], {{\[\[}}2.500000e-01]], {{\[\[}}1.250000e-01]]]> : tensor<4x1x1xf32>}
// CHECK-NEXT:    %[[M:.*]] = "dlc.mul"(%[[X]], %[[C]])
// CHECK-NEXT:    return %[[M]]
// LIMIT-LABEL: func.func @test_fold_chain
// LIMIT:         "dlc.reshape"
func.func @test_fold_chain(%x: tensor<4x2x2xf32>) -> tensor<4x2x2xf32> {
  %var = "dlc.constant"() {value = dense<[1.0, 4.0, 16.0, 64.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %eps = "dlc.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "dlc.add"(%var, %eps) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = "dlc.unary"(%0) {fn = "sqrt", params = array<f64>} : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "dlc.unary"(%1) {fn = "reciprocal", params = array<f64>} : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "dlc.reshape"(%2) {shape = array<i64: 4, 1, 1>} : (tensor<4xf32>) -> tensor<4x1x1xf32>
  %4 = "dlc.mul"(%x, %3) : (tensor<4x2x2xf32>, tensor<4x1x1xf32>) -> tensor<4x2x2xf32>
  return %4 : tensor<4x2x2xf32>
}

// -----

// Shape arithmetic (concat, slice, cast of small int64 tensors) folds too.

// CHECK-LABEL: func.func @test_fold_shape_math
// CHECK-NEXT:    %[[C:.*]] = "dlc.constant"() {value = dense<[9, 8]> : tensor<2xi32>}
// CHECK-NEXT:    return %[[C]]
func.func @test_fold_shape_math() -> tensor<2xi32> {
  %a = "dlc.constant"() {value = dense<[1, 2, 3]> : tensor<3xi64>} : () -> tensor<3xi64>
  %b = "dlc.constant"() {value = dense<[4]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = "dlc.concat"(%a, %b) {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<4xi64>
  %1 = "dlc.slice"(%0) {starts = array<i64: 2>, sizes = array<i64: 2>, steps = array<i64: 1>} : (tensor<4xi64>) -> tensor<2xi64>
  %2 = "dlc.mul"(%1, %1) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %3 = "dlc.sub"(%2, %1) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %4 = "dlc.reduce"(%3) {fn = "max", axes = array<i64: 0>, keepdims = 1 : i64} : (tensor<2xi64>) -> tensor<1xi64>
  %5 = "dlc.sub"(%4, %1) : (tensor<1xi64>, tensor<2xi64>) -> tensor<2xi64>
  %6 = "dlc.cast"(%5) {to = i32} : (tensor<2xi64>) -> tensor<2xi32>
  return %6 : tensor<2xi32>
}

// -----

// A uniform result is stored as a splat, however large; a non-uniform one larger than its
// operands is not folded (a broadcast of a small constant would blow up the model).

// CHECK-LABEL: func.func @test_fold_splat_and_growth
// CHECK-DAG:     "dlc.constant"() {value = dense<2.000000e+00> : tensor<64x64xf32>}
// CHECK-DAG:     "dlc.broadcast"
// CHECK:         return
func.func @test_fold_splat_and_growth() -> (tensor<64x64xf32>, tensor<64x64xf32>) {
  %one = "dlc.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %row = "dlc.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "dlc.broadcast"(%one) {shape = array<i64: 64, 64>} : (tensor<f32>) -> tensor<64x64xf32>
  %1 = "dlc.add"(%0, %0) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32>
  %2 = "dlc.reshape"(%row) {shape = array<i64: 2, 1>} : (tensor<2xf32>) -> tensor<2x1xf32>
  %3 = "dlc.broadcast"(%2) {shape = array<i64: 2, 1>} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %4 = "dlc.broadcast"(%row) {shape = array<i64: 2048, 2>} : (tensor<2xf32>) -> tensor<2048x2xf32>
  %5 = "dlc.reshape"(%4) {shape = array<i64: 64, 64>} : (tensor<2048x2xf32>) -> tensor<64x64xf32>
  return %1, %5 : tensor<64x64xf32>, tensor<64x64xf32>
}

// -----

// Negative: ops with a non-constant operand, transcendental functions (numpy's exp differs
// from libm's in the last bits), integer division and an out-of-range float -> int cast stay.

// CHECK-LABEL: func.func @test_no_fold
// CHECK:         "dlc.add"
// CHECK:         "dlc.unary"{{.*}}fn = "exp"
// CHECK:         "dlc.div"
// CHECK:         "dlc.cast"
// CHECK:         return
func.func @test_no_fold(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xi8>) {
  %c = "dlc.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %i = "dlc.constant"() {value = dense<[7, -7]> : tensor<2xi32>} : () -> tensor<2xi32>
  %j = "dlc.constant"() {value = dense<2> : tensor<2xi32>} : () -> tensor<2xi32>
  %big = "dlc.constant"() {value = dense<[1.0, 1000.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "dlc.add"(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = "dlc.unary"(%c) {fn = "exp", params = array<f64>} : (tensor<2xf32>) -> tensor<2xf32>
  %2 = "dlc.div"(%i, %j) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %3 = "dlc.cast"(%big) {to = i8} : (tensor<2xf32>) -> tensor<2xi8>
  return %0, %1, %2, %3 : tensor<2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xi8>
}

// -----

// A quantized weight's DequantizeLinear folds, (x - zero point) * scale per channel, whatever
// its size (with more elements than max-elements too): its conv or matmul needs a constant
// filter for its schedule.

// CHECK-LABEL: func.func @test_fold_dequantize
// CHECK-NEXT:    %[[C:.*]] = "dlc.constant"() {value = dense<{{\[\[}}1.000000e+00, -1.000000e+00, 0.000000e+00], [7.500000e-01, 1.000000e+00, 2.500000e-01]]> : tensor<2x3xf32>}
// CHECK-NEXT:    return %[[C]]
// LIMIT-LABEL: func.func @test_fold_dequantize
// LIMIT-NEXT:    "dlc.constant"
// LIMIT-NEXT:    return
func.func @test_fold_dequantize() -> tensor<2x3xf32> {
  %w = "dlc.constant"() {value = dense<[[3, -1, 1], [4, 5, 2]]> : tensor<2x3xi8>} : () -> tensor<2x3xi8>
  %s = "dlc.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %z = "dlc.constant"() {value = dense<[1, 1]> : tensor<2xi8>} : () -> tensor<2xi8>
  %0 = "dlc.dequantize"(%w, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x3xi8>, tensor<2xf32>, tensor<2xi8>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A float mean folds as the sum divided by the count (a LayerNorm of a constant table, as
// DeBERTa's relative position embeddings, and the products of its keys and queries with it).

// CHECK-LABEL: func.func @test_fold_mean
// CHECK-NEXT:    %[[C:.*]] = "dlc.constant"() {value = dense<{{\[\[}}2.000000e+00], [5.000000e-01]]> : tensor<2x1xf32>}
// CHECK-NEXT:    return %[[C]]
func.func @test_fold_mean() -> tensor<2x1xf32> {
  %x = "dlc.constant"() {value = dense<[[1.0, 2.0, 3.0], [0.0, 1.0, 0.5]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %0 = "dlc.reduce"(%x) {fn = "mean", axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// A running sum of a constant folds (EdgeNeXt's positional encoding: a CumSum of ones), as
// the scan computes it: [1, 2, 3, 4] exclusive from the end is [9, 7, 4, 0].

// CHECK-LABEL: func.func @test_fold_cumulative
// CHECK-NEXT:    %[[C:.*]] = "dlc.constant"() {value = dense<[9.000000e+00, 7.000000e+00, 4.000000e+00, 0.000000e+00]> : tensor<4xf32>}
// CHECK-NEXT:    return %[[C]]
func.func @test_fold_cumulative() -> tensor<4xf32> {
  %x = "dlc.constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "dlc.cumulative"(%x) {fn = "sum", axis = 0 : i64, exclusive = 1 : i64, reverse = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
