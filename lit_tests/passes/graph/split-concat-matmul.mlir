// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-split-concat-matmul)' | FileCheck %s

// A decode step's attention: the keys, scaled, transposed and concatenated with the new
// token's, and the values concatenated. Split, the matmuls read the past tensors themselves:
// the scores are concatenated (small), the probabilities sliced, the scale applied to the
// query (the smallest of the query, the keys and the scores).

// CHECK-LABEL: func.func @test_decode_attention
// CHECK-SAME:    (%[[Q:.*]]: tensor<1x4x1x16xf32>, %[[PK:.*]]: tensor<1x4x128x16xf32>, %[[NK:.*]]: tensor<1x4x1x16xf32>, %[[PV:.*]]: tensor<1x4x128x16xf32>, %[[NV:.*]]: tensor<1x4x1x16xf32>)
// CHECK-NOT:     "dlc.concat"(%[[PK]]
// CHECK-NOT:     "dlc.concat"(%[[PV]]
// CHECK:         %[[QS:.*]] = "dlc.mul"(%[[Q]], %{{.*}}) : (tensor<1x4x1x16xf32>, tensor<f32>)
// CHECK:         %[[T:.*]] = "dlc.transpose"(%[[PK]]) {perm = array<i64: 0, 1, 3, 2>}
// CHECK:         %[[S1:.*]] = "dlc.matmul"(%[[QS]], %[[T]]) : (tensor<1x4x1x16xf32>, tensor<1x4x16x128xf32>) -> tensor<1x4x1x128xf32>
// CHECK:         "dlc.concat"({{.*}}) {axis = 3 : i64} : (tensor<1x4x1x128xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x1x129xf32>
// CHECK:         %[[P1:.*]] = "dlc.slice"({{.*}}) {sizes = array<i64: 1, 4, 1, 128>, starts = array<i64: 0, 0, 0, 0>
// CHECK:         "dlc.matmul"(%[[P1]], %[[PV]]) : (tensor<1x4x1x128xf32>, tensor<1x4x128x16xf32>) -> tensor<1x4x1x16xf32>
// CHECK:         "dlc.add"
func.func @test_decode_attention(%q: tensor<1x4x1x16xf32>, %pk: tensor<1x4x128x16xf32>, %nk: tensor<1x4x1x16xf32>, %pv: tensor<1x4x128x16xf32>, %nv: tensor<1x4x1x16xf32>) -> tensor<1x4x1x16xf32> {
  %c = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %k = "dlc.concat"(%pk, %nk) {axis = 2 : i64} : (tensor<1x4x128x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x129x16xf32>
  %ks = "dlc.mul"(%k, %c) : (tensor<1x4x129x16xf32>, tensor<f32>) -> tensor<1x4x129x16xf32>
  %kt = "dlc.transpose"(%ks) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x129x16xf32>) -> tensor<1x4x16x129xf32>
  %s = "dlc.matmul"(%q, %kt) : (tensor<1x4x1x16xf32>, tensor<1x4x16x129xf32>) -> tensor<1x4x1x129xf32>
  %v = "dlc.concat"(%pv, %nv) {axis = 2 : i64} : (tensor<1x4x128x16xf32>, tensor<1x4x1x16xf32>) -> tensor<1x4x129x16xf32>
  %o = "dlc.matmul"(%s, %v) : (tensor<1x4x1x129xf32>, tensor<1x4x129x16xf32>) -> tensor<1x4x1x16xf32>
  return %o : tensor<1x4x1x16xf32>
}

// -----

// A prefill chunk's scaled keys (sdpa's export scales the query and the keys): the keys'
// scale moves to the query, smaller than the keys and the scores; the keys are only
// transposed (no elementwise pass over them).

// CHECK-LABEL: func.func @test_scale_to_query
// CHECK:         %[[T:.*]] = "dlc.transpose"(%arg1)
// CHECK:         %[[QS:.*]] = "dlc.mul"(%arg0, %{{.*}}) : (tensor<1x4x64x16xf32>, tensor<f32>)
// CHECK:         "dlc.matmul"(%[[QS]], %[[T]]) : (tensor<1x4x64x16xf32>, tensor<1x4x16x128xf32>)
// CHECK-NOT:     "dlc.mul"
func.func @test_scale_to_query(%q: tensor<1x4x64x16xf32>, %k: tensor<1x4x128x16xf32>) -> tensor<1x4x64x128xf32> {
  %c = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %kt = "dlc.transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x128x16xf32>) -> tensor<1x4x16x128xf32>
  %ks = "dlc.mul"(%kt, %c) : (tensor<1x4x16x128xf32>, tensor<f32>) -> tensor<1x4x16x128xf32>
  %s = "dlc.matmul"(%q, %ks) : (tensor<1x4x64x16xf32>, tensor<1x4x16x128xf32>) -> tensor<1x4x64x128xf32>
  return %s : tensor<1x4x64x128xf32>
}

// -----

// Negative: a prefill chunk (the scores as large as the keys), a concat with another use.

// CHECK-LABEL: func.func @test_keep
// CHECK:         "dlc.concat"(%arg1, %arg2)
// CHECK:         "dlc.concat"(%arg4, %arg5)
// CHECK:         return
func.func @test_keep(%q: tensor<1x4x64x16xf32>, %pk: tensor<1x4x64x16xf32>, %nk: tensor<1x4x64x16xf32>, %x: tensor<1x4x1x128xf32>, %pv: tensor<1x4x64x16xf32>, %nv: tensor<1x4x64x16xf32>) -> (tensor<1x4x64x128xf32>, tensor<1x4x1x16xf32>, tensor<1x4x128x16xf32>) {
  %k = "dlc.concat"(%pk, %nk) {axis = 2 : i64} : (tensor<1x4x64x16xf32>, tensor<1x4x64x16xf32>) -> tensor<1x4x128x16xf32>
  %kt = "dlc.transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x128x16xf32>) -> tensor<1x4x16x128xf32>
  %s = "dlc.matmul"(%q, %kt) : (tensor<1x4x64x16xf32>, tensor<1x4x16x128xf32>) -> tensor<1x4x64x128xf32>
  %v = "dlc.concat"(%pv, %nv) {axis = 2 : i64} : (tensor<1x4x64x16xf32>, tensor<1x4x64x16xf32>) -> tensor<1x4x128x16xf32>
  %o = "dlc.matmul"(%x, %v) : (tensor<1x4x1x128xf32>, tensor<1x4x128x16xf32>) -> tensor<1x4x1x16xf32>
  return %s, %o, %v : tensor<1x4x64x128xf32>, tensor<1x4x1x16xf32>, tensor<1x4x128x16xf32>
}

// -----

// Grouped-query attention: 4 query heads share 2 key-value heads (repeat_kv: reshape,
// broadcast, reshape). The query heads of a key-value head become rows; the repeated keys are
// never built.

// CHECK-LABEL: func.func @test_grouped_heads
// CHECK-NOT:     "dlc.broadcast"
// CHECK:         %[[R:.*]] = "dlc.reshape"(%arg0) {shape = array<i64: 1, 2, 2, 16>}
// CHECK:         %[[T:.*]] = "dlc.transpose"(%arg1) {perm = array<i64: 0, 1, 3, 2>}
// CHECK:         %[[M:.*]] = "dlc.matmul"(%[[R]], %[[T]]) : (tensor<1x2x2x16xf32>, tensor<1x2x16x128xf32>) -> tensor<1x2x2x128xf32>
// CHECK:         "dlc.reshape"(%[[M]]) {shape = array<i64: 1, 4, 1, 128>}
func.func @test_grouped_heads(%q: tensor<1x4x1x16xf32>, %k: tensor<1x2x128x16xf32>) -> tensor<1x4x1x128xf32> {
  %0 = "dlc.reshape"(%k) {shape = array<i64: 1, 2, 1, 128, 16>} : (tensor<1x2x128x16xf32>) -> tensor<1x2x1x128x16xf32>
  %1 = "dlc.broadcast"(%0) {shape = array<i64: 1, 2, 2, 128, 16>} : (tensor<1x2x1x128x16xf32>) -> tensor<1x2x2x128x16xf32>
  %2 = "dlc.reshape"(%1) {shape = array<i64: 1, 4, 128, 16>} : (tensor<1x2x2x128x16xf32>) -> tensor<1x4x128x16xf32>
  %3 = "dlc.transpose"(%2) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x128x16xf32>) -> tensor<1x4x16x128xf32>
  %4 = "dlc.matmul"(%q, %3) : (tensor<1x4x1x16xf32>, tensor<1x4x16x128xf32>) -> tensor<1x4x1x128xf32>
  return %4 : tensor<1x4x1x128xf32>
}
