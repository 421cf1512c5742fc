// The named pipeline of each opt level (dlc.passes.pipeline(N), run by `-O N`) takes a dlc
// function all the way to the llvm dialect, with no dlc, linalg, tensor or memref op left.
// At -O2/-O3 the loop nests are kernels of their own (dlc-outline-kernels), called by main.
// RUN: dlc-opt %s -O0 | FileCheck %s --check-prefixes=CHECK,INLINE --implicit-check-not='"dlc.' --implicit-check-not=linalg. --implicit-check-not=tensor. --implicit-check-not=memref. --implicit-check-not=func.func
// RUN: dlc-opt %s -O1 | FileCheck %s --check-prefixes=CHECK,INLINE --implicit-check-not='"dlc.' --implicit-check-not=linalg. --implicit-check-not=tensor. --implicit-check-not=memref. --implicit-check-not=func.func
// RUN: dlc-opt %s -O2 | FileCheck %s --check-prefixes=CHECK,KERNELS --implicit-check-not='"dlc.' --implicit-check-not=linalg. --implicit-check-not=tensor. --implicit-check-not=memref. --implicit-check-not=func.func
// RUN: dlc-opt %s -O3 | FileCheck %s --check-prefixes=CHECK,KERNELS --implicit-check-not='"dlc.' --implicit-check-not=linalg. --implicit-check-not=tensor. --implicit-check-not=memref. --implicit-check-not=func.func

// CHECK:       llvm.func @test_mlp(
// CHECK-SAME:    attributes {llvm.emit_c_interface}
// INLINE:        llvm.fmul
// INLINE:        llvm.fadd
// INLINE:        llvm.intr.maximum
// KERNELS:       llvm.call @test_mlp__kernel0(
// KERNELS:       llvm.call @test_mlp__kernel1(
// KERNELS:       llvm.call @test_mlp__kernel2(
// CHECK:         llvm.return
// CHECK:       llvm.func @_mlir_ciface_test_mlp(
// CHECK:         llvm.call @test_mlp(
// KERNELS:     llvm.func internal @test_mlp__kernel0(
// KERNELS:     llvm.func internal @test_mlp__kernel1(
// KERNELS:       llvm.fmul
// KERNELS:       llvm.fadd
// KERNELS:     llvm.func internal @test_mlp__kernel2(
// KERNELS:       llvm.fadd
// KERNELS:       llvm.intr.maximum
// KERNELS:       llvm.return
func.func @test_mlp(%x: tensor<1x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<1x3xf32> attributes {llvm.emit_c_interface} {
  %0 = "dlc.gemm"(%x, %w, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<1x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %1 = "dlc.relu"(%0) : (tensor<1x3xf32>) -> tensor<1x3xf32>
  return %1 : tensor<1x3xf32>
}
