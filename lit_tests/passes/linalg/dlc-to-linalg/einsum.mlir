// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// A contraction: output letters are parallel loops, the summed letter a reduction loop.

// CHECK-DAG:   #[[A:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG:   #[[B:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
// CHECK-DAG:   #[[Y:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @test_einsum_batch_matmul
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>, %[[W:.*]]: tensor<2x4x5xf32>)
// CHECK:         %[[ZERO:.*]] = linalg.fill
// CHECK:         linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%[[X]], %[[W]] : tensor<2x3x4xf32>, tensor<2x4x5xf32>) outs(%[[ZERO]] : tensor<2x3x5xf32>)
// CHECK:           %[[P:.*]] = arith.mulf
// CHECK-NEXT:      arith.addf %{{.*}}, %[[P]] : f32
func.func @test_einsum_batch_matmul(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "dlc.einsum"(%a, %b) {equation = "bij,bjk->bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// A repeated letter reads the diagonal; with no output letters it is a full reduction.

// CHECK-DAG:   #[[DIAG:map[0-9]*]] = affine_map<(d0) -> (d0, d0)>
// CHECK-DAG:   #[[SCALAR:map[0-9]*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @test_einsum_trace
// CHECK:         linalg.generic {indexing_maps = [#[[DIAG]], #[[SCALAR]]], iterator_types = ["reduction"]}
// CHECK-SAME:      ins(%{{.*}} : tensor<4x4xf32>) outs(%{{.*}} : tensor<f32>)
func.func @test_einsum_trace(%a: tensor<4x4xf32>) -> tensor<f32> {
  %0 = "dlc.einsum"(%a) {equation = "ii"} : (tensor<4x4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Ellipses broadcast: the lower-rank operand's size-1 batch axis is read at 0.

// CHECK-DAG:   #[[A:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2, d4)>
// CHECK-DAG:   #[[B:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4) -> (0, d4, d3)>
// CHECK-LABEL: func.func @test_einsum_ellipsis_broadcast
// CHECK:         linalg.generic {indexing_maps = [#[[A]], #[[B]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<2x5x3x4xi32>, tensor<1x4x2xi32>) outs(%{{.*}} : tensor<2x5x3x2xi32>)
// CHECK:           arith.muli
// CHECK-NEXT:      arith.addi
func.func @test_einsum_ellipsis_broadcast(%a: tensor<2x5x3x4xi32>, %b: tensor<1x4x2xi32>) -> tensor<2x5x3x2xi32> {
  %0 = "dlc.einsum"(%a, %b) {equation = "...ij,...jk->...ik"} : (tensor<2x5x3x4xi32>, tensor<1x4x2xi32>) -> tensor<2x5x3x2xi32>
  return %0 : tensor<2x5x3x2xi32>
}

// -----

// A transpose is a generic with only parallel loops.

// CHECK-DAG:   #[[T:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @test_einsum_transpose
// CHECK:         linalg.generic {indexing_maps = [#[[T]], #{{.*}}], iterator_types = ["parallel", "parallel"]}
func.func @test_einsum_transpose(%a: tensor<3x4xf64>) -> tensor<4x3xf64> {
  %0 = "dlc.einsum"(%a) {equation = "ij->ji"} : (tensor<3x4xf64>) -> tensor<4x3xf64>
  return %0 : tensor<4x3xf64>
}
