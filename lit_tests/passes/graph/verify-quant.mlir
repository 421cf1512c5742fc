// The rules of dlc.quantize, dlc.dequantize and dlc.bitcast: element types, the granularity
// of scale and zero point (per tensor, per axis, blocked), and equal bit widths.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.quantize"
// CHECK-NEXT:    "dlc.dequantize"
// CHECK-NEXT:    "dlc.bitcast"
// CHECK-NEXT:    return
func.func @test_valid(%x: tensor<2x5xf32>, %s: tensor<2x3xf32>, %z: tensor<2x3xi8>) -> (tensor<2x5xi8>, tensor<2x5xf16>, tensor<2x5xui8>) {
  %0 = "dlc.quantize"(%x, %s, %z) {axis = 1 : i64, block_size = 2 : i64, to = i8} : (tensor<2x5xf32>, tensor<2x3xf32>, tensor<2x3xi8>) -> tensor<2x5xi8>
  %1 = "dlc.dequantize"(%0, %s, %z) {axis = 1 : i64, block_size = 2 : i64, to = f16} : (tensor<2x5xi8>, tensor<2x3xf32>, tensor<2x3xi8>) -> tensor<2x5xf16>
  %2 = "dlc.bitcast"(%0) {to = ui8} : (tensor<2x5xi8>) -> tensor<2x5xui8>
  return %0, %1, %2 : tensor<2x5xi8>, tensor<2x5xf16>, tensor<2x5xui8>
}

// -----

func.func @test_quantize_to_float(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf16> {
  // expected-error @+1 {{'dlc.quantize' op cannot quantize to f16: i8, ui8, i16, ui16 or i32 expected}}
  %0 = "dlc.quantize"(%x, %s) {axis = 0 : i64, block_size = 0 : i64, to = f16} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @test_quantize_scale_type(%x: tensor<4xf32>, %s: tensor<f16>) -> tensor<4xi8> {
  // expected-error @+1 {{'dlc.quantize' op x and scale must have one float element type, got f32 and f16}}
  %0 = "dlc.quantize"(%x, %s) {axis = 0 : i64, block_size = 0 : i64, to = i8} : (tensor<4xf32>, tensor<f16>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

func.func @test_quantize_per_axis_size(%x: tensor<2x3xf32>, %s: tensor<2xf32>) -> tensor<2x3xi8> {
  // expected-error @+1 {{'dlc.quantize' op a per-axis scale must be [3] (axis 1 of [2x3]), got [2]}}
  %0 = "dlc.quantize"(%x, %s) {axis = 1 : i64, block_size = 0 : i64, to = i8} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xi8>
  return %0 : tensor<2x3xi8>
}

// -----

func.func @test_quantize_axis_range(%x: tensor<2x3xf32>, %s: tensor<3xf32>) -> tensor<2x3xi8> {
  // expected-error @+1 {{'dlc.quantize' op axis 2 is out of range [0, 2) for a rank-2 input}}
  %0 = "dlc.quantize"(%x, %s) {axis = 2 : i64, block_size = 0 : i64, to = i8} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi8>
  return %0 : tensor<2x3xi8>
}

// -----

func.func @test_quantize_blocks(%x: tensor<2x5xf32>, %s: tensor<2x2xf32>) -> tensor<2x5xi8> {
  // expected-error @+1 {{'dlc.quantize' op a blocked scale (block_size 2 along axis 1) must be [2x3], got [2x2]}}
  %0 = "dlc.quantize"(%x, %s) {axis = 1 : i64, block_size = 2 : i64, to = i8} : (tensor<2x5xf32>, tensor<2x2xf32>) -> tensor<2x5xi8>
  return %0 : tensor<2x5xi8>
}

// -----

func.func @test_quantize_zero_point_type(%x: tensor<4xf32>, %s: tensor<f32>, %z: tensor<ui8>) -> tensor<4xi8> {
  // expected-error @+1 {{'dlc.quantize' op zero point must be i8, got ui8}}
  %0 = "dlc.quantize"(%x, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = i8} : (tensor<4xf32>, tensor<f32>, tensor<ui8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

func.func @test_quantize_zero_point_shape(%x: tensor<2x3xf32>, %s: tensor<3xf32>, %z: tensor<ui8>) -> tensor<2x3xui8> {
  // expected-error @+1 {{'dlc.quantize' op zero point [scalar] must have the scale's shape [3]}}
  %0 = "dlc.quantize"(%x, %s, %z) {axis = 1 : i64, block_size = 0 : i64, to = ui8} : (tensor<2x3xf32>, tensor<3xf32>, tensor<ui8>) -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}

// -----

func.func @test_dequantize_float_input(%x: tensor<4xf32>, %s: tensor<f32>) -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.dequantize' op x must be i8, ui8, i16, ui16 or i32, got f32}}
  %0 = "dlc.dequantize"(%x, %s) {axis = 0 : i64, block_size = 0 : i64, to = f32} : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @test_dequantize_to_integer(%x: tensor<4xi8>, %s: tensor<f32>) -> tensor<4xi32> {
  // expected-error @+1 {{'dlc.dequantize' op cannot dequantize to i32: a float type expected}}
  %0 = "dlc.dequantize"(%x, %s) {axis = 0 : i64, block_size = 0 : i64, to = i32} : (tensor<4xi8>, tensor<f32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @test_bitcast_width(%x: tensor<4xf32>) -> tensor<4xi16> {
  // expected-error @+1 {{'dlc.bitcast' op cannot bitcast f32 (32 bits) to i16 (16 bits): the widths must be equal}}
  %0 = "dlc.bitcast"(%x) {to = i16} : (tensor<4xf32>) -> tensor<4xi16>
  return %0 : tensor<4xi16>
}

// -----

func.func @test_bitcast_result_type(%x: tensor<4xf32>) -> tensor<4xui32> {
  // expected-error @+1 {{'dlc.bitcast' op result type tensor<4xui32> does not match the inferred type tensor<4xi32>}}
  %0 = "dlc.bitcast"(%x) {to = i32} : (tensor<4xf32>) -> tensor<4xui32>
  return %0 : tensor<4xui32>
}
