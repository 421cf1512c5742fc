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
