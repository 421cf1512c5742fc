// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// Every dlc op is gone after the lowering.
// LOWERED-NOT: "dlc.

// dlc.constant {value} -> arith.constant {value}

// CHECK-LABEL: func.func @test_constant_f32
// CHECK-NEXT:    %[[CST:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-NEXT:    return %[[CST]] : tensor<3xf32>
func.func @test_constant_f32() -> tensor<3xf32> {
  %0 = "dlc.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @test_constant_splat_i64
// CHECK-NEXT:    %[[CST:.*]] = arith.constant dense<7> : tensor<2x2xi64>
// CHECK-NEXT:    return %[[CST]] : tensor<2x2xi64>
func.func @test_constant_splat_i64() -> tensor<2x2xi64> {
  %0 = "dlc.constant"() {value = dense<7> : tensor<2x2xi64>} : () -> tensor<2x2xi64>
  return %0 : tensor<2x2xi64>
}

// -----

// CHECK-LABEL: func.func @test_constant_scalar
// CHECK-NEXT:    %[[CST:.*]] = arith.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    return %[[CST]] : tensor<f32>
func.func @test_constant_scalar() -> tensor<f32> {
  %0 = "dlc.constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  return %0 : tensor<f32>
}
