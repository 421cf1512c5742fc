// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.gemm(a, b, c) -> linalg.matmul (transposes in its indexing maps), then one elementwise
// linalg.generic computing alpha * acc + beta * c (left out when alpha = 1 and there is no c).

// CHECK-LABEL: func.func @test_gemm_plain
// CHECK-SAME:    (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3x5xf32>) -> tensor<4x5xf32>
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK-NEXT:    %[[R:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<4x3xf32>, tensor<3x5xf32>) outs(%[[ACC]] : tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    return %[[R]] : tensor<4x5xf32>
// CHECK-NOT:     linalg.generic
func.func @test_gemm_plain(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// transA: A is read as A[k, m].

// CHECK-DAG:   #[[A_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG:   #[[B_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-DAG:   #[[C_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @test_gemm_trans_a
// CHECK-SAME:    (%[[A:.*]]: tensor<3x4xf32>, %[[B:.*]]: tensor<3x5xf32>)
// CHECK:         %[[R:.*]] = linalg.matmul indexing_maps = [#[[A_MAP]], #[[B_MAP]], #[[C_MAP]]] ins(%[[A]], %[[B]] : tensor<3x4xf32>, tensor<3x5xf32>) outs(%{{.*}} : tensor<4x5xf32>) -> tensor<4x5xf32>
// CHECK-NEXT:    return %[[R]]
func.func @test_gemm_trans_a(%a: tensor<3x4xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 1 : i64, transB = 0 : i64} : (tensor<3x4xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// transB: B is read as B[n, k].

// CHECK-DAG:   #[[A_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG:   #[[B_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG:   #[[C_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @test_gemm_trans_b
// CHECK:         linalg.matmul indexing_maps = [#[[A_MAP]], #[[B_MAP]], #[[C_MAP]]] ins(%{{.*}}, %{{.*}} : tensor<4x3xf32>, tensor<5x3xf32>) outs(%{{.*}} : tensor<4x5xf32>)
func.func @test_gemm_trans_b(%a: tensor<4x3xf32>, %b: tensor<5x3xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 1 : i64} : (tensor<4x3xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// CHECK-DAG:   #[[A_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG:   #[[B_MAP:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-LABEL: func.func @test_gemm_trans_both
// CHECK:         linalg.matmul indexing_maps = [#[[A_MAP]], #[[B_MAP]], #{{map[0-9]*}}] ins(%{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<5x3xf32>) outs(%{{.*}} : tensor<4x5xf32>)
func.func @test_gemm_trans_both(%a: tensor<3x4xf32>, %b: tensor<5x3xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 1 : i64, transB = 1 : i64} : (tensor<3x4xf32>, tensor<5x3xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// A bias C of shape [N] with alpha = beta = 1: a broadcasting add, no multiplications.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @test_gemm_bias
// CHECK-SAME:    (%[[A:.*]]: tensor<4x3xf32>, %[[B:.*]]: tensor<3x5xf32>, %[[C:.*]]: tensor<5xf32>)
// CHECK:         %[[MM:.*]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<4x3xf32>, tensor<3x5xf32>)
// CHECK:         %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[MM]], %[[C]] : tensor<4x5xf32>, tensor<5xf32>) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
// CHECK:         return %[[R]]
func.func @test_gemm_bias(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %c: tensor<5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b, %c) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// alpha and beta scale the product and C inside the same generic; C is a full [M, N] tensor.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_gemm_alpha_beta
// CHECK-SAME:    (%{{.*}}: tensor<4x3xf32>, %{{.*}}: tensor<3x5xf32>, %[[C:.*]]: tensor<4x5xf32>)
// CHECK-DAG:     %[[ALPHA:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-DAG:     %[[BETA:.*]] = arith.constant 5.000000e-01 : f32
// CHECK:         %[[MM:.*]] = linalg.matmul
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[MM]], %[[C]] : tensor<4x5xf32>, tensor<4x5xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[AX:.*]] = arith.mulf %[[X]], %[[ALPHA]] : f32
// CHECK-NEXT:      %[[BY:.*]] = arith.mulf %[[Y]], %[[BETA]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[AX]], %[[BY]] : f32
// CHECK-NEXT:      linalg.yield %[[S]] : f32
func.func @test_gemm_alpha_beta(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b, %c) {alpha = 2.0 : f32, beta = 0.5 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// alpha without C: one generic scaling the product.

// CHECK-LABEL: func.func @test_gemm_alpha_no_c
// CHECK-DAG:     %[[ALPHA:.*]] = arith.constant 3.000000e+00 : f32
// CHECK:         %[[MM:.*]] = linalg.matmul
// CHECK:         linalg.generic
// CHECK-SAME:      ins(%[[MM]] : tensor<4x5xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[AX:.*]] = arith.mulf %[[X]], %[[ALPHA]] : f32
// CHECK-NEXT:      linalg.yield %[[AX]] : f32
func.func @test_gemm_alpha_no_c(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b) {alpha = 3.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// beta = 0: C is not read at all.

// CHECK-LABEL: func.func @test_gemm_beta_zero
// CHECK-SAME:    %[[C:[^:]+]]: tensor<4x5xf32>
// CHECK:         %[[R:.*]] = linalg.matmul
// CHECK-NEXT:    return %[[R]]
func.func @test_gemm_beta_zero(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %0 = "dlc.gemm"(%a, %b, %c) {alpha = 1.0 : f32, beta = 0.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

// Integer gemm with a scalar C: arith.addi, the scalar read through an empty map.

// CHECK-DAG:   #[[SCALAR:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @test_gemm_int_scalar_c
// CHECK:         linalg.fill ins(%{{.*}} : i32)
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<3x4xi32>, tensor<4x5xi32>)
// CHECK:         linalg.generic {indexing_maps = [#{{map[0-9]*}}, #[[SCALAR]], #{{map[0-9]*}}]
// CHECK-SAME:      tensor<3x5xi32>, tensor<i32>
// CHECK:           arith.addi
func.func @test_gemm_int_scalar_c(%a: tensor<3x4xi32>, %b: tensor<4x5xi32>, %c: tensor<i32>) -> tensor<3x5xi32> {
  %0 = "dlc.gemm"(%a, %b, %c) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<3x4xi32>, tensor<4x5xi32>, tensor<i32>) -> tensor<3x5xi32>
  return %0 : tensor<3x5xi32>
}
