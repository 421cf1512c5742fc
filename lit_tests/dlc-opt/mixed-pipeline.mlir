// dlc's Python passes and upstream passes (at module level and nested under func.func) in one
// pipeline text.
// RUN: dlc-opt %s -p 'builtin.module(dlc-canonicalize,dlc-to-linalg,func.func(linalg-fuse-elementwise-ops),canonicalize,cse)' | FileCheck %s
// The same passes with dlc passes written inside the func.func anchor (they run at module level,
// in the same position of the sequence).
// RUN: dlc-opt %s -p 'builtin.module(func.func(dlc-canonicalize,dlc-to-linalg,linalg-fuse-elementwise-ops,canonicalize,cse))' | FileCheck %s

// The identity transpose folds (dlc-canonicalize), add and relu lower to two linalg.generic
// ops (dlc-to-linalg) that upstream fusion merges into one.

// CHECK-LABEL: func.func @test_add_relu
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK-NOT:     dlc.
// CHECK:         %[[R:.*]] = linalg.generic
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>)
// CHECK:           %[[S:.*]] = arith.addf
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf %[[S]], %{{.*}} : f32
// CHECK-NEXT:      linalg.yield %[[M]] : f32
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]] : tensor<2x3xf32>
func.func @test_add_relu(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %t = "dlc.transpose"(%a) {perm = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %0 = "dlc.add"(%t, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "dlc.relu"(%0) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
