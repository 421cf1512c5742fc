// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-qdq-lut,dlc-canonicalize)' | FileCheck %s

// quantize(relu(dequantize(q))) with q u8 (scale 1, zero point 128) to u8 (scale 1, zero
// point 0): the table of the 256 bytes, max(b - 128, 0), indexed by q's bits (a bitcast to i8:
// gather indices are signed; a negative one counts from the end, which is its unsigned value).

// CHECK-LABEL: func.func @test_relu_u8
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x5xui8>)
// CHECK:         %[[I:.*]] = "dlc.bitcast"(%[[Q]]) {to = i8} : (tensor<2x5xui8>) -> tensor<2x5xi8>
// CHECK:         %[[T:.*]] = "dlc.constant"() {value = dense<"0x0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F"> : tensor<256xui8>}
// CHECK:         %[[G:.*]] = "dlc.gather"(%[[T]], %[[I]]) {axis = 0 : i64} : (tensor<256xui8>, tensor<2x5xi8>) -> tensor<2x5xui8>
// CHECK-NOT:     dlc.quantize
// CHECK:         return %[[G]]
func.func @test_relu_u8(%q: tensor<2x5xui8>) -> tensor<2x5xui8> {
  %s = "dlc.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %z = "dlc.constant"() {value = dense<128> : tensor<ui8>} : () -> tensor<ui8>
  %z0 = "dlc.constant"() {value = dense<0> : tensor<ui8>} : () -> tensor<ui8>
  %0 = "dlc.dequantize"(%q, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x5xui8>, tensor<f32>, tensor<ui8>) -> tensor<2x5xf32>
  %1 = "dlc.relu"(%0) : (tensor<2x5xf32>) -> tensor<2x5xf32>
  %2 = "dlc.quantize"(%1, %s, %z0) {axis = 0 : i64, block_size = 0 : i64, to = ui8} : (tensor<2x5xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x5xui8>
  return %2 : tensor<2x5xui8>
}

// -----

// s8 in and out (no zero points): the indices are q itself; bytes 128-255 are q = -128..-1.

// CHECK-LABEL: func.func @test_relu_s8
// CHECK-SAME:    (%[[Q:.*]]: tensor<7xi8>)
// CHECK-NOT:     dlc.bitcast
// CHECK:         %[[T:.*]] = "dlc.constant"() {value = dense<"0x000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D4E4F505152535455565758595A5B5C5D5E5F606162636465666768696A6B6C6D6E6F707172737475767778797A7B7C7D7E7F0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000"> : tensor<256xi8>}
// CHECK:         %[[G:.*]] = "dlc.gather"(%[[T]], %[[Q]]) {axis = 0 : i64}
// CHECK:         return %[[G]]
func.func @test_relu_s8(%q: tensor<7xi8>) -> tensor<7xi8> {
  %s = "dlc.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "dlc.dequantize"(%q, %s) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<7xi8>, tensor<f32>) -> tensor<7xf32>
  %1 = "dlc.relu"(%0) : (tensor<7xf32>) -> tensor<7xf32>
  %2 = "dlc.quantize"(%1, %s) {axis = 0 : i64, block_size = 0 : i64, to = i8} : (tensor<7xf32>, tensor<f32>) -> tensor<7xi8>
  return %2 : tensor<7xi8>
}

// -----

// The QDQ SiLU of EfficientNet, x * DQ(Q(sigmoid(x))) with x = DQ(q): one table; the inner
// quantize is part of it.

// CHECK-LABEL: func.func @test_silu
// CHECK:         "dlc.bitcast"
// CHECK:         %[[G:.*]] = "dlc.gather"(%{{.*}}, %{{.*}}) {axis = 0 : i64} : (tensor<256xui8>, tensor<1x4x4x8xi8>) -> tensor<1x4x4x8xui8>
// CHECK-NOT:     dlc.quantize
// CHECK-NOT:     dlc.unary
// CHECK:         return %[[G]]
func.func @test_silu(%q: tensor<1x4x4x8xui8>) -> tensor<1x4x4x8xui8> {
  %s = "dlc.constant"() {value = dense<0.05> : tensor<f32>} : () -> tensor<f32>
  %z = "dlc.constant"() {value = dense<127> : tensor<ui8>} : () -> tensor<ui8>
  %gs = "dlc.constant"() {value = dense<0.0039215689> : tensor<f32>} : () -> tensor<f32>
  %gz = "dlc.constant"() {value = dense<0> : tensor<ui8>} : () -> tensor<ui8>
  %os = "dlc.constant"() {value = dense<0.02> : tensor<f32>} : () -> tensor<f32>
  %oz = "dlc.constant"() {value = dense<20> : tensor<ui8>} : () -> tensor<ui8>
  %0 = "dlc.dequantize"(%q, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<1x4x4x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x4x4x8xf32>
  %1 = "dlc.unary"(%0) {fn = "sigmoid", params = array<f64>} : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %2 = "dlc.quantize"(%1, %gs, %gz) {axis = 0 : i64, block_size = 0 : i64, to = ui8} : (tensor<1x4x4x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x4x8xui8>
  %3 = "dlc.dequantize"(%2, %gs, %gz) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<1x4x4x8xui8>, tensor<f32>, tensor<ui8>) -> tensor<1x4x4x8xf32>
  %4 = "dlc.mul"(%0, %3) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %5 = "dlc.quantize"(%4, %os, %oz) {axis = 0 : i64, block_size = 0 : i64, to = ui8} : (tensor<1x4x4x8xf32>, tensor<f32>, tensor<ui8>) -> tensor<1x4x4x8xui8>
  return %5 : tensor<1x4x4x8xui8>
}

// -----

// Not a table: a function of two tensors; a per-axis scale; a function without a rule
// (sin); a requantize alone, Q(DQ(q)).

// CHECK-LABEL: func.func @test_two_tensors
// CHECK-NOT:     dlc.gather
// CHECK:         "dlc.quantize"
func.func @test_two_tensors(%a: tensor<8xui8>, %b: tensor<8xui8>) -> tensor<8xui8> {
  %s = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %z = "dlc.constant"() {value = dense<3> : tensor<ui8>} : () -> tensor<ui8>
  %0 = "dlc.dequantize"(%a, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<8xui8>, tensor<f32>, tensor<ui8>) -> tensor<8xf32>
  %1 = "dlc.dequantize"(%b, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<8xui8>, tensor<f32>, tensor<ui8>) -> tensor<8xf32>
  %2 = "dlc.mul"(%0, %1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = "dlc.quantize"(%2, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = ui8} : (tensor<8xf32>, tensor<f32>, tensor<ui8>) -> tensor<8xui8>
  return %3 : tensor<8xui8>
}

// CHECK-LABEL: func.func @test_per_axis
// CHECK-NOT:     dlc.gather
// CHECK:         "dlc.quantize"
func.func @test_per_axis(%q: tensor<2x3xui8>) -> tensor<2x3xui8> {
  %s = "dlc.constant"() {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
  %z = "dlc.constant"() {value = dense<[3, 4]> : tensor<2xui8>} : () -> tensor<2xui8>
  %s1 = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "dlc.dequantize"(%q, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<2x3xui8>, tensor<2xf32>, tensor<2xui8>) -> tensor<2x3xf32>
  %1 = "dlc.relu"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = "dlc.quantize"(%1, %s1) {axis = 0 : i64, block_size = 0 : i64, to = ui8} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xui8>
  return %2 : tensor<2x3xui8>
}

// CHECK-LABEL: func.func @test_no_rule
// CHECK-NOT:     dlc.gather
// CHECK:         "dlc.unary"
func.func @test_no_rule(%q: tensor<8xi8>) -> tensor<8xi8> {
  %s = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "dlc.dequantize"(%q, %s) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<8xi8>, tensor<f32>) -> tensor<8xf32>
  %1 = "dlc.unary"(%0) {fn = "sin", params = array<f64>} : (tensor<8xf32>) -> tensor<8xf32>
  %2 = "dlc.quantize"(%1, %s) {axis = 0 : i64, block_size = 0 : i64, to = i8} : (tensor<8xf32>, tensor<f32>) -> tensor<8xi8>
  return %2 : tensor<8xi8>
}

// CHECK-LABEL: func.func @test_requantize_alone
// CHECK-NOT:     dlc.gather
// CHECK:         "dlc.quantize"
func.func @test_requantize_alone(%q: tensor<8xi8>) -> tensor<8xui8> {
  %s = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %z = "dlc.constant"() {value = dense<7> : tensor<ui8>} : () -> tensor<ui8>
  %0 = "dlc.dequantize"(%q, %s) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<8xi8>, tensor<f32>) -> tensor<8xf32>
  %1 = "dlc.quantize"(%0, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = ui8} : (tensor<8xf32>, tensor<f32>, tensor<ui8>) -> tensor<8xui8>
  return %1 : tensor<8xui8>
}
