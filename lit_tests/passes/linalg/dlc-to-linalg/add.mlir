// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.add of equal shapes -> linalg.add into a tensor.empty

// CHECK-LABEL: func.func @test_add_same_shape
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK-NEXT:    %[[SUM:.*]] = linalg.add ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[SUM]] : tensor<2x3xf32>
func.func @test_add_same_shape(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Broadcasting a row: the missing leading axis disappears from the operand's map.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @test_add_broadcast_row
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK-NEXT:    %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[R:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK:         return %[[SUM]] : tensor<2x3xf32>
func.func @test_add_broadcast_row(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Size-1 axes on both sides: each operand reads index 0 on its broadcast axis.

// CHECK-DAG:   #[[COL:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG:   #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (0, d1)>
// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_add_broadcast_both
// CHECK:         linalg.generic {indexing_maps = [#[[COL]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4x1xf32>, tensor<1x5xf32>) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK:           arith.addf
func.func @test_add_broadcast_both(%a: tensor<4x1xf32>, %b: tensor<1x5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<4x1xf32>, tensor<1x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// A lower-rank operand with a size-1 axis: missing axes dropped, size-1 axes read at 0.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG:   #[[RHS:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-LABEL: func.func @test_add_broadcast_rank
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[RHS]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4x2x3xf32>, tensor<2x1xf32>) outs(%{{.*}} : tensor<4x2x3xf32>)
func.func @test_add_broadcast_rank(%a: tensor<4x2x3xf32>, %b: tensor<2x1xf32>) -> tensor<4x2x3xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<4x2x3xf32>, tensor<2x1xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

// Integers: linalg.add for equal shapes, arith.addi in the body when broadcasting.

// CHECK-LABEL: func.func @test_add_int_same_shape
// CHECK:         linalg.add ins(%{{.*}}, %{{.*}} : tensor<4xi32>, tensor<4xi32>) outs(%{{.*}} : tensor<4xi32>) -> tensor<4xi32>
func.func @test_add_int_same_shape(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "dlc.add"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @test_add_int_broadcast_scalar
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4xi64>, tensor<i64>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i64, %[[Y:[^:]+]]: i64, %{{[^:]+}}: i64):
// CHECK-NEXT:      %[[R:.*]] = arith.addi %[[X]], %[[Y]] : i64
// CHECK-NEXT:      linalg.yield %[[R]] : i64
func.func @test_add_int_broadcast_scalar(%a: tensor<4xi64>, %b: tensor<i64>) -> tensor<4xi64> {
  %0 = "dlc.add"(%a, %b) : (tensor<4xi64>, tensor<i64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}
