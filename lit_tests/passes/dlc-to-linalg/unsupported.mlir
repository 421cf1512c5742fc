// RUN: dlc-opt %s --split-input-file --verify-diagnostics -p 'builtin.module(dlc-to-linalg)'

// The lowering checks every op before it rewrites any, and reports each one it cannot lower
// at the op's location: the pass fails and leaves the IR alone.

func.func @test_dynamic_shape(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'dlc.relu' op has dynamic shapes, which the lowering does not support yet}}
  %0 = "dlc.relu"(%a) : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @test_two_dynamic_ops(%a: tensor<?xf32>, %b: tensor<?xf32>, %c: tensor<4xf32>) -> tensor<?xf32> {
  // A static op is fine; both dynamic ones are reported.
  %s = "dlc.relu"(%c) : (tensor<4xf32>) -> tensor<4xf32>
  // expected-error @+1 {{'dlc.add' op has dynamic shapes}}
  %0 = "dlc.add"(%a, %b) : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  // expected-error @below {{'dlc.relu' op has dynamic shapes}}
  %1 = "dlc.relu"(%0) : (tensor<?xf32>) -> tensor<?xf32>
  return %1 : tensor<?xf32>
}
