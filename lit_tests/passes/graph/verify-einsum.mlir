// The shape rules of dlc.einsum, checked after parsing and by the dlc-verify pass.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.einsum"
func.func @test_valid(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x4xf32> {
  %0 = "dlc.einsum"(%a, %b) {equation = "ij,jk"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @test_letter_sizes(%a: tensor<2x3xf32>, %b: tensor<4x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'dlc.einsum' op letter 'j' has sizes 3 and 4}}
  %0 = "dlc.einsum"(%a, %b) {equation = "ij,jk->ik"} : (tensor<2x3xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @test_term_rank(%a: tensor<2x3x4xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'dlc.einsum' op term 'ij' does not match an operand of rank 3}}
  %0 = "dlc.einsum"(%a) {equation = "ij->ji"} : (tensor<2x3x4xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @test_output_letter(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.einsum' op output term 'z' must use distinct letters of the inputs}}
  %0 = "dlc.einsum"(%a) {equation = "ij->z"} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_term_count(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.einsum' op equation 'ij->ij' has 1 input terms for 2 operands}}
  %0 = "dlc.einsum"(%a, %b) {equation = "ij->ij"} : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_ellipsis_broadcast(%a: tensor<2x3x4xf32>, %b: tensor<5x4x2xf32>) -> tensor<2x3x2xf32> {
  // expected-error @+1 {{'dlc.einsum' op shapes [2], [5] are not broadcast-compatible (axis 0)}}
  %0 = "dlc.einsum"(%a, %b) {equation = "...ij,...jk->...ik"} : (tensor<2x3x4xf32>, tensor<5x4x2xf32>) -> tensor<2x3x2xf32>
  return %0 : tensor<2x3x2xf32>
}
