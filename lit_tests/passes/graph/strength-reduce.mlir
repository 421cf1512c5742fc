// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-strength-reduce)' | FileCheck %s

// pow(x, 2) -> x * x, pow(x, 0.5) -> sqrt(x), pow(x, 1) -> x

// CHECK-LABEL: func.func @test_pow
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = "dlc.mul"(%[[X]], %[[X]])
// CHECK-NEXT:    %[[R:.*]] = "dlc.unary"(%[[S]]) {fn = "sqrt", params = array<f64>}
// CHECK-NEXT:    return %[[R]]
func.func @test_pow(%x: tensor<4xf32>) -> tensor<4xf32> {
  %two = "dlc.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %half = "dlc.constant"() {value = dense<0.5> : tensor<1xf32>} : () -> tensor<1xf32>
  %one = "dlc.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "dlc.binary"(%x, %two) {fn = "pow"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = "dlc.binary"(%0, %half) {fn = "pow"} : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %2 = "dlc.binary"(%1, %one) {fn = "pow"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// x / c -> x * (1 / c) when every element of c is a power of two (the product is exact)

// CHECK-LABEL: func.func @test_div_power_of_two
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-DAG:     %[[C:.*]] = "dlc.constant"() {value = dense<[1.250000e-01, -2.500000e-01, 4.000000e+00]> : tensor<3xf32>}
// CHECK:         %[[M:.*]] = "dlc.mul"(%[[X]], %[[C]])
// CHECK-NEXT:    return %[[M]]
func.func @test_div_power_of_two(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %c = "dlc.constant"() {value = dense<[8.0, -4.0, 0.25]> : tensor<3xf32>} : () -> tensor<3xf32>
  %0 = "dlc.div"(%x, %c) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Negative: 1/3 is not exact, pow(x, 5) has no cheaper form here, integer division stays,
// and so does pow with a non-constant exponent.

// CHECK-LABEL: func.func @test_no_reduction
// CHECK:         "dlc.div"
// CHECK:         "dlc.binary"{{.*}}"pow"
// CHECK:         "dlc.div"
// CHECK:         "dlc.binary"{{.*}}"pow"
// CHECK-NOT:     "dlc.mul"
func.func @test_no_reduction(%x: tensor<4xf32>, %i: tensor<4xi32>, %e: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xf32>) {
  %three = "dlc.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %two = "dlc.constant"() {value = dense<2> : tensor<i32>} : () -> tensor<i32>
  %five = "dlc.constant"() {value = dense<5.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "dlc.div"(%x, %three) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = "dlc.binary"(%0, %five) {fn = "pow"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %2 = "dlc.div"(%i, %two) : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  %3 = "dlc.binary"(%x, %e) {fn = "pow"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1, %2, %3 : tensor<4xf32>, tensor<4xi32>, tensor<4xf32>
}

// -----

// pow(x, 3) -> (x * x) * x: onnxruntime's Pow computes the cube so (one rounding more than a
// correctly rounded pow); the tanh GELU's cube was a libm powf call per element.

// CHECK-LABEL: func.func @test_cube
// CHECK-SAME:    (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT:    %[[S:.*]] = "dlc.mul"(%[[X]], %[[X]])
// CHECK-NEXT:    %[[C:.*]] = "dlc.mul"(%[[S]], %[[X]])
// CHECK-NEXT:    return %[[C]]
func.func @test_cube(%x: tensor<4xf32>) -> tensor<4xf32> {
  %three = "dlc.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "dlc.binary"(%x, %three) {fn = "pow"} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A mean or max over the spatial axes of NCHW is the global pool of that window (keepdims = 0:
// then reshaped); a sum, or a mean over the channels, stays a reduction.

// CHECK-LABEL: func.func @test_spatial_reduce
// CHECK:         "dlc.pool"(%arg0) {{{.*}}kernel = array<i64: 7, 5>, kind = "avg"{{.*}}} : (tensor<2x8x7x5xf32>) -> tensor<2x8x1x1xf32>
// CHECK:         %[[M:.*]] = "dlc.pool"(%arg0) {{{.*}}kind = "max"{{.*}}} : (tensor<2x8x7x5xf32>) -> tensor<2x8x1x1xf32>
// CHECK:         "dlc.reshape"(%[[M]]) {shape = array<i64: 2, 8>}
// CHECK:         "dlc.reduce"(%arg0) {axes = array<i64: 2, 3>, fn = "sum"
// CHECK:         "dlc.reduce"(%arg0) {axes = array<i64: 1>, fn = "mean"
func.func @test_spatial_reduce(%x: tensor<2x8x7x5xf32>) -> (tensor<2x8x1x1xf32>, tensor<2x8xf32>, tensor<2x8x1x1xf32>, tensor<2x1x7x5xf32>) {
  %0 = "dlc.reduce"(%x) {fn = "mean", axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<2x8x7x5xf32>) -> tensor<2x8x1x1xf32>
  %1 = "dlc.reduce"(%x) {fn = "max", axes = array<i64: 2, 3>, keepdims = 0 : i64} : (tensor<2x8x7x5xf32>) -> tensor<2x8xf32>
  %2 = "dlc.reduce"(%x) {fn = "sum", axes = array<i64: 2, 3>, keepdims = 1 : i64} : (tensor<2x8x7x5xf32>) -> tensor<2x8x1x1xf32>
  %3 = "dlc.reduce"(%x) {fn = "mean", axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x8x7x5xf32>) -> tensor<2x1x7x5xf32>
  return %0, %1, %2, %3 : tensor<2x8x1x1xf32>, tensor<2x8xf32>, tensor<2x8x1x1xf32>, tensor<2x1x7x5xf32>
}
