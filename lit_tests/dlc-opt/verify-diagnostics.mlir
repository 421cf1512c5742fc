// --verify-diagnostics: every diagnostic must be expected and every expectation met, as in
// mlir-opt. This file exercises each way of writing an expectation; all of them match.
// RUN: dlc-opt %s --split-input-file --verify-diagnostics

func.func @test_offset_plus(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{not broadcast-compatible}}

  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_offset_minus(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>

  // expected-error @-2 {{not broadcast-compatible}}
  return %0 : tensor<2x3xf32>
}

// -----

func.func @test_above(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  // expected-error @above {{not broadcast-compatible}}
  return %0 : tensor<2x3xf32>
}

// -----

// @below applies to the next line that holds no expectation.
func.func @test_below(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @below {{'dlc.add' op shapes [2x3], [4]}}
  // expected-error @below {{'dlc.relu' op result type}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32> %1 = "dlc.relu"(%0) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// An expectation on the line of the op itself.
func.func @test_same_line(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32> // expected-error {{not broadcast-compatible}}
  return %0 : tensor<2x3xf32>
}

// -----

// Two ops on one line, two errors: two expectations on one comment line.
func.func @test_two_on_one_line(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'dlc.add' op shapes}} expected-error @+1 {{'dlc.relu' op result type}}
  %0 = "dlc.add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32> %1 = "dlc.relu"(%0) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// -re: literal text with {{regex}} parts.
func.func @test_regex(%a: tensor<4x3xf32>, %b: tensor<4x5xf32>) -> tensor<4x5xf32> {
  // expected-error-re @+1 {{contracting dimensions differ: [{{[0-9x]+}}] x [4x5] ({{[0-9]+}} vs 4)}}
  %0 = "dlc.matmul"(%a, %b) : (tensor<4x3xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// Notes are diagnostics too: MLIR's "previously used here" note points at the first use.
func.func @test_note(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-note @+1 {{previously used here with type 'tensor<2xf32>'}}
  %0 = "dlc.relu"(%1) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error @+1 {{definition of SSA value '%1#0' has type 'tensor<3xf32>'}}
  %1 = "dlc.relu"(%a) : (tensor<2xf32>) -> tensor<3xf32>
  return %0 : tensor<2xf32>
}

// -----

// A diagnostic without a file position (an unknown or name-only location) is expected @unknown.
func.func @test_unknown_location(%a: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error @unknown {{'dlc.relu' op result type tensor<3xf32> does not match}}
  %0 = "dlc.relu"(%a) : (tensor<2xf32>) -> tensor<3xf32> loc(unknown)
  // expected-error @unknown {{'dlc.relu' op result type tensor<4xf32> does not match}}
  %1 = "dlc.relu"(%a) : (tensor<2xf32>) -> tensor<4xf32> loc("node_7")
  return %a : tensor<2xf32>
}

// -----

// A chunk without diagnostics and without expectations passes.
func.func @test_valid(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}
