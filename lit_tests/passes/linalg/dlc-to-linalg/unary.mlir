// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.unary{fn}(x) -> linalg.generic whose body computes fn on one element

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_unary_exp
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[X]] : tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[IN]] : f32
// CHECK-NEXT:      linalg.yield %[[E]] : f32
// CHECK:         return %[[R]] : tensor<2x3xf32>
func.func @test_unary_exp(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.unary"(%x) {fn = "exp", params = array<f64>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A rank-0 operand: a generic with no loops.

// CHECK-LABEL: func.func @test_unary_round_scalar
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = []}
// CHECK-SAME:      ins(%{{.*}} : tensor<f64>) outs(%{{.*}} : tensor<f64>)
// CHECK:           math.roundeven %{{.*}} : f64
func.func @test_unary_round_scalar(%x: tensor<f64>) -> tensor<f64> {
  %0 = "dlc.unary"(%x) {fn = "round", params = array<f64>} : (tensor<f64>) -> tensor<f64>
  return %0 : tensor<f64>
}

// -----

// f16 is computed in f32 and rounded back.

// CHECK-LABEL: func.func @test_unary_tanh_f16
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f16, %{{[^:]+}}: f16):
// CHECK-NEXT:      %[[W:.*]] = arith.extf %[[IN]] : f16 to f32
// CHECK-NEXT:      %[[T:.*]] = math.tanh %[[W]] : f32
// CHECK-NEXT:      %[[N:.*]] = arith.truncf %[[T]] : f32 to f16
// CHECK-NEXT:      linalg.yield %[[N]] : f16
func.func @test_unary_tanh_f16(%x: tensor<4xf16>) -> tensor<4xf16> {
  %0 = "dlc.unary"(%x) {fn = "tanh", params = array<f64>} : (tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Params become constants of the element type: elu{alpha}(x) = x < 0 ? alpha expm1(x) : x
// (x's side at 0, as ONNX: it matters for alpha nan or inf).

// CHECK-LABEL: func.func @test_unary_elu_alpha
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-DAG:     %[[ALPHA:.*]] = arith.constant 5.000000e-01 : f64
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f64, %{{[^:]+}}: f64):
// CHECK-NEXT:      %[[EM1:.*]] = math.expm1 %[[IN]] : f64
// CHECK-NEXT:      %[[NEG:.*]] = arith.mulf %[[EM1]], %[[ALPHA]] : f64
// CHECK-NEXT:      %[[BELOW:.*]] = arith.cmpf olt, %[[IN]], %[[ZERO]] : f64
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[BELOW]], %[[NEG]], %[[IN]] : f64
// CHECK-NEXT:      linalg.yield %[[R]] : f64
func.func @test_unary_elu_alpha(%x: tensor<4xf64>) -> tensor<4xf64> {
  %0 = "dlc.unary"(%x) {fn = "elu", params = array<f64: 0.5>} : (tensor<4xf64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// sigmoid never overflows: e = exp(-|x|), (x >= 0 ? 1 : e) / (1 + e).

// CHECK-LABEL: func.func @test_unary_sigmoid
// CHECK:         linalg.generic
// CHECK:           %[[A:.*]] = math.absf
// CHECK-NEXT:      %[[N:.*]] = arith.negf %[[A]]
// CHECK-NEXT:      %[[E:.*]] = math.exp %[[N]]
// CHECK-NEXT:      arith.cmpf oge
// CHECK-NEXT:      %[[NUM:.*]] = arith.select
// CHECK-NEXT:      %[[DEN:.*]] = arith.addf %[[E]]
// CHECK-NEXT:      %[[R:.*]] = arith.divf %[[NUM]], %[[DEN]]
// CHECK-NEXT:      linalg.yield %[[R]] : f32
func.func @test_unary_sigmoid(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "dlc.unary"(%x) {fn = "sigmoid", params = array<f64>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// softplus never overflows: max(x, 0) + log1p(exp(-|x|)).

// CHECK-LABEL: func.func @test_unary_softplus
// CHECK:         linalg.generic
// CHECK:           math.exp
// CHECK-NEXT:      %[[L:.*]] = math.log1p
// CHECK-NEXT:      %[[M:.*]] = arith.maximumf
// CHECK-NEXT:      %[[R:.*]] = arith.addf %[[M]], %[[L]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
func.func @test_unary_softplus(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "dlc.unary"(%x) {fn = "softplus", params = array<f64>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @test_unary_hard_sigmoid
// CHECK-DAG:     %[[ALPHA:.*]] = arith.constant 2.000000e-01 : f32
// CHECK-DAG:     %[[BETA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         linalg.generic
// CHECK:           %[[AX:.*]] = arith.mulf %{{.*}}, %[[ALPHA]] : f32
// CHECK-NEXT:      %[[L:.*]] = arith.addf %[[AX]], %[[BETA]] : f32
// CHECK-NEXT:      %[[MIN:.*]] = arith.minimumf %[[L]]
// CHECK-NEXT:      arith.maximumf %[[MIN]]
func.func @test_unary_hard_sigmoid(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "dlc.unary"(%x) {fn = "hard_sigmoid", params = array<f64: 0.2, 0.5>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @test_unary_gelu
// CHECK:         linalg.generic
// CHECK:           math.erf
// CHECK-LABEL: func.func @test_unary_gelu_tanh
// CHECK:         linalg.generic
// CHECK:           math.tanh
func.func @test_unary_gelu(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "dlc.unary"(%x) {fn = "gelu", params = array<f64>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @test_unary_gelu_tanh(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "dlc.unary"(%x) {fn = "gelu_tanh", params = array<f64>} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Predicates give i1, stored as i8 (0/1): isinf{detect_positive=1, detect_negative=0}.

// CHECK-LABEL: func.func @test_unary_isinf_positive
// CHECK-SAME:    (%{{.*}}: tensor<4xf32>) -> tensor<4xi8>
// CHECK-DAG:     %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-DAG:     %[[INIT:.*]] = tensor.empty() : tensor<4xi8>
// CHECK:         linalg.generic
// CHECK-SAME:      outs(%[[INIT]] : tensor<4xi8>)
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f32, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[P:.*]] = arith.cmpf oeq, %[[IN]], %[[INF]] : f32
// CHECK-NEXT:      %[[B:.*]] = arith.extui %[[P]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[B]] : i8
func.func @test_unary_isinf_positive(%x: tensor<4xf32>) -> tensor<4xi1> {
  %0 = "dlc.unary"(%x) {fn = "isinf", params = array<f64: 1.0, 0.0>} : (tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @test_unary_isnan_f16
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f16, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[P:.*]] = arith.cmpf uno, %[[IN]], %[[IN]] : f16
// CHECK-NEXT:      %[[B:.*]] = arith.extui %[[P]] : i1 to i8
func.func @test_unary_isnan_f16(%x: tensor<4xf16>) -> tensor<4xi1> {
  %0 = "dlc.unary"(%x) {fn = "isnan", params = array<f64>} : (tensor<4xf16>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Bool arrives as i8 holding 0/1: not x = x xor 1.

// CHECK-LABEL: func.func @test_unary_not
// CHECK-SAME:    (%{{.*}}: tensor<2x2xi8>) -> tensor<2x2xi8>
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i8
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: i8, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[R:.*]] = arith.xori %[[IN]], %[[ONE]] : i8
// CHECK-NEXT:      linalg.yield %[[R]] : i8
func.func @test_unary_not(%x: tensor<2x2xi1>) -> tensor<2x2xi1> {
  %0 = "dlc.unary"(%x) {fn = "not", params = array<f64>} : (tensor<2x2xi1>) -> tensor<2x2xi1>
  return %0 : tensor<2x2xi1>
}

// -----

// Unsigned is stored signless: bitwise_not x = x xor -1.

// CHECK-LABEL: func.func @test_unary_bitwise_not_ui16
// CHECK-DAG:     %[[ONES:.*]] = arith.constant -1 : i16
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%{{.*}} : tensor<5xi16>)
// CHECK:           arith.xori %{{.*}}, %[[ONES]] : i16
func.func @test_unary_bitwise_not_ui16(%x: tensor<5xui16>) -> tensor<5xui16> {
  %0 = "dlc.unary"(%x) {fn = "bitwise_not", params = array<f64>} : (tensor<5xui16>) -> tensor<5xui16>
  return %0 : tensor<5xui16>
}

// -----

// CHECK-LABEL: func.func @test_unary_abs_int
// CHECK:         linalg.generic
// CHECK:           math.absi %{{.*}} : i32
// CHECK-LABEL: func.func @test_unary_abs_unsigned
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: i8, %{{[^:]+}}: i8):
// CHECK-NEXT:      linalg.yield %[[IN]] : i8
func.func @test_unary_abs_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "dlc.unary"(%x) {fn = "abs", params = array<f64>} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @test_unary_abs_unsigned(%x: tensor<4xui8>) -> tensor<4xui8> {
  %0 = "dlc.unary"(%x) {fn = "abs", params = array<f64>} : (tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// CHECK-LABEL: func.func @test_unary_neg_int
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: i64, %{{[^:]+}}: i64):
// CHECK-NEXT:      %[[R:.*]] = arith.subi %[[ZERO]], %[[IN]] : i64
func.func @test_unary_neg_int(%x: tensor<4xi64>) -> tensor<4xi64> {
  %0 = "dlc.unary"(%x) {fn = "neg", params = array<f64>} : (tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @test_unary_sign_int
// CHECK:         linalg.generic
// CHECK:           arith.cmpi slt
// CHECK:           arith.cmpi sgt
// CHECK-LABEL: func.func @test_unary_sign_unsigned
// CHECK:         linalg.generic
// CHECK:           arith.cmpi ne
func.func @test_unary_sign_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "dlc.unary"(%x) {fn = "sign", params = array<f64>} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
func.func @test_unary_sign_unsigned(%x: tensor<4xui32>) -> tensor<4xui32> {
  %0 = "dlc.unary"(%x) {fn = "sign", params = array<f64>} : (tensor<4xui32>) -> tensor<4xui32>
  return %0 : tensor<4xui32>
}

// -----

// Integer shrink is computed in f64 and truncated back, as ONNX's reference does.

// CHECK-LABEL: func.func @test_unary_shrink_int
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: i32, %{{[^:]+}}: i32):
// CHECK-NEXT:      %[[W:.*]] = arith.sitofp %[[IN]] : i32 to f64
// CHECK:           %[[R:.*]] = arith.fptosi %{{.*}} : f64 to i32
// CHECK-NEXT:      linalg.yield %[[R]] : i32
func.func @test_unary_shrink_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "dlc.unary"(%x) {fn = "shrink", params = array<f64: 1.5, 2.0>} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}
