// A transformer-block-like chain as the ONNX importer decomposes it: LayerNormalization
// (mean, x - mean, variance, 1 / sqrt(var + eps), scale, shift), MatMul, Gelu and Softmax
// (max, exp(x - max), sum, divide). After dlc-to-linalg every elementwise op is its own
// linalg.generic (or named op); linalg-fuse-elementwise-ops (in -O2's linalg stage) fuses
// each elementwise chain into the reduction or the loop nest that consumes it.
// RUN: dlc-opt %s -p 'builtin.module(dlc-to-linalg,canonicalize,cse)' | FileCheck %s --check-prefix=UNFUSED
// RUN: dlc-opt %s -p 'builtin.module(dlc-to-linalg,canonicalize,cse,func.func(linalg-fuse-elementwise-ops),canonicalize,cse)' | FileCheck %s --check-prefix=FUSED

// UNFUSED-LABEL: func.func @test_transformer_block
// UNFUSED-COUNT-17: linalg.generic
// UNFUSED-NOT:     linalg.generic
// UNFUSED:         return

// 17 generic ops (and a named linalg.mul) become 9.
// FUSED-LABEL: func.func @test_transformer_block
// FUSED-COUNT-9: linalg.generic
// FUSED-NOT:     linalg.generic
// FUSED-NOT:     linalg.mul
// FUSED:         return
func.func @test_transformer_block(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %gamma: tensor<8xf32>, %beta: tensor<8xf32>) -> tensor<4x8xf32> {
  %eps = "dlc.constant"() {value = dense<1.0e-05> : tensor<f32>} : () -> tensor<f32>
  %mean = "dlc.reduce"(%x) {fn = "mean", axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %d = "dlc.sub"(%x, %mean) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %dd = "dlc.mul"(%d, %d) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %var = "dlc.reduce"(%dd) {fn = "mean", axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %ve = "dlc.add"(%var, %eps) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %sd = "dlc.unary"(%ve) {fn = "sqrt", params = array<f64>} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %inv = "dlc.unary"(%sd) {fn = "reciprocal", params = array<f64>} : (tensor<4x1xf32>) -> tensor<4x1xf32>
  %n = "dlc.mul"(%d, %inv) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %ns = "dlc.mul"(%n, %gamma) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %ln = "dlc.add"(%ns, %beta) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %h = "dlc.matmul"(%ln, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %g = "dlc.unary"(%h) {fn = "gelu", params = array<f64>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %max = "dlc.reduce"(%g) {fn = "max", axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %s = "dlc.sub"(%g, %max) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %e = "dlc.unary"(%s) {fn = "exp", params = array<f64>} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = "dlc.reduce"(%e) {fn = "sum", axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %y = "dlc.div"(%e, %sum) : (tensor<4x8xf32>, tensor<4x1xf32>) -> tensor<4x8xf32>
  %r = "dlc.add"(%y, %x) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
