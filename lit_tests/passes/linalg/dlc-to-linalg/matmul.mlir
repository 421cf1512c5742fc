// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// 2-D: linalg.matmul accumulating into a zero-filled tensor.

// CHECK-LABEL: func.func @test_matmul_2d
// CHECK-SAME:    (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3x5xf32>) -> tensor<4x5xf32>
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[INIT:.*]] = tensor.empty() : tensor<4x5xf32>
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[INIT]] : tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<4x3xf32>, tensor<3x5xf32>) outs(%[[ACC]] : tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4x5xf32>
func.func @test_matmul_2d(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// CHECK-LABEL: func.func @test_matmul_2d_int
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : i32) outs(%{{.*}} : tensor<4x5xi32>)
// CHECK-NEXT:    linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x3xi32>, tensor<3x5xi32>) outs(%[[ACC]] : tensor<4x5xi32>)
func.func @test_matmul_2d_int(%a: tensor<4x3xi32>, %b: tensor<3x5xi32>) -> tensor<4x5xi32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xi32>, tensor<3x5xi32>) -> tensor<4x5xi32>
  return %0 : tensor<4x5xi32>
}

// -----

// 3-D with equal batch sizes: linalg.batch_matmul.

// CHECK-LABEL: func.func @test_matmul_batched
// CHECK-SAME:    (%[[A:.*]]: tensor<2x4x3xf32>, %[[B:.*]]: tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4x5xf32>)
// CHECK-NEXT:    %[[R:.*]] = linalg.batch_matmul ins(%[[A]], %[[B]] : tensor<2x4x3xf32>, tensor<2x3x5xf32>) outs(%[[ACC]] : tensor<2x4x5xf32>) -> tensor<2x4x5xf32>
// CHECK-NEXT:    return %[[R]]
func.func @test_matmul_batched(%a: tensor<2x4x3xf32>, %b: tensor<2x3x5xf32>) -> tensor<2x4x5xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<2x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

// A broadcast batch dimension (1 vs 2): the broadcast operand is materialized at the result's
// batch shape (a copying linalg.generic reading its size-1 axis at 0), then linalg.batch_matmul.

// CHECK-DAG:   #[[BCAST:map[0-9]*]] = affine_map<(d0, d1, d2) -> (0, d1, d2)>
// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @test_matmul_broadcast_batch
// CHECK-SAME:    (%[[A:.*]]: tensor<1x4x3xf32>, %[[B:.*]]: tensor<2x3x5xf32>)
// CHECK:         %[[AB:.*]] = linalg.generic {indexing_maps = [#[[BCAST]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]] : tensor<1x4x3xf32>) outs(%{{.*}} : tensor<2x4x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[X]] : f32
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<2x4x5xf32>)
// CHECK-NEXT:    %[[R:.*]] = linalg.batch_matmul ins(%[[AB]], %[[B]] : tensor<2x4x3xf32>, tensor<2x3x5xf32>) outs(%[[ACC]] : tensor<2x4x5xf32>)
// CHECK-NEXT:    return %[[R]]
func.func @test_matmul_broadcast_batch(%a: tensor<1x4x3xf32>, %b: tensor<2x3x5xf32>) -> tensor<2x4x5xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<1x4x3xf32>, tensor<2x3x5xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

// Batch dimensions of different ranks broadcast as numpy does: [2,1,4,3] x [5,3,6] -> [2,5,4,6].
// Both operands are materialized at batch [2,5], reshaped to a batch of 10, multiplied by
// linalg.batch_matmul and reshaped back.

// CHECK-DAG:   #[[A_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
// CHECK-DAG:   #[[B_MAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @test_matmul_broadcast_batch_rank
// CHECK-DAG:     %[[OUT_SHAPE:.*]] = arith.constant dense<[2, 5, 4, 6]> : tensor<4xi64>
// CHECK-DAG:     %[[A_SHAPE:.*]] = arith.constant dense<[10, 4, 3]> : tensor<3xi64>
// CHECK-DAG:     %[[B_SHAPE:.*]] = arith.constant dense<[10, 3, 6]> : tensor<3xi64>
// CHECK:         %[[AB:.*]] = linalg.generic {indexing_maps = [#[[A_MAP]], #[[ID]]]
// CHECK-SAME:      ins(%{{.*}} : tensor<2x1x4x3xf32>) outs(%{{.*}} : tensor<2x5x4x3xf32>)
// CHECK:         %[[A3:.*]] = tensor.reshape %[[AB]](%[[A_SHAPE]]) : (tensor<2x5x4x3xf32>, tensor<3xi64>) -> tensor<10x4x3xf32>
// CHECK:         %[[BB:.*]] = linalg.generic {indexing_maps = [#[[B_MAP]], #[[ID]]]
// CHECK-SAME:      ins(%{{.*}} : tensor<5x3x6xf32>) outs(%{{.*}} : tensor<2x5x3x6xf32>)
// CHECK:         %[[B3:.*]] = tensor.reshape %[[BB]](%[[B_SHAPE]]) : (tensor<2x5x3x6xf32>, tensor<3xi64>) -> tensor<10x3x6xf32>
// CHECK:         %[[R:.*]] = linalg.batch_matmul ins(%[[A3]], %[[B3]] : tensor<10x4x3xf32>, tensor<10x3x6xf32>) outs(%{{.*}} : tensor<10x4x6xf32>)
// CHECK-NEXT:    %[[OUT:.*]] = tensor.reshape %[[R]](%[[OUT_SHAPE]]) : (tensor<10x4x6xf32>, tensor<4xi64>) -> tensor<2x5x4x6xf32>
// CHECK-NEXT:    return %[[OUT]]
func.func @test_matmul_broadcast_batch_rank(%a: tensor<2x1x4x3xf32>, %b: tensor<5x3x6xf32>) -> tensor<2x5x4x6xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<2x1x4x3xf32>, tensor<5x3x6xf32>) -> tensor<2x5x4x6xf32>
  return %0 : tensor<2x5x4x6xf32>
}

// -----

// Equal batch dimensions of rank 2 (attention's [B,H,S,D] x [B,H,D,S]): reshaped to one batch,
// linalg.batch_matmul, reshaped back.

// CHECK-LABEL: func.func @test_matmul_4d_4d
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3x4x8xf32>, %[[B:.*]]: tensor<2x3x8x5xf32>)
// CHECK:         %[[A3:.*]] = tensor.reshape %[[A]](%{{.*}}) : (tensor<2x3x4x8xf32>, tensor<3xi64>) -> tensor<6x4x8xf32>
// CHECK:         %[[B3:.*]] = tensor.reshape %[[B]](%{{.*}}) : (tensor<2x3x8x5xf32>, tensor<3xi64>) -> tensor<6x8x5xf32>
// CHECK:         %[[R:.*]] = linalg.batch_matmul ins(%[[A3]], %[[B3]] : tensor<6x4x8xf32>, tensor<6x8x5xf32>) outs(%{{.*}} : tensor<6x4x5xf32>)
// CHECK-NEXT:    %[[OUT:.*]] = tensor.reshape %[[R]](%{{.*}}) : (tensor<6x4x5xf32>, tensor<4xi64>) -> tensor<2x3x4x5xf32>
// CHECK-NEXT:    return %[[OUT]]
func.func @test_matmul_4d_4d(%a: tensor<2x3x4x8xf32>, %b: tensor<2x3x8x5xf32>) -> tensor<2x3x4x5xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<2x3x4x8xf32>, tensor<2x3x8x5xf32>) -> tensor<2x3x4x5xf32>
  return %0 : tensor<2x3x4x5xf32>
}

// -----

// 3-D x 2-D (a Linear of a transformer): A [2,4,3] reshaped to [8,3], linalg.matmul with the
// shared 2-D operand, the result reshaped back to [2,4,5]. tensor.reshape, not
// collapse_shape/expand_shape, which linalg-fuse-elementwise-ops would fold back into a
// 4-loop generic contraction.

// CHECK-LABEL: func.func @test_matmul_3d_2d
// CHECK-SAME:    (%[[A:.*]]: tensor<2x4x3xf32>, %[[B:.*]]: tensor<3x5xf32>)
// CHECK-DAG:     %[[OUT_SHAPE:.*]] = arith.constant dense<[2, 4, 5]> : tensor<3xi64>
// CHECK-DAG:     %[[A_SHAPE:.*]] = arith.constant dense<[8, 3]> : tensor<2xi64>
// CHECK:         %[[A2:.*]] = tensor.reshape %[[A]](%[[A_SHAPE]]) : (tensor<2x4x3xf32>, tensor<2xi64>) -> tensor<8x3xf32>
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<8x5xf32>)
// CHECK-NEXT:    %[[R:.*]] = linalg.matmul ins(%[[A2]], %[[B]] : tensor<8x3xf32>, tensor<3x5xf32>) outs(%[[ACC]] : tensor<8x5xf32>)
// CHECK-NEXT:    %[[OUT:.*]] = tensor.reshape %[[R]](%[[OUT_SHAPE]]) : (tensor<8x5xf32>, tensor<3xi64>) -> tensor<2x4x5xf32>
// CHECK-NEXT:    return %[[OUT]]
func.func @test_matmul_3d_2d(%a: tensor<2x4x3xf32>, %b: tensor<3x5xf32>) -> tensor<2x4x5xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

// 2-D x 4-D whose batch axes are all 1: the 4-D operand is reshaped to 2-D, linalg.matmul.

// CHECK-LABEL: func.func @test_matmul_2d_unit_batch_int
// CHECK:         %[[B2:.*]] = tensor.reshape %{{.*}}(%{{.*}}) : (tensor<1x1x3x6xi32>, tensor<2xi64>) -> tensor<3x6xi32>
// CHECK:         %[[R:.*]] = linalg.matmul ins(%{{.*}}, %[[B2]] : tensor<4x3xi32>, tensor<3x6xi32>) outs(%{{.*}} : tensor<4x6xi32>)
// CHECK-NEXT:    tensor.reshape %[[R]](%{{.*}}) : (tensor<4x6xi32>, tensor<4xi64>) -> tensor<1x1x4x6xi32>
func.func @test_matmul_2d_unit_batch_int(%a: tensor<4x3xi32>, %b: tensor<1x1x3x6xi32>) -> tensor<1x1x4x6xi32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xi32>, tensor<1x1x3x6xi32>) -> tensor<1x1x4x6xi32>
  return %0 : tensor<1x1x4x6xi32>
}

// -----

// 1-D x 2-D (vector-matrix): the vector's axis is the contraction; the result is 1-D.

// CHECK-DAG:   #[[A_MAP:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG:   #[[B_MAP:map[0-9]*]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-DAG:   #[[C_MAP:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @test_matmul_1d_2d
// CHECK:         linalg.generic {indexing_maps = [#[[A_MAP]], #[[B_MAP]], #[[C_MAP]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3x5xf32>) outs(%{{.*}} : tensor<5xf32>)
func.func @test_matmul_1d_2d(%a: tensor<3xf32>, %b: tensor<3x5xf32>) -> tensor<5xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<3xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// 2-D x 1-D (matrix-vector).

// CHECK-DAG:   #[[A_MAP:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[B_MAP:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG:   #[[C_MAP:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @test_matmul_2d_1d
// CHECK:         linalg.generic {indexing_maps = [#[[A_MAP]], #[[B_MAP]], #[[C_MAP]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<4xf32>)
func.func @test_matmul_2d_1d(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// 1-D x 1-D (dot product): a 0-D result and a single reduction loop.

// CHECK-DAG:   #[[V_MAP:map[0-9]*]] = affine_map<(d0) -> (d0)>
// CHECK-DAG:   #[[S_MAP:map[0-9]*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @test_matmul_1d_1d
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<f32>) -> tensor<f32>
// CHECK-NEXT:    linalg.generic {indexing_maps = [#[[V_MAP]], #[[V_MAP]], #[[S_MAP]]], iterator_types = ["reduction"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>) outs(%[[ACC]] : tensor<f32>)
func.func @test_matmul_1d_1d(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<f32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// 1-D x 3-D: the vector multiplies every matrix of the batch.

// CHECK-DAG:   #[[A_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG:   #[[B_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG:   #[[C_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @test_matmul_1d_3d
// CHECK:         linalg.generic {indexing_maps = [#[[A_MAP]], #[[B_MAP]], #[[C_MAP]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<2x3x4xf32>) outs(%{{.*}} : tensor<2x4xf32>)
func.func @test_matmul_1d_3d(%a: tensor<3xf32>, %b: tensor<2x3x4xf32>) -> tensor<2x4xf32> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<3xf32>, tensor<2x3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// float16 accumulates in float32 (as numpy does), truncated once after the contraction.

// CHECK-LABEL: func.func @test_matmul_2d_f16
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK-NEXT:    %[[R:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x3xf16>, tensor<3x5xf16>) outs(%[[ACC]] : tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[R]] : tensor<4x5xf32>) outs(%{{.*}} : tensor<4x5xf16>)
// CHECK:           arith.truncf %{{.*}} : f32 to f16
func.func @test_matmul_2d_f16(%a: tensor<4x3xf16>, %b: tensor<3x5xf16>) -> tensor<4x5xf16> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xf16>, tensor<3x5xf16>) -> tensor<4x5xf16>
  return %0 : tensor<4x5xf16>
}

// -----

// float16 3-D x 2-D: linalg.matmul of f16 operands into the f32 accumulator, reshaped, then
// truncated.

// CHECK-LABEL: func.func @test_matmul_3d_2d_f16
// CHECK:         %[[R:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x3xf16>, tensor<3x5xf16>) outs(%{{.*}} : tensor<8x5xf32>)
// CHECK-NEXT:    %[[OUT:.*]] = tensor.reshape %[[R]](%{{.*}}) : (tensor<8x5xf32>, tensor<3xi64>) -> tensor<2x4x5xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[OUT]] : tensor<2x4x5xf32>) outs(%{{.*}} : tensor<2x4x5xf16>)
// CHECK:           arith.truncf %{{.*}} : f32 to f16
func.func @test_matmul_3d_2d_f16(%a: tensor<2x4x3xf16>, %b: tensor<3x5xf16>) -> tensor<2x4x5xf16> {
  %0 = "dlc.matmul"(%a, %b) : (tensor<2x4x3xf16>, tensor<3x5xf16>) -> tensor<2x4x5xf16>
  return %0 : tensor<2x4x5xf16>
}
