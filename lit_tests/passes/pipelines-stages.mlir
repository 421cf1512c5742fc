// `-O N --until STAGE` cuts the named pipeline after a stage (dlc.passes.pipeline(N, until)).
// RUN: dlc-opt %s -O2 --until dlc --dump-pass-pipeline 2>%t.pipeline | FileCheck %s --check-prefix=DLC
// RUN: FileCheck %s --check-prefix=PIPELINE < %t.pipeline
// RUN: dlc-opt %s -O2 --until linalg | FileCheck %s --check-prefix=LINALG
// RUN: dlc-opt %s -O2 --until bufferized | FileCheck %s --check-prefix=BUFFERIZED

// PIPELINE: builtin.module(dlc-verify,dlc-eliminate-nops,{{.*}},dlc-fuse-batchnorm,dlc-conv3d-as-2d,dlc-fuse-matmul-add,{{.*}},dlc-canonicalize)

// After "dlc": the identity transpose is folded, the rest is still dlc.
// DLC-LABEL: func.func @test_mlp
// DLC-NOT:     dlc.transpose
// DLC:         "dlc.gemm"
// DLC-NEXT:    "dlc.relu"

// After "linalg": gemm lowered to a matmul, its bias add fused with the relu into one generic.
// LINALG-LABEL: func.func @test_mlp
// LINALG-NOT:     "dlc.
// LINALG:         linalg.matmul
// LINALG:         linalg.generic
// LINALG:           arith.addf
// LINALG-NEXT:      arith.maximumf
// LINALG-NOT:     linalg.generic

// After "bufferized": memrefs, and the result is a caller-allocated out-parameter.
// BUFFERIZED-LABEL: func.func @test_mlp
// BUFFERIZED-SAME:    (%{{.*}}: memref<1x4xf32>, %{{.*}}: memref<4x3xf32>, %{{.*}}: memref<3xf32>, %[[OUT:.*]]: memref<1x3xf32>)
// BUFFERIZED-NOT:     tensor<
// BUFFERIZED:         linalg.matmul ins(%{{.*}}, %{{.*}} : memref<1x4xf32>, memref<4x3xf32>) outs(%[[OUT]] : memref<1x3xf32>)
// BUFFERIZED:         return{{$}}
func.func @test_mlp(%x: tensor<1x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) -> tensor<1x3xf32> attributes {llvm.emit_c_interface} {
  %t = "dlc.transpose"(%w) {perm = array<i64: 0, 1>} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %0 = "dlc.gemm"(%x, %t, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<1x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<1x3xf32>
  %1 = "dlc.relu"(%0) : (tensor<1x3xf32>) -> tensor<1x3xf32>
  return %1 : tensor<1x3xf32>
}
