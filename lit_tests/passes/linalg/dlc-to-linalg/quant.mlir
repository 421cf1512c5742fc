// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// Per-tensor quantize to ui8: a rank-0 scale and zero point read by an empty map; divide and
// round half to even in f32, clamp to [0 - zp, 255 - zp] and add the zero point, in f32 (the
// f64 path's values: small integers, exact), then fptoui.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[ALL:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @test_quantize_per_tensor
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>, %[[S:.*]]: tensor<f32>, %[[Z:.*]]: tensor<i8>) -> tensor<2x3xi8>
// CHECK-DAG:     %[[HIGH:.*]] = arith.constant 2.550000e+02 : f32
// CHECK-DAG:     %[[LOW:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3xi8>
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[ALL]], #[[ALL]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[X]], %[[S]], %[[Z]] : tensor<2x3xf32>, tensor<f32>, tensor<i8>) outs(%[[INIT]] : tensor<2x3xi8>)
// CHECK-NEXT:    ^bb0(%[[XE:[^:]+]]: f32, %[[SE:[^:]+]]: f32, %[[ZE:[^:]+]]: i8, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[XE]], %[[SE]] : f32
// CHECK-NEXT:      %[[R:.*]] = math.roundeven %[[Q]] : f32
// CHECK-NEXT:      %[[ZF:.*]] = arith.uitofp %[[ZE]] : i8 to f32
// CHECK-NEXT:      %[[LZ:.*]] = arith.subf %[[LOW]], %[[ZF]] : f32
// CHECK-NEXT:      %[[HZ:.*]] = arith.subf %[[HIGH]], %[[ZF]] : f32
// CHECK-NEXT:      %[[MAX:.*]] = arith.maxnumf %[[R]], %[[LZ]] : f32
// CHECK-NEXT:      %[[MIN:.*]] = arith.minnumf %[[MAX]], %[[HZ]] : f32
// CHECK-NEXT:      %[[SUM:.*]] = arith.addf %[[MIN]], %[[ZF]] : f32
// CHECK-NEXT:      %[[INT:.*]] = arith.fptoui %[[SUM]] : f32 to i8
// CHECK-NEXT:      linalg.yield %[[INT]] : i8
func.func @test_quantize_per_tensor(%x: tensor<2x3xf32>, %s: tensor<f32>, %z: tensor<ui8>) -> tensor<2x3xui8> {
  %0 = "dlc.quantize"(%x, %s, %z) {axis = 0 : i64, block_size = 0 : i64, to = ui8} : (tensor<2x3xf32>, tensor<f32>, tensor<ui8>) -> tensor<2x3xui8>
  return %0 : tensor<2x3xui8>
}

// -----

// Blocked quantize to i8 without zero point: the scale is read at (d0, d1 floordiv 2);
// clamp to [-128, 127] and fptosi.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[BLOCK:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1 floordiv 2)>
// CHECK-LABEL: func.func @test_quantize_blocked
// CHECK-DAG:     arith.constant 1.270000e+02 : f32
// CHECK-DAG:     arith.constant -1.280000e+02 : f32
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[BLOCK]], #[[ID]]]
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x5xf32>, tensor<2x3xf32>) outs(%{{.*}} : tensor<2x5xi8>)
// CHECK:           math.roundeven
// CHECK-NOT:       arith.addf
// CHECK:           arith.fptosi %{{.*}} : f32 to i8
func.func @test_quantize_blocked(%x: tensor<2x5xf32>, %s: tensor<2x3xf32>) -> tensor<2x5xi8> {
  %0 = "dlc.quantize"(%x, %s) {axis = 1 : i64, block_size = 2 : i64, to = i8} : (tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<2x5xi8>
  return %0 : tensor<2x5xi8>
}

// -----

// A f16 quantize divides in f32 and rounds the quotient to f16 first, as numpy does.

// CHECK-LABEL: func.func @test_quantize_f16
// CHECK:         ^bb0(%[[XE:[^:]+]]: f16, %[[SE:[^:]+]]: f16, %{{[^:]+}}: i16):
// CHECK-NEXT:      %[[XW:.*]] = arith.extf %[[XE]] : f16 to f32
// CHECK-NEXT:      %[[SW:.*]] = arith.extf %[[SE]] : f16 to f32
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[XW]], %[[SW]] : f32
// CHECK-NEXT:      %[[QH:.*]] = arith.truncf %[[Q]] : f32 to f16
// CHECK-NEXT:      %[[QW:.*]] = arith.extf %[[QH]] : f16 to f32
// CHECK-NEXT:      math.roundeven %[[QW]] : f32
// CHECK:           arith.fptosi %{{.*}} : f64 to i16
func.func @test_quantize_f16(%x: tensor<4xf16>, %s: tensor<f16>) -> tensor<4xi16> {
  %0 = "dlc.quantize"(%x, %s) {axis = 0 : i64, block_size = 0 : i64, to = i16} : (tensor<4xf16>, tensor<f16>) -> tensor<4xi16>
  return %0 : tensor<4xi16>
}

// -----

// Per-axis dequantize: scale and zero point are read at the axis's loop (d1); the value is
// (x - zero point) * scale in f32 (the f64 path's value: x - zp exact, the product rounded once).

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[AXIS:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @test_dequantize_per_axis
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[AXIS]], #[[AXIS]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-NEXT:    ^bb0(%[[XE:[^:]+]]: i8, %[[SE:[^:]+]]: f32, %[[ZE:[^:]+]]: i8, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[XF:.*]] = arith.sitofp %[[XE]] : i8 to f32
// CHECK-NEXT:      %[[ZF:.*]] = arith.sitofp %[[ZE]] : i8 to f32
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[XF]], %[[ZF]] : f32
// CHECK-NEXT:      %[[Y:.*]] = arith.mulf %[[D]], %[[SE]] : f32
// CHECK-NEXT:      linalg.yield %[[Y]] : f32
func.func @test_dequantize_per_axis(%x: tensor<2x3xi8>, %s: tensor<3xf32>, %z: tensor<3xi8>) -> tensor<2x3xf32> {
  %0 = "dlc.dequantize"(%x, %s, %z) {axis = 1 : i64, block_size = 0 : i64, to = f32} : (tensor<2x3xi8>, tensor<3xf32>, tensor<3xi8>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Unsigned dequantize to f64: uitofp, no final rounding.

// CHECK-LABEL: func.func @test_dequantize_unsigned_f64
// CHECK:         arith.uitofp %{{.*}} : i16 to f64
// CHECK-NEXT:    arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    linalg.yield %{{.*}} : f64
func.func @test_dequantize_unsigned_f64(%x: tensor<4xui16>, %s: tensor<f64>) -> tensor<4xf64> {
  %0 = "dlc.dequantize"(%x, %s) {axis = 0 : i64, block_size = 0 : i64, to = f64} : (tensor<4xui16>, tensor<f64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// BitCast between types of different storage: arith.bitcast in a generic.

// CHECK-LABEL: func.func @test_bitcast_f32_to_i32
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f32, %{{[^:]+}}: i32):
// CHECK-NEXT:      %[[B:.*]] = arith.bitcast %[[IN]] : f32 to i32
// CHECK-NEXT:      linalg.yield %[[B]] : i32
func.func @test_bitcast_f32_to_i32(%x: tensor<4xf32>) -> tensor<4xi32> {
  %0 = "dlc.bitcast"(%x) {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// BitCast between types of one storage type (i8 and ui8 are both stored as i8): no op.

// CHECK-LABEL: func.func @test_bitcast_i8_to_ui8
// CHECK-SAME:    (%[[X:.*]]: tensor<4xi8>) -> tensor<4xi8>
// CHECK-NEXT:    return %[[X]] : tensor<4xi8>
func.func @test_bitcast_i8_to_ui8(%x: tensor<4xi8>) -> tensor<4xui8> {
  %0 = "dlc.bitcast"(%x) {to = ui8} : (tensor<4xi8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// BitCast to bool: any non-zero byte is true, stored as i8 0/1.

// CHECK-LABEL: func.func @test_bitcast_ui8_to_bool
// CHECK:         ^bb0(%[[IN:[^:]+]]: i8, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[NZ:.*]] = arith.cmpi ne, %[[IN]], %{{.*}} : i8
// CHECK-NEXT:      %[[B:.*]] = arith.extui %[[NZ]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[B]] : i8
func.func @test_bitcast_ui8_to_bool(%x: tensor<4xui8>) -> tensor<4xi1> {
  %0 = "dlc.bitcast"(%x) {to = i1} : (tensor<4xui8>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}
