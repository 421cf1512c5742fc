// The rules of dlc.unary: a known fn, its number of params, the element kinds it accepts, and
// the result type (the operand's, or bool for the predicates).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.unary"
// CHECK-NEXT:    "dlc.unary"
// CHECK-NEXT:    "dlc.unary"
// CHECK-NEXT:    return
func.func @test_valid(%x: tensor<2x3xf32>, %b: tensor<4xi1>) -> (tensor<2x3xf32>, tensor<2x3xi1>, tensor<4xi1>) {
  %0 = "dlc.unary"(%x) {fn = "selu", params = array<f64: 1.6, 1.05>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = "dlc.unary"(%0) {fn = "isnan", params = array<f64>} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  %2 = "dlc.unary"(%b) {fn = "not", params = array<f64>} : (tensor<4xi1>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xi1>, tensor<4xi1>
}

// -----

func.func @test_unknown_fn(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.unary' op unknown fn 'expm2' (known: abs, acos,}}
  %0 = "dlc.unary"(%x) {fn = "expm2", params = array<f64>} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_missing_params(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.unary' op fn 'hard_sigmoid' takes 2 params (alpha, beta), got 1}}
  %0 = "dlc.unary"(%x) {fn = "hard_sigmoid", params = array<f64: 0.2>} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_extra_params(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.unary' op fn 'exp' takes 0 params (none), got 1}}
  %0 = "dlc.unary"(%x) {fn = "exp", params = array<f64: 1.0>} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_exp_of_integers(%x: tensor<2xi32>) -> tensor<2xi32> {
  // expected-error @+1 {{'dlc.unary' op fn 'exp' expects a float element type, got i32}}
  %0 = "dlc.unary"(%x) {fn = "exp", params = array<f64>} : (tensor<2xi32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @test_neg_of_unsigned(%x: tensor<2xui8>) -> tensor<2xui8> {
  // expected-error @+1 {{'dlc.unary' op fn 'neg' expects a float or signed element type, got ui8}}
  %0 = "dlc.unary"(%x) {fn = "neg", params = array<f64>} : (tensor<2xui8>) -> tensor<2xui8>
  return %0 : tensor<2xui8>
}

// -----

func.func @test_not_of_floats(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.unary' op fn 'not' expects a bool element type, got f32}}
  %0 = "dlc.unary"(%x) {fn = "not", params = array<f64>} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_abs_of_bool(%x: tensor<2xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'dlc.unary' op fn 'abs' expects a float, signed or unsigned element type, got i1}}
  %0 = "dlc.unary"(%x) {fn = "abs", params = array<f64>} : (tensor<2xi1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @test_abs_of_index(%x: tensor<2xindex>) -> tensor<2xindex> {
  // expected-error @+1 {{'dlc.unary' op fn 'abs' expects a float, signed or unsigned element type, got index}}
  %0 = "dlc.unary"(%x) {fn = "abs", params = array<f64>} : (tensor<2xindex>) -> tensor<2xindex>
  return %0 : tensor<2xindex>
}

// -----

func.func @test_isnan_result_not_bool(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.unary' op result type tensor<2xf32> does not match the inferred type tensor<2xi1>}}
  %0 = "dlc.unary"(%x) {fn = "isnan", params = array<f64>} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_wrong_result_shape(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+1 {{'dlc.unary' op result type tensor<3x2xf32> does not match the inferred type tensor<2x3xf32>}}
  %0 = "dlc.unary"(%x) {fn = "tanh", params = array<f64>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @test_missing_fn(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.unary' op attribute "fn" is expected but not provided}}
  %0 = "dlc.unary"(%x) {params = array<f64>} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
