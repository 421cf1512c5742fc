// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-einsum-matmul)' | FileCheck %s

// Attention scores (q kᵀ per batch and head): the batch letters b, h first, M = i, N = j,
// K = d; B transposed to [b, h, d, j], both reshaped to [B, ., .], one batch matmul, the
// result reshaped back.

// CHECK-LABEL: func.func @test_scores
// CHECK-NOT:     dlc.einsum
// CHECK:         %[[A:.*]] = "dlc.reshape"(%arg0) {shape = array<i64: 32, 49, 16>}
// CHECK:         %[[T:.*]] = "dlc.transpose"(%arg1) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x16x49x16xf32>) -> tensor<2x16x16x49xf32>
// CHECK:         %[[B:.*]] = "dlc.reshape"(%[[T]]) {shape = array<i64: 32, 16, 49>}
// CHECK:         %[[C:.*]] = "dlc.matmul"(%[[A]], %[[B]]) : (tensor<32x49x16xf32>, tensor<32x16x49xf32>) -> tensor<32x49x49xf32>
// CHECK:         %[[Y:.*]] = "dlc.reshape"(%[[C]]) {shape = array<i64: 2, 16, 49, 49>}
// CHECK:         return %[[Y]]
func.func @test_scores(%q: tensor<2x16x49x16xf32>, %k: tensor<2x16x49x16xf32>) -> tensor<2x16x49x49xf32> {
  %0 = "dlc.einsum"(%q, %k) {equation = "bhid,bhjd->bhij"} : (tensor<2x16x49x16xf32>, tensor<2x16x49x16xf32>) -> tensor<2x16x49x49xf32>
  return %0 : tensor<2x16x49x49xf32>
}

// -----

// A plain matrix product is one 2-D matmul; an outer product (no summed letter) and a
// diagonal stay einsums.

// CHECK-LABEL: func.func @test_plain_and_left
// CHECK:         "dlc.matmul"(%arg0, %arg1) : (tensor<8x12xf32>, tensor<12x4xf32>) -> tensor<8x4xf32>
// CHECK:         "dlc.einsum"(%arg2, %arg3) {equation = "i,j->ij"}
// CHECK:         "dlc.einsum"(%arg4, %arg1) {equation = "ii,ij->ij"}
func.func @test_plain_and_left(%a: tensor<8x12xf32>, %b: tensor<12x4xf32>, %u: tensor<8xf32>, %v: tensor<4xf32>, %s: tensor<12x12xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<12x4xf32>) {
  %0 = "dlc.einsum"(%a, %b) {equation = "ik,kj->ij"} : (tensor<8x12xf32>, tensor<12x4xf32>) -> tensor<8x4xf32>
  %1 = "dlc.einsum"(%u, %v) {equation = "i,j->ij"} : (tensor<8xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %2 = "dlc.einsum"(%s, %b) {equation = "ii,ij->ij"} : (tensor<12x12xf32>, tensor<12x4xf32>) -> tensor<12x4xf32>
  return %0, %1, %2 : tensor<8x4xf32>, tensor<8x4xf32>, tensor<12x4xf32>
}
