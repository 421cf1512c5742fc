// RUN: dlc-opt %s -p 'builtin.module(dlc-to-linalg,canonicalize,cse)' | FileCheck %s

// A function with a dynamic size: every `?` is that one size, read once at the entry
// (tensor.dim of the first argument that has it) and given to every tensor the ops build.

// CHECK-LABEL: func.func @test_rows
// CHECK-SAME:    (%[[X:.*]]: tensor<?x64xf32>, %[[Z:.*]]: tensor<?x32xf32>)
// CHECK:         %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x64xf32>
// CHECK:         %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x32xf32>
// CHECK:         %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x32xf32>)
// CHECK:         linalg.matmul ins(%[[X]], %{{.*}} : tensor<?x64xf32>, tensor<64x32xf32>) outs(%[[F]] : tensor<?x32xf32>)
// CHECK:         linalg.generic
// CHECK-SAME:      outs(%[[E]] : tensor<?x32xf32>)
// CHECK-NOT:     tensor.dim
func.func @test_rows(%x: tensor<?x64xf32>, %z: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %w = "dlc.constant"() {value = dense<0.5> : tensor<64x32xf32>} : () -> tensor<64x32xf32>
  %m = "dlc.matmul"(%x, %w) : (tensor<?x64xf32>, tensor<64x32xf32>) -> tensor<?x32xf32>
  %a = "dlc.add"(%m, %z) : (tensor<?x32xf32>, tensor<?x32xf32>) -> tensor<?x32xf32>
  %r = "dlc.relu"(%a) : (tensor<?x32xf32>) -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// A matmul over leading batch axes: the rows flatten to [?, K] by a reshape whose shape is
// built from the size.
// CHECK-LABEL: func.func @test_flattened
// CHECK:         %[[N:.*]] = tensor.dim %{{.*}}, %{{.*}} : tensor<1x?x8xf32>
// CHECK:         %[[I:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK:         %[[S:.*]] = tensor.from_elements %[[I]], %{{.*}} : tensor<2xi64>
// CHECK:         tensor.reshape %{{.*}}(%[[S]]) : (tensor<1x?x8xf32>, tensor<2xi64>) -> tensor<?x8xf32>
// CHECK:         linalg.matmul
func.func @test_flattened(%x: tensor<1x?x8xf32>) -> tensor<1x?x4xf32> {
  %w = "dlc.constant"() {value = dense<0.5> : tensor<8x4xf32>} : () -> tensor<8x4xf32>
  %m = "dlc.matmul"(%x, %w) : (tensor<1x?x8xf32>, tensor<8x4xf32>) -> tensor<1x?x4xf32>
  return %m : tensor<1x?x4xf32>
}

// A reshape of a dynamic size that no contraction reads: its dimensions group by size (every
// `?` the one size), so a slice of the fused q/k/v product splits its last axis into heads by
// an expand_shape (a view of the slice), and the heads merge back by a collapse_shape; a
// regrouping that is neither collapses, then expands.
// CHECK-LABEL: func.func @test_reshape_groups
// CHECK-SAME:    (%[[X:.*]]: tensor<1x?x96xf32>, %[[Y:.*]]: tensor<1x?x2x16xf32>, %[[Z:.*]]: tensor<?x4x6xf32>)
// CHECK:         %[[N:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<1x?x96xf32>
// CHECK:         %[[Q:.*]] = tensor.extract_slice %[[X]][0, 0, 32] [1, %[[N]], 32] [1, 1, 1]
// CHECK:         tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2, 3]] output_shape [1, %[[N]], 2, 16] : tensor<1x?x32xf32> into tensor<1x?x2x16xf32>
// CHECK:         tensor.collapse_shape %[[Y]] {{\[}}[0], [1], [2, 3]] : tensor<1x?x2x16xf32> into tensor<1x?x32xf32>
// CHECK:         %[[FLAT:.*]] = tensor.collapse_shape %[[Z]] {{\[}}[0], [1, 2]] : tensor<?x4x6xf32> into tensor<?x24xf32>
// CHECK:         tensor.expand_shape %[[FLAT]] {{\[}}[0], [1, 2]] output_shape [%[[N]], 6, 4] : tensor<?x24xf32> into tensor<?x6x4xf32>
// CHECK-NOT:     tensor.reshape
func.func @test_reshape_groups(%x: tensor<1x?x96xf32>, %y: tensor<1x?x2x16xf32>, %z: tensor<?x4x6xf32>) -> (tensor<1x?x2x16xf32>, tensor<1x?x32xf32>, tensor<?x6x4xf32>) {
  %q = "dlc.slice"(%x) {sizes = array<i64: 1, -9223372036854775808, 32>, starts = array<i64: 0, 0, 32>, steps = array<i64: 1, 1, 1>} : (tensor<1x?x96xf32>) -> tensor<1x?x32xf32>
  %h = "dlc.reshape"(%q) {shape = array<i64: 1, -9223372036854775808, 2, 16>} : (tensor<1x?x32xf32>) -> tensor<1x?x2x16xf32>
  %m = "dlc.reshape"(%y) {shape = array<i64: 1, -9223372036854775808, 32>} : (tensor<1x?x2x16xf32>) -> tensor<1x?x32xf32>
  %t = "dlc.reshape"(%z) {shape = array<i64: -9223372036854775808, 6, 4>} : (tensor<?x4x6xf32>) -> tensor<?x6x4xf32>
  return %h, %m, %t : tensor<1x?x2x16xf32>, tensor<1x?x32xf32>, tensor<?x6x4xf32>
}
