// The shape rules of dlc.recurrence (one direction of an RNN, GRU or LSTM over its input
// projection; dialects/recurrent.py).
// RUN: dlc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @test_valid
// CHECK-NEXT:    "dlc.recurrence"
// CHECK-NEXT:    "dlc.recurrence"
// CHECK-NEXT:    "dlc.recurrence"
func.func @test_valid(%x4: tensor<7x2x20xf32>, %r4: tensor<5x20xf32>, %s2: tensor<2x2x5xf32>,
                      %p: tensor<15xf32>, %x3: tensor<7x2x15xf64>, %r3: tensor<5x15xf64>,
                      %s1: tensor<1x2x5xf64>, %x1: tensor<7x2x5xf64>, %r1: tensor<5x5xf64>) -> tensor<7x2x5xf32> {
  %y, %f = "dlc.recurrence"(%x4, %r4, %s2, %p) {kind = "lstm", reverse = 1, activations = "Sigmoid,Tanh,Tanh", params = array<f64>, clip = array<f64: 3.0>, input_forget = 0} : (tensor<7x2x20xf32>, tensor<5x20xf32>, tensor<2x2x5xf32>, tensor<15xf32>) -> (tensor<7x2x5xf32>, tensor<2x2x5xf32>)
  %gy, %gf = "dlc.recurrence"(%x3, %r3, %s1) {kind = "gru", reverse = 0, activations = "HardSigmoid,ScaledTanh", params = array<f64: 0.2, 0.5, 1.0, 2.0>, clip = array<f64>, input_forget = 0} : (tensor<7x2x15xf64>, tensor<5x15xf64>, tensor<1x2x5xf64>) -> (tensor<7x2x5xf64>, tensor<1x2x5xf64>)
  %ry, %rf = "dlc.recurrence"(%x1, %r1, %s1) {kind = "rnn", reverse = 0, activations = "Relu", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<7x2x5xf64>, tensor<5x5xf64>, tensor<1x2x5xf64>) -> (tensor<7x2x5xf64>, tensor<1x2x5xf64>)
  return %y : tensor<7x2x5xf32>
}

// -----

func.func @test_width(%x: tensor<7x2x16xf32>, %r: tensor<5x16xf32>, %s: tensor<2x2x5xf32>) -> tensor<7x2x5xf32> {
  // expected-error @+1 {{'dlc.recurrence' op recurrence: a lstm of hidden size 5 needs x_gates and weights 20 wide, got 16 and 16}}
  %y, %f = "dlc.recurrence"(%x, %r, %s) {kind = "lstm", reverse = 0, activations = "Sigmoid,Tanh,Tanh", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<7x2x16xf32>, tensor<5x16xf32>, tensor<2x2x5xf32>) -> (tensor<7x2x5xf32>, tensor<2x2x5xf32>)
  return %y : tensor<7x2x5xf32>
}

// -----

func.func @test_states(%x: tensor<7x2x20xf32>, %r: tensor<5x20xf32>, %s: tensor<1x2x5xf32>) -> tensor<7x2x5xf32> {
  // expected-error @+1 {{'dlc.recurrence' op recurrence: initial must be [2x2x5], got [1x2x5]}}
  %y, %f = "dlc.recurrence"(%x, %r, %s) {kind = "lstm", reverse = 0, activations = "Sigmoid,Tanh,Tanh", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<7x2x20xf32>, tensor<5x20xf32>, tensor<1x2x5xf32>) -> (tensor<7x2x5xf32>, tensor<1x2x5xf32>)
  return %y : tensor<7x2x5xf32>
}

// -----

func.func @test_activation(%x: tensor<7x2x5xf32>, %r: tensor<5x5xf32>, %s: tensor<1x2x5xf32>) -> tensor<7x2x5xf32> {
  // expected-error @+1 {{'dlc.recurrence' op recurrence: unknown activation 'Gaussian'}}
  %y, %f = "dlc.recurrence"(%x, %r, %s) {kind = "rnn", reverse = 0, activations = "Gaussian", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<7x2x5xf32>, tensor<5x5xf32>, tensor<1x2x5xf32>) -> (tensor<7x2x5xf32>, tensor<1x2x5xf32>)
  return %y : tensor<7x2x5xf32>
}

// -----

func.func @test_params(%x: tensor<7x2x5xf32>, %r: tensor<5x5xf32>, %s: tensor<1x2x5xf32>) -> tensor<7x2x5xf32> {
  // expected-error @+1 {{'dlc.recurrence' op recurrence: activation LeakyRelu needs 1 parameters}}
  %y, %f = "dlc.recurrence"(%x, %r, %s) {kind = "rnn", reverse = 0, activations = "LeakyRelu", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<7x2x5xf32>, tensor<5x5xf32>, tensor<1x2x5xf32>) -> (tensor<7x2x5xf32>, tensor<1x2x5xf32>)
  return %y : tensor<7x2x5xf32>
}

// -----

func.func @test_extra(%x: tensor<7x2x5xf32>, %r: tensor<5x5xf32>, %s: tensor<1x2x5xf32>, %e: tensor<5xf32>) -> tensor<7x2x5xf32> {
  // expected-error @+1 {{'dlc.recurrence' op recurrence: extra is an LSTM's peepholes [3*H] or a GRU's Rbh [H], got [5] for a rnn}}
  %y, %f = "dlc.recurrence"(%x, %r, %s, %e) {kind = "rnn", reverse = 0, activations = "Tanh", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<7x2x5xf32>, tensor<5x5xf32>, tensor<1x2x5xf32>, tensor<5xf32>) -> (tensor<7x2x5xf32>, tensor<1x2x5xf32>)
  return %y : tensor<7x2x5xf32>
}

// -----

func.func @test_clip(%x: tensor<7x2x5xf32>, %r: tensor<5x5xf32>, %s: tensor<1x2x5xf32>) -> tensor<7x2x5xf32> {
  // expected-error @+1 {{'dlc.recurrence' op recurrence: clip must be [] or one positive value, got [-1.0]}}
  %y, %f = "dlc.recurrence"(%x, %r, %s) {kind = "rnn", reverse = 0, activations = "Tanh", params = array<f64>, clip = array<f64: -1.0>, input_forget = 0} : (tensor<7x2x5xf32>, tensor<5x5xf32>, tensor<1x2x5xf32>) -> (tensor<7x2x5xf32>, tensor<1x2x5xf32>)
  return %y : tensor<7x2x5xf32>
}

// -----

func.func @test_integer(%x: tensor<7x2x5xi32>, %r: tensor<5x5xi32>, %s: tensor<1x2x5xi32>) -> tensor<7x2x5xi32> {
  // expected-error @+1 {{'dlc.recurrence' op recurrence: every operand must have the same float element type}}
  %y, %f = "dlc.recurrence"(%x, %r, %s) {kind = "rnn", reverse = 0, activations = "Tanh", params = array<f64>, clip = array<f64>, input_forget = 0} : (tensor<7x2x5xi32>, tensor<5x5xi32>, tensor<1x2x5xi32>) -> (tensor<7x2x5xi32>, tensor<1x2x5xi32>)
  return %y : tensor<7x2x5xi32>
}
