// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// CHECK-LABEL: func.func @test_mul_same_shape
// CHECK-SAME:    (%[[A:.*]]: tensor<4x5xf16>, %[[B:.*]]: tensor<4x5xf16>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<4x5xf16>
// CHECK-NEXT:    %[[R:.*]] = linalg.mul ins(%[[A]], %[[B]] : tensor<4x5xf16>, tensor<4x5xf16>) outs(%[[INIT]] : tensor<4x5xf16>) -> tensor<4x5xf16>
// CHECK-NEXT:    return %[[R]]
func.func @test_mul_same_shape(%a: tensor<4x5xf16>, %b: tensor<4x5xf16>) -> tensor<4x5xf16> {
  %0 = "dlc.mul"(%a, %b) : (tensor<4x5xf16>, tensor<4x5xf16>) -> tensor<4x5xf16>
  return %0 : tensor<4x5xf16>
}

// -----

// A scalar tensor operand is read with an empty map.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[SCALAR:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @test_mul_broadcast_scalar
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[SCALAR]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4x5xf32>, tensor<f32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[P]] : f32
func.func @test_mul_broadcast_scalar(%a: tensor<4x5xf32>, %b: tensor<f32>) -> tensor<4x5xf32> {
  %0 = "dlc.mul"(%a, %b) : (tensor<4x5xf32>, tensor<f32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// CHECK-LABEL: func.func @test_mul_int_same_shape
// CHECK:         linalg.mul ins(%{{.*}}, %{{.*}} : tensor<8xi64>, tensor<8xi64>) outs(%{{.*}} : tensor<8xi64>)
func.func @test_mul_int_same_shape(%a: tensor<8xi64>, %b: tensor<8xi64>) -> tensor<8xi64> {
  %0 = "dlc.mul"(%a, %b) : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>
  return %0 : tensor<8xi64>
}

// -----

// CHECK-LABEL: func.func @test_mul_int_broadcast
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<1x8xi32>, tensor<3x1xi32>) outs(%{{.*}} : tensor<3x8xi32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i32, %[[Y:[^:]+]]: i32, %{{[^:]+}}: i32):
// CHECK-NEXT:      arith.muli %[[X]], %[[Y]] : i32
func.func @test_mul_int_broadcast(%a: tensor<1x8xi32>, %b: tensor<3x1xi32>) -> tensor<3x8xi32> {
  %0 = "dlc.mul"(%a, %b) : (tensor<1x8xi32>, tensor<3x1xi32>) -> tensor<3x8xi32>
  return %0 : tensor<3x8xi32>
}
