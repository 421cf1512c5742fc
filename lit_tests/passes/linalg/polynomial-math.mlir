// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-polynomial-math)' | FileCheck %s

// exp(x) -> polynomial, 2^n in the exponent bits, overflow to +inf and underflow to 0
// (no math.exp left: no libm call)

// Each multiply-add is a pair marked contract (one FMA), n clamped by compare-and-select
// (x86's vminps / vmaxps; minnumf / maxnumf took two instructions more each).

// CHECK-LABEL: func.func @test_exp
// CHECK-NOT:     math.exp
// CHECK:         %[[P:.*]] = arith.mulf %arg0, {{.*}} fastmath<contract> : f32
// CHECK:         %[[S:.*]] = arith.addf %[[P]], {{.*}} fastmath<contract> : f32
// CHECK:         %[[N:.*]] = math.floor %[[S]]
// CHECK-NOT:     arith.minnumf
// CHECK-NOT:     arith.maxnumf
// CHECK:         arith.cmpf olt, %[[N]]
// CHECK:         arith.mulf {{.*}} fastmath<contract> : f32
// CHECK:         arith.fptosi {{.*}} : f32 to i32
// CHECK:         arith.shli
// CHECK:         arith.bitcast {{.*}} : i32 to f32
// CHECK:         arith.select
// CHECK:         arith.select
func.func @test_exp(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// -----

// Vectors too (splat constants), tanh and erf included.

// CHECK-LABEL: func.func @test_vector_tanh_erf
// CHECK-NOT:     math.tanh
// CHECK-NOT:     math.erf
// CHECK:         arith.bitcast {{.*}} : vector<16xi32> to vector<16xf32>
// CHECK:         math.copysign {{.*}} : vector<16xf32>
// CHECK:         arith.divf {{.*}} : vector<16xf32>
func.func @test_vector_tanh_erf(%x: vector<16xf32>) -> (vector<16xf32>, vector<16xf32>) {
  %0 = math.tanh %x : vector<16xf32>
  %1 = math.erf %x : vector<16xf32>
  return %0, %1 : vector<16xf32>, vector<16xf32>
}

// -----

// Other element types keep the math op (and its libm call).

// CHECK-LABEL: func.func @test_f64_is_kept
// CHECK:         math.exp {{.*}} : f64
func.func @test_f64_is_kept(%x: f64) -> f64 {
  %0 = math.exp %x : f64
  return %0 : f64
}
