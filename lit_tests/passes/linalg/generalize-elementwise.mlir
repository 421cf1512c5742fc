// RUN: dlc-opt %s -p 'builtin.module(dlc-generalize-elementwise)' | FileCheck %s
// RUN: dlc-opt %s -p 'builtin.module(dlc-generalize-elementwise,func.func(linalg-fuse-elementwise-ops))' | FileCheck %s --check-prefix=FUSED

// Named elementwise ops become generics (which linalg-fuse-elementwise-ops then fuses into one);
// the matmul stays named for its schedule.

// CHECK-LABEL: func.func @test_residual
// CHECK:         linalg.matmul
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<4x8xf32>)
// CHECK:           arith.addf
// CHECK:         linalg.generic
// CHECK:           arith.maximumf
// CHECK-NOT:     linalg.add
// CHECK-NOT:     linalg.max

// FUSED-LABEL: func.func @test_residual
// FUSED:         linalg.matmul
// FUSED:         linalg.generic
// FUSED-NEXT:    ^bb0
// FUSED-NEXT:      arith.addf
// FUSED-NEXT:      arith.maximumf
// FUSED-NEXT:      linalg.yield
// FUSED-NOT:     linalg.generic
func.func @test_residual(%a: tensor<4x6xf32>, %b: tensor<6x8xf32>, %r: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x6xf32>, tensor<6x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = linalg.add ins(%m, %r : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = linalg.max ins(%0, %z : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
