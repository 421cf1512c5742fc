// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-pad-matmul-n)' | FileCheck %s

// A constant-weight matmul with an awkward N (1,025: not a multiple of 32) gets zero columns up
// to 1,280 (a multiple of 256) and a slice back; a gemm's bias per column is padded too.

// CHECK-LABEL: func.func @test_pad
// CHECK:         %[[W:.*]] = "dlc.constant"() {{.*}} -> tensor<2x1280xf32>
// CHECK:         %[[M:.*]] = "dlc.matmul"(%arg0, %[[W]]) : (tensor<3x2xf32>, tensor<2x1280xf32>) -> tensor<3x1280xf32>
// CHECK:         %[[S:.*]] = "dlc.slice"(%[[M]]) {sizes = array<i64: 3, 1025>, starts = array<i64: 0, 0>, steps = array<i64: 1, 1>}
// CHECK:         %[[G:.*]] = "dlc.gemm"({{.*}}) {{.*}} : (tensor<3x2xf32>, tensor<2x1280xf32>, tensor<1280xf32>) -> tensor<3x1280xf32>
// CHECK:         %[[T:.*]] = "dlc.slice"(%[[G]])
// CHECK:         return %[[S]], %[[T]]
func.func @test_pad(%a: tensor<3x2xf32>) -> (tensor<3x1025xf32>, tensor<3x1025xf32>) {
  %w = "dlc.constant"() {value = dense<1.0> : tensor<2x1025xf32>} : () -> tensor<2x1025xf32>
  %b = "dlc.constant"() {value = dense<2.0> : tensor<1025xf32>} : () -> tensor<1025xf32>
  %0 = "dlc.matmul"(%a, %w) : (tensor<3x2xf32>, tensor<2x1025xf32>) -> tensor<3x1025xf32>
  %1 = "dlc.gemm"(%a, %w, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<3x2xf32>, tensor<2x1025xf32>, tensor<1025xf32>) -> tensor<3x1025xf32>
  return %0, %1 : tensor<3x1025xf32>, tensor<3x1025xf32>
}

// -----

// Negative: N below 1,024, N with good tiles (1,536 = 3 x 512), weights that are not constant.

// CHECK-LABEL: func.func @test_keep
// CHECK-NOT:     "dlc.slice"
// CHECK:         return
func.func @test_keep(%a: tensor<3x2xf32>, %v: tensor<2x1025xf32>) -> (tensor<3x1000xf32>, tensor<3x1536xf32>, tensor<3x1025xf32>) {
  %w = "dlc.constant"() {value = dense<1.0> : tensor<2x1000xf32>} : () -> tensor<2x1000xf32>
  %u = "dlc.constant"() {value = dense<1.0> : tensor<2x1536xf32>} : () -> tensor<2x1536xf32>
  %0 = "dlc.matmul"(%a, %w) : (tensor<3x2xf32>, tensor<2x1000xf32>) -> tensor<3x1000xf32>
  %1 = "dlc.matmul"(%a, %u) : (tensor<3x2xf32>, tensor<2x1536xf32>) -> tensor<3x1536xf32>
  %2 = "dlc.matmul"(%a, %v) : (tensor<3x2xf32>, tensor<2x1025xf32>) -> tensor<3x1025xf32>
  return %0, %1, %2 : tensor<3x1000xf32>, tensor<3x1536xf32>, tensor<3x1025xf32>
}
