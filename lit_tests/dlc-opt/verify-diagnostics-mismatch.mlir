// --verify-diagnostics fails on an unexpected diagnostic and on an unmet expectation, and says
// which, at the right place.
// RUN: not dlc-opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s

// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 4]]:8: error: unexpected error: 'dlc.add' op shapes [2x3], [4] are not broadcast-compatible (axis 1)
// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:6: error: expected error "this text is not in the message" was not produced
func.func @test_wrong_text(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{this text is not in the message}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:6: error: expected error "not broadcast-compatible" was not produced
func.func @test_nothing_emitted(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{not broadcast-compatible}}
  %0 = "dlc.relu"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// The expectation names the wrong line.
// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 4]]:8: error: unexpected error: 'dlc.add' op shapes
// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:6: error: expected error "not broadcast-compatible" was not produced
func.func @test_wrong_line(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{not broadcast-compatible}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// The severity must match too.
// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 4]]:8: error: unexpected error: 'dlc.add' op shapes
// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 2]]:6: error: expected warning "not broadcast-compatible" was not produced
func.func @test_wrong_severity(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-warning @+1 {{not broadcast-compatible}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// One expectation matches one diagnostic: the second error on the line is unexpected.
// CHECK: verify-diagnostics-mismatch.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error: unexpected error: 'dlc.relu' op result type
func.func @test_one_each(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{op}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32> %1 = "dlc.relu"(%0) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A chunk where everything matches contributes nothing.
// CHECK-NOT: error
func.func @test_all_good(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{not broadcast-compatible}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}
