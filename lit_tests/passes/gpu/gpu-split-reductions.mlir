// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-gpu-split-reductions)' | FileCheck %s

// A row reduction with few outputs splits interleaved: k = k1 * 32 + r, r a parallel loop
// before the k1 reduction (neighbouring threads read neighbouring addresses), then a final
// reduction over r into the op's own init.

// CHECK-DAG:   #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG:   #[[PART:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @test_row_sum
// CHECK:         %[[X:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [128, 24, 32]
// CHECK:         %[[P0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<128x32xf32>)
// CHECK:         %[[P:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[PART]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<128x24x32xf32>) outs(%[[P0]] : tensor<128x32xf32>)
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[P]] : tensor<128x32xf32>) outs(%[[INIT:.*]] : tensor<128xf32>)
// CHECK:           arith.addf
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @test_row_sum(%x: tensor<128x768xf32>) -> tensor<128xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<128xf32>) -> tensor<128xf32>
  %r = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<128x768xf32>) outs(%init : tensor<128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %sq = arith.mulf %in, %in : f32
    %s = arith.addf %out, %sq : f32
    linalg.yield %s : f32
  } -> tensor<128xf32>
  return %r : tensor<128xf32>
}

// -----

// A long matmul splits chunked: k = r * K1 + k1 with r the outermost loop (the threads keep
// the matmul's order: B read along n), R = 16 for K = 3072 (chains of 192).

// CHECK-LABEL: func.func @test_matmul
// CHECK:         tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [128, 16, 192]
// CHECK:         tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2]] output_shape [16, 192, 96]
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]}{{.*}}outs(%{{.*}} : tensor<16x128x96xf32>)
// CHECK:         linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}} : tensor<16x128x96xf32>) outs(%{{.*}} : tensor<128x96xf32>)
func.func @test_matmul(%a: tensor<128x3072xf32>, %b: tensor<3072x96xf32>, %c: tensor<128x96xf32>) -> tensor<128x96xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<128x3072xf32>, tensor<3072x96xf32>) outs(%c : tensor<128x96xf32>) -> tensor<128x96xf32>
  return %r : tensor<128x96xf32>
}

// -----

// Short reductions, and reductions with many outputs, stay whole.

// CHECK-LABEL: func.func @test_kept
// CHECK-NOT:     tensor.expand_shape
// CHECK:         linalg.matmul
func.func @test_kept(%a: tensor<64x128xf32>, %b: tensor<128x96xf32>, %c: tensor<64x96xf32>) -> tensor<64x96xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x96xf32>) outs(%c : tensor<64x96xf32>) -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}
