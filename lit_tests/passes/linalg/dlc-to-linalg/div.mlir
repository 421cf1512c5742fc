// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// CHECK-LABEL: func.func @test_div_same_shape
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>)
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.div ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]]
func.func @test_div_same_shape(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.div"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[COL:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @test_div_broadcast
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x3xf32>, tensor<2x1xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[Q:.*]] = arith.divf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[Q]] : f32
func.func @test_div_broadcast(%a: tensor<2x3xf32>, %b: tensor<2x1xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.div"(%a, %b) : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Integer division never traps: x / 0 -> 0 and x / -1 -> 0 - x are selected around a
// arith.divsi whose divisor is replaced by 1 in those two cases. Always a linalg.generic.

// CHECK-LABEL: func.func @test_div_int_same_shape
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[MINUS_ONE:.*]] = arith.constant -1 : i32
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4xi32>, tensor<4xi32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i32, %[[Y:[^:]+]]: i32, %{{[^:]+}}: i32):
// CHECK-DAG:       %[[BY_ZERO:.*]] = arith.cmpi eq, %[[Y]], %[[ZERO]] : i32
// CHECK-DAG:       %[[BY_MINUS_ONE:.*]] = arith.cmpi eq, %[[Y]], %[[MINUS_ONE]] : i32
// CHECK:           %[[EITHER:.*]] = arith.ori %[[BY_ZERO]], %[[BY_MINUS_ONE]] : i1
// CHECK:           %[[DIVISOR:.*]] = arith.select %[[EITHER]], %[[ONE]], %[[Y]] : i32
// CHECK-DAG:       %[[NEG:.*]] = arith.subi %[[ZERO]], %[[X]] : i32
// CHECK-DAG:       %[[QUOTIENT:.*]] = arith.divsi %[[X]], %[[DIVISOR]] : i32
// CHECK:           %[[Q1:.*]] = arith.select %[[BY_MINUS_ONE]], %[[NEG]], %[[QUOTIENT]] : i32
// CHECK:           %[[Q2:.*]] = arith.select %[[BY_ZERO]], %[[ZERO]], %[[Q1]] : i32
// CHECK:           linalg.yield %[[Q2]] : i32
// CHECK-NOT:     linalg.div
func.func @test_div_int_same_shape(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "dlc.div"(%a, %b) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @test_div_int_broadcast
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x4xi64>, tensor<i64>) outs(%{{.*}} : tensor<2x4xi64>)
// CHECK:           arith.divsi
func.func @test_div_int_broadcast(%a: tensor<2x4xi64>, %b: tensor<i64>) -> tensor<2x4xi64> {
  %0 = "dlc.div"(%a, %b) : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi64>
  return %0 : tensor<2x4xi64>
}
