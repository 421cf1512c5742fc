// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.reshape(x) -> tensor.collapse_shape to 1-D, then tensor.expand_shape to the target
// (either step is left out when its side is already 1-D).

// CHECK-LABEL: func.func @test_reshape_3d_to_2d
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK:         %[[FLAT:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2{{\]\]}} : tensor<2x3x4xf32> into tensor<24xf32>
// CHECK-NEXT:    %[[R:.*]] = tensor.expand_shape %[[FLAT]] {{\[\[}}0, 1{{\]\]}} output_shape [6, 4] : tensor<24xf32> into tensor<6x4xf32>
// CHECK-NEXT:    return %[[R]] : tensor<6x4xf32>
func.func @test_reshape_3d_to_2d(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 6, 4>} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  return %0 : tensor<6x4xf32>
}

// -----

// The -1 was inferred by the op's verifier: the lowering only sees the result type.

// CHECK-LABEL: func.func @test_reshape_inferred_dim
// CHECK:         tensor.collapse_shape %{{.*}} {{\[\[}}0, 1{{\]\]}} : tensor<4x6xf32> into tensor<24xf32>
// CHECK-NEXT:    tensor.expand_shape %{{.*}} {{\[\[}}0, 1, 2{{\]\]}} output_shape [2, 3, 4] : tensor<24xf32> into tensor<2x3x4xf32>
func.func @test_reshape_inferred_dim(%x: tensor<4x6xf32>) -> tensor<2x3x4xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 2, -1, 4>} : (tensor<4x6xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func.func @test_reshape_flatten
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xi64>)
// CHECK-NEXT:    %[[R:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1{{\]\]}} : tensor<2x3xi64> into tensor<6xi64>
// CHECK-NEXT:    return %[[R]] : tensor<6xi64>
// CHECK-NOT:     tensor.expand_shape
func.func @test_reshape_flatten(%x: tensor<2x3xi64>) -> tensor<6xi64> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: -1>} : (tensor<2x3xi64>) -> tensor<6xi64>
  return %0 : tensor<6xi64>
}

// -----

// CHECK-LABEL: func.func @test_reshape_unflatten
// CHECK-SAME:    (%[[X:.*]]: tensor<6xf32>)
// CHECK-NEXT:    %[[R:.*]] = tensor.expand_shape %[[X]] {{\[\[}}0, 1{{\]\]}} output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
// CHECK-NEXT:    return %[[R]] : tensor<3x2xf32>
func.func @test_reshape_unflatten(%x: tensor<6xf32>) -> tensor<3x2xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 3, 2>} : (tensor<6xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// 0-D tensors: expand_shape / collapse_shape with an empty reassociation.

// CHECK-LABEL: func.func @test_reshape_from_scalar
// CHECK:         %[[ONE:.*]] = tensor.expand_shape %{{.*}} [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK-NEXT:    tensor.expand_shape %[[ONE]] {{\[\[}}0, 1{{\]\]}} output_shape [1, 1] : tensor<1xf32> into tensor<1x1xf32>
func.func @test_reshape_from_scalar(%x: tensor<f32>) -> tensor<1x1xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 1, 1>} : (tensor<f32>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

// CHECK-LABEL: func.func @test_reshape_to_scalar
// CHECK:         %[[ONE:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1{{\]\]}} : tensor<1x1xf32> into tensor<1xf32>
// CHECK-NEXT:    tensor.collapse_shape %[[ONE]] [] : tensor<1xf32> into tensor<f32>
func.func @test_reshape_to_scalar(%x: tensor<1x1xf32>) -> tensor<f32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64>} : (tensor<1x1xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// A reshape feeding a contraction is a tensor.reshape: linalg-fuse-elementwise-ops would fold
// a collapse_shape into the named matmul (a generic then, with no schedule).

// CHECK-LABEL: func.func @test_reshape_into_gemm
// CHECK:         %[[R:.*]] = tensor.reshape %{{.*}}(%{{.*}}) : (tensor<1x1x1x64xf32>, tensor<2xi64>) -> tensor<1x64xf32>
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         linalg.matmul {{.*}} ins(%[[R]], %{{.*}} : tensor<1x64xf32>, tensor<10x64xf32>)
func.func @test_reshape_into_gemm(%x: tensor<1x1x1x64xf32>, %w: tensor<10x64xf32>) -> tensor<1x10xf32> {
  %0 = "dlc.reshape"(%x) {shape = array<i64: 1, 64>} : (tensor<1x1x1x64xf32>) -> tensor<1x64xf32>
  %1 = "dlc.gemm"(%0, %w) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<1x64xf32>, tensor<10x64xf32>) -> tensor<1x10xf32>
  return %1 : tensor<1x10xf32>
}

// -----

// So is a reshape of a contraction's result, also through its elementwise epilogue (GPT-2's
// Conv1D: Gemm + bias -> Reshape [1, S, N]): the fusion pass would propagate an expand_shape
// up through the bias add into the matmul.

// CHECK-LABEL: func.func @test_reshape_of_gemm_epilogue
// CHECK:         linalg.matmul
// CHECK-NOT:     tensor.expand_shape
// CHECK:         tensor.reshape %{{.*}}(%{{.*}}) : (tensor<4x8xf32>, tensor<3xi64>) -> tensor<1x4x8xf32>
func.func @test_reshape_of_gemm_epilogue(%x: tensor<4x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>) -> tensor<1x4x8xf32> {
  %0 = "dlc.gemm"(%x, %w, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x16xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %1 = "dlc.relu"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "dlc.reshape"(%1) {shape = array<i64: 1, 4, 8>} : (tensor<4x8xf32>) -> tensor<1x4x8xf32>
  return %2 : tensor<1x4x8xf32>
}

// -----

// And a reshape reaching a contraction through a transpose (DeBERTa's keys: [1, 12, 512, 64]
// -> [12, 512, 64] -> transposed into the batch matmul): a collapse_shape would propagate
// through the transpose into the matmul, a 4-D naive generic.

// CHECK-LABEL: func.func @test_reshape_transpose_into_batch_matmul
// CHECK:         %[[R:.*]] = tensor.reshape %{{.*}}(%{{.*}}) : (tensor<1x2x6x4xf32>, tensor<3xi64>) -> tensor<2x6x4xf32>
// CHECK-NOT:     tensor.collapse_shape
// CHECK:         %[[T:.*]] = linalg.transpose ins(%[[R]] : tensor<2x6x4xf32>)
// CHECK:         linalg.batch_matmul ins(%{{.*}}, %[[T]] : tensor<2x3x4xf32>, tensor<2x4x6xf32>)
func.func @test_reshape_transpose_into_batch_matmul(%q: tensor<2x3x4xf32>, %k: tensor<1x2x6x4xf32>) -> tensor<2x3x6xf32> {
  %0 = "dlc.reshape"(%k) {shape = array<i64: -1, 6, 4>} : (tensor<1x2x6x4xf32>) -> tensor<2x6x4xf32>
  %1 = "dlc.transpose"(%0) {perm = array<i64: 0, 2, 1>} : (tensor<2x6x4xf32>) -> tensor<2x4x6xf32>
  %2 = "dlc.matmul"(%q, %1) : (tensor<2x3x4xf32>, tensor<2x4x6xf32>) -> tensor<2x3x6xf32>
  return %2 : tensor<2x3x6xf32>
}
