// The shape and type rules of dlc.binary, dlc.compare, dlc.select and dlc.cast, checked after
// parsing by dlc-opt and by the dlc-verify pass (same errors at the same places).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s
// RUN: dlc-opt %s --split-input-file --verify-diagnostics --no-dlc-verify -p 'builtin.module(dlc-verify)' | FileCheck %s

// Valid IR goes through unchanged.

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.binary"
// CHECK-NEXT:    "dlc.compare"
// CHECK-NEXT:    "dlc.select"
// CHECK-NEXT:    "dlc.cast"
// CHECK-NEXT:    return
func.func @test_valid(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xi1> {
  %0 = "dlc.binary"(%a, %b) {fn = "pow"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = "dlc.compare"(%0, %b) {fn = "le"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %2 = "dlc.select"(%1, %0, %b) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %3 = "dlc.cast"(%2) {to = i1} : (tensor<2x3xf32>) -> tensor<2x3xi1>
  return %3 : tensor<2x3xi1>
}

// -----

// ---------------------------------------------------------------- dlc.binary

func.func @test_binary_unknown_fn(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.binary' op unknown fn 'atan2'; expected one of pow, max, min, mod, fmod, shl, shr, and, or, xor}}
  %0 = "dlc.binary"(%a, %b) {fn = "atan2"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_binary_broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.binary' op shapes [2x3], [2] are not broadcast-compatible (axis 1)}}
  %0 = "dlc.binary"(%a, %b) {fn = "max"} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_binary_element_type_mismatch(%a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.binary' op operands must have the same element type, got f32, i64}}
  %0 = "dlc.binary"(%a, %b) {fn = "pow"} : (tensor<2xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_binary_shift_on_floats(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.binary' op fn 'shl' expects an integer (not bool) element type, got f32}}
  %0 = "dlc.binary"(%a, %b) {fn = "shl"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_binary_and_on_floats(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.binary' op fn 'and' expects an integer or bool element type, got f32}}
  %0 = "dlc.binary"(%a, %b) {fn = "and"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_binary_max_on_bool(%a: tensor<2xi1>, %b: tensor<2xi1>) -> tensor<2xi1> {
  // expected-error @+1 {{'dlc.binary' op fn 'max' expects a numeric (float or integer) element type, got i1}}
  %0 = "dlc.binary"(%a, %b) {fn = "max"} : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @test_binary_wrong_result_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{'dlc.binary' op result type tensor<3xf32> does not match the inferred type tensor<2x3xf32>}}
  %0 = "dlc.binary"(%a, %b) {fn = "min"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @test_binary_missing_fn(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.binary' op attribute "fn" is expected but not provided}}
  %0 = "dlc.binary"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// ---------------------------------------------------------------- dlc.compare

func.func @test_compare_result_not_bool(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.compare' op result type tensor<2xf32> does not match the inferred type tensor<2xi1>}}
  %0 = "dlc.compare"(%a, %b) {fn = "lt"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_compare_unknown_fn(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xi1> {
  // expected-error @+1 {{'dlc.compare' op unknown fn 'lessthan'; expected one of eq, ne, lt, le, gt, ge}}
  %0 = "dlc.compare"(%a, %b) {fn = "lessthan"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @test_compare_element_type_mismatch(%a: tensor<2xi32>, %b: tensor<2xi64>) -> tensor<2xi1> {
  // expected-error @+1 {{'dlc.compare' op operands must have the same element type, got i32, i64}}
  %0 = "dlc.compare"(%a, %b) {fn = "eq"} : (tensor<2xi32>, tensor<2xi64>) -> tensor<2xi1>
  return %0 : tensor<2xi1>
}

// -----

func.func @test_compare_broadcast_mismatch(%a: tensor<4x2xf32>, %b: tensor<4xf32>) -> tensor<4x2xi1> {
  // expected-error @+1 {{'dlc.compare' op shapes [4x2], [4] are not broadcast-compatible (axis 1)}}
  %0 = "dlc.compare"(%a, %b) {fn = "gt"} : (tensor<4x2xf32>, tensor<4xf32>) -> tensor<4x2xi1>
  return %0 : tensor<4x2xi1>
}

// -----

// ---------------------------------------------------------------- dlc.select

func.func @test_select_condition_not_bool(%c: tensor<2xf32>, %a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.select' op condition must be a bool (i1) tensor, got f32}}
  %0 = "dlc.select"(%c, %a, %b) : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_select_branch_types_differ(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.select' op operands must have the same element type, got f32, f16}}
  %0 = "dlc.select"(%c, %a, %b) : (tensor<2xi1>, tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_select_condition_does_not_broadcast(%c: tensor<3xi1>, %a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'dlc.select' op shapes [3], [2], [2] are not broadcast-compatible (axis 0)}}
  %0 = "dlc.select"(%c, %a, %b) : (tensor<3xi1>, tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @test_select_operand_count(%c: tensor<2xi1>, %a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{op expects exactly 3 operands, but got 2}}
  %0 = "dlc.select"(%c, %a) : (tensor<2xi1>, tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// ---------------------------------------------------------------- dlc.cast

func.func @test_cast_result_not_to(%a: tensor<2xf32>) -> tensor<2xi32> {
  // expected-error @+1 {{'dlc.cast' op result type tensor<2xi32> does not match the inferred type tensor<2xi64>}}
  %0 = "dlc.cast"(%a) {to = i64} : (tensor<2xf32>) -> tensor<2xi32>
  return %0 : tensor<2xi32>
}

// -----

func.func @test_cast_to_index(%a: tensor<2xf32>) -> tensor<2xindex> {
  // expected-error @+1 {{'dlc.cast' op cannot cast to index: float, integer or bool expected}}
  %0 = "dlc.cast"(%a) {to = index} : (tensor<2xf32>) -> tensor<2xindex>
  return %0 : tensor<2xindex>
}

// -----

func.func @test_cast_shape_changes(%a: tensor<2x3xf32>) -> tensor<6xf16> {
  // expected-error @+1 {{'dlc.cast' op result type tensor<6xf16> does not match the inferred type tensor<2x3xf16>}}
  %0 = "dlc.cast"(%a) {to = f16} : (tensor<2x3xf32>) -> tensor<6xf16>
  return %0 : tensor<6xf16>
}
