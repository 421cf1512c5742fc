// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.relu(x) -> linalg.generic {max(x, 0)}

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_relu_f32
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK:         %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]] : tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[X]], %[[ZERO]] : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK:         return %[[R]] : tensor<2x3xf32>
func.func @test_relu_f32(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @test_relu_int
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}} : tensor<4xi32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i32, %{{[^:]+}}: i32):
// CHECK-NEXT:      %[[M:.*]] = arith.maxsi %[[X]], %[[ZERO]] : i32
// CHECK-NEXT:      linalg.yield %[[M]] : i32
func.func @test_relu_int(%a: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "dlc.relu"(%a) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @test_relu_scalar
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = []}
// CHECK-SAME:      ins(%{{.*}} : tensor<f32>) outs(%{{.*}} : tensor<f32>)
// CHECK:           arith.maximumf
func.func @test_relu_scalar(%a: tensor<f32>) -> tensor<f32> {
  %0 = "dlc.relu"(%a) : (tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
