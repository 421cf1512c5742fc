// The -O2 pipeline schedules a matmul: register-tiled FMAs on 32-lane vectors in the linalg
// stage, LLVM fused multiply-adds at the end, and the result written straight into the
// caller's out-parameter (no memcpy of the result).
// RUN: dlc-opt %s --cpu-target=avx512 -O2 | FileCheck %s --implicit-check-not=llvm.intr.memcpy
// RUN: dlc-opt %s --cpu-target=avx512 -O2 --until=linalg | FileCheck %s --check-prefix=LINALG
// RUN: dlc-opt %s --cpu-target=avx512 -O1 | FileCheck %s --check-prefix=O1

// CHECK-LABEL: llvm.func @test_matmul_o2(
// CHECK-COUNT-8: llvm.intr.fmuladd({{.*}}) : (vector<32xf32>, vector<32xf32>, vector<32xf32>) -> vector<32xf32>
// CHECK:         llvm.return

// LINALG-LABEL: func.func @test_matmul_o2
// LINALG-NOT:     linalg.matmul
// LINALG-COUNT-8: vector.fma {{.*}} : vector<32xf32>

// O1-LABEL: llvm.func @test_matmul_o2(
// O1-NOT:     vector<32xf32>
// O1:         llvm.return
func.func @test_matmul_o2(%a: tensor<16x48xf32>, %b: tensor<48x64xf32>) -> tensor<16x64xf32> attributes {llvm.emit_c_interface} {
  %0 = "dlc.matmul"(%a, %b) : (tensor<16x48xf32>, tensor<48x64xf32>) -> tensor<16x64xf32>
  return %0 : tensor<16x64xf32>
}
