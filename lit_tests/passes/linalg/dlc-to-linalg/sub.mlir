// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// CHECK-LABEL: func.func @test_sub_same_shape
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.sub ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @test_sub_same_shape(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.sub"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// The operand order is kept: lhs - rhs, with lhs the broadcast one.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @test_sub_broadcast_lhs
// CHECK-SAME:    (%[[A:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<2x3xf32>)
// CHECK:         linalg.generic {indexing_maps = [#[[ROW]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<3xf32>, tensor<2x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[D]] : f32
func.func @test_sub_broadcast_lhs(%a: tensor<3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.sub"(%a, %b) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[COL:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @test_sub_int_broadcast
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[ID]]]
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x3xi32>, tensor<2x1xi32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i32, %[[Y:[^:]+]]: i32, %{{[^:]+}}: i32):
// CHECK-NEXT:      %[[D:.*]] = arith.subi %[[X]], %[[Y]] : i32
// CHECK-NEXT:      linalg.yield %[[D]] : i32
func.func @test_sub_int_broadcast(%a: tensor<2x3xi32>, %b: tensor<2x1xi32>) -> tensor<2x3xi32> {
  %0 = "dlc.sub"(%a, %b) : (tensor<2x3xi32>, tensor<2x1xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}
