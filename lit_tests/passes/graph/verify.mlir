// The shape rules of every dlc op. dlc-opt checks them right after parsing (as MLIR's own
// verifier runs after parsing); the dlc-verify pass checks the same rules in a pipeline and must
// report the same errors at the same places.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// Valid IR goes through unchanged.

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.add"
// CHECK-NEXT:    "dlc.matmul"
// CHECK-NEXT:    "dlc.transpose"
// CHECK-NEXT:    return
func.func @test_valid(%a: tensor<2x3xf32>, %b: tensor<3xf32>, %w: tensor<3x4xf32>) -> tensor<4x2xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "dlc.matmul"(%0, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  %2 = "dlc.transpose"(%1) {perm = array<i64: 1, 0>} : (tensor<2x4xf32>) -> tensor<4x2xf32>
  return %2 : tensor<4x2xf32>
}

// -----

// ---------------------------------------------------------------- elementwise: broadcasting

func.func @test_add_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.add' op shapes [2x3], [4] are not broadcast-compatible (axis 1)}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_sub_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x1xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.sub' op shapes [2x3], [3x1] are not broadcast-compatible (axis 0)}}
  %0 = "dlc.sub"(%a, %b) : (tensor<2x3xf32>, tensor<3x1xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_mul_element_type_mismatch(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.mul' op operands must have the same element type, got f32, i32}}
  %0 = "dlc.mul"(%a, %b) : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_relu_not_numeric(%a: tensor<2xindex>) -> tensor<2xindex> {
  // expected-error @+1 {{'dlc.relu' op expects a numeric element type, got index}}
  %0 = "dlc.relu"(%a) : (tensor<2xindex>) -> tensor<2xindex>
  return %0 : tensor<2xindex>
}

// -----

// ---------------------------------------------------------------- result types

func.func @test_div_wrong_result_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3x3xf32> {
  // expected-error @+1 {{'dlc.div' op result type tensor<3x3xf32> does not match the inferred type tensor<2x3xf32>}}
  %0 = "dlc.div"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @test_add_wrong_result_element_type(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf16> {
  // expected-error @+1 {{result type tensor<2x3xf16> does not match the inferred type tensor<2x3xf32>}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf16>
  return %0 : tensor<2x3xf16>
}

// -----

func.func @test_constant_wrong_result_type() -> tensor<4xf32> {
  // expected-error @+1 {{'dlc.constant' op result type tensor<4xf32> does not match the inferred type tensor<3xf32>}}
  %0 = "dlc.constant"() {value = dense<1.0> : tensor<3xf32>} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// ---------------------------------------------------------------- matmul

func.func @test_matmul_k_mismatch(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'dlc.matmul' op contracting dimensions differ: [4x3] x [4x5] (3 vs 4)}}
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @test_matmul_1d_k_mismatch(%a: tensor<4xf32>, %b: tensor<3x5xf32>) -> tensor<5xf32> {
  // expected-error @+1 {{contracting dimensions differ: [4] x [3x5] (4 vs 3)}}
  %0 = "dlc.matmul"(%a, %b) : (tensor<4xf32>, tensor<3x5xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @test_matmul_batch_mismatch(%a: tensor<2x4x3xf32>, %b: tensor<3x3x5xf32>) -> tensor<2x4x5xf32> {
  // expected-error @+1 {{'dlc.matmul' op shapes [2], [3] are not broadcast-compatible (axis 0)}}
  %0 = "dlc.matmul"(%a, %b) : (tensor<2x4x3xf32>, tensor<3x3x5xf32>) -> tensor<2x4x5xf32>
  return %0 : tensor<2x4x5xf32>
}

// -----

func.func @test_matmul_scalar_operand(%a: tensor<f32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dlc.matmul' op matmul operands must have rank >= 1}}
  %0 = "dlc.matmul"(%a, %b) : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// ---------------------------------------------------------------- gemm

func.func @test_gemm_not_2d(%a: tensor<2x4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'dlc.gemm' op gemm operands A and B must be 2-D, got ranks 3 and 2}}
  %0 = "dlc.gemm"(%a, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<2x4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// transA makes A [3x4] read as [4x3]: K is 4 against B's 3.
func.func @test_gemm_k_mismatch_trans_a(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'dlc.gemm' op contracting dimensions differ: 4 (A) vs 3 (B)}}
  %0 = "dlc.gemm"(%a, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 1 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @test_gemm_c_not_broadcastable(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'dlc.gemm' op C of shape [4] does not broadcast to [4x5]}}
  %0 = "dlc.gemm"(%a, %b, %c) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<4xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @test_gemm_c_rank_3(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %c: tensor<1x4x5xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'dlc.gemm' op C of shape [1x4x5] does not broadcast to [4x5]}}
  %0 = "dlc.gemm"(%a, %b, %c) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<1x4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @test_gemm_fractional_alpha_on_integers(%a: tensor<4x3xi32>, %b: tensor<3x5xi32>) -> tensor<4x5xi32> {
  // expected-error @+1 {{'dlc.gemm' op alpha must be integers on integer tensors (alpha=0.5, beta=1.0)}}
  %0 = "dlc.gemm"(%a, %b) {alpha = 0.5 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xi32>, tensor<3x5xi32>) -> tensor<4x5xi32>
  return %0 : tensor<4x5xi32>
}

// -----

// ---------------------------------------------------------------- reshape

func.func @test_reshape_element_count(%x: tensor<2x3xf32>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'dlc.reshape' op cannot reshape [2x3] (6 elements) into [4x2] (8 elements)}}
  %0 = "dlc.reshape"(%x) {shape = array<i64: 4, 2>} : (tensor<2x3xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @test_reshape_inferred_dim_does_not_divide(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'dlc.reshape' op cannot reshape [2x3] into [4, -1]}}
  %0 = "dlc.reshape"(%x) {shape = array<i64: 4, -1>} : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @test_reshape_two_inferred_dims(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'dlc.reshape' op invalid target shape [-1, -1]: sizes are >= 0, with at most one -1}}
  %0 = "dlc.reshape"(%x) {shape = array<i64: -1, -1>} : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @test_reshape_negative_size(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{invalid target shape [-2, 3]}}
  %0 = "dlc.reshape"(%x) {shape = array<i64: -2, 3>} : (tensor<2x3xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @test_reshape_wrong_result_type(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'dlc.reshape' op result type tensor<3x2xf32> does not match the inferred type tensor<6xf32>}}
  %0 = "dlc.reshape"(%x) {shape = array<i64: 6>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// ---------------------------------------------------------------- transpose

func.func @test_transpose_repeated_axis(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{'dlc.transpose' op perm [2, 0, 0] is not a permutation of the 3 axes}}
  %0 = "dlc.transpose"(%x) {perm = array<i64: 2, 0, 0>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @test_transpose_perm_too_short(%x: tensor<2x3x4xf32>) -> tensor<4x2x3xf32> {
  // expected-error @+1 {{'dlc.transpose' op perm [1, 0] is not a permutation of the 3 axes}}
  %0 = "dlc.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  return %0 : tensor<4x2x3xf32>
}

// -----

func.func @test_transpose_wrong_result_type(%x: tensor<2x3x4xf32>) -> tensor<4x3x2xf32> {
  // expected-error @+1 {{'dlc.transpose' op result type tensor<4x3x2xf32> does not match the inferred type tensor<4x2x3xf32>}}
  %0 = "dlc.transpose"(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  return %0 : tensor<4x3x2xf32>
}

// -----

// ---------------------------------------------------------------- several errors in one function

// Every invalid op is reported, not only the first.
func.func @test_two_errors(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.add' op shapes [2x3], [4] are not broadcast-compatible}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{'dlc.relu' op result type tensor<3x2xf32> does not match}}
  %1 = "dlc.relu"(%0) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// ---------------------------------------------------------------- checked by IRDL, at parse time

func.func @test_wrong_operand_count(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{op expects exactly 2 operands, but got 1}}
  %0 = "dlc.add"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_missing_attribute(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'dlc.transpose' op attribute "perm" is expected but not provided}}
  %0 = "dlc.transpose"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @test_memref_operand(%x: memref<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{expected base type 'builtin.tensor' but got 'builtin.memref'}}
  %0 = "dlc.relu"(%x) : (memref<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
