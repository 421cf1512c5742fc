// dlc-schedule fuses the elementwise epilogue (bias + relu) and the accumulator's fill into
// the outer tile loop of the matmul: one scf.forall whose body fills the output tile, runs the
// register-tiled FMAs and applies the epilogue to the same tile. 256x1024 is tiled 128x512
// (2 x 2 iterations). A second consumer of the matmul result prevents the fusion. One
// `transform.structured.fuse` builds the forall when it would fuse exactly the fill, the matmul
// and the epilogue; when an operand comes from another tileable op (the transpose of the last
// case), the forall is built op by op and that op stays outside it.
// RUN: dlc-opt %s -p 'builtin.module(dlc-schedule{target=avx512})' --split-input-file | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @test_matmul_bias_relu
// CHECK:         scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (256, 1024) step (128, 512)
// CHECK:           vector.transfer_write {{.*}} : vector<64xf32>
// CHECK:           vector.fma {{.*}} : vector<32xf32>
// CHECK:           arith.maximumf {{.*}} : vector<64xf32>
// CHECK:           scf.forall.in_parallel
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     linalg.matmul
func.func @test_matmul_bias_relu(%a: tensor<256x64xf32>, %b: tensor<64x1024xf32>, %bias: tensor<1024xf32>) -> tensor<256x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x1024xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x1024xf32>) outs(%acc : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<256x1024xf32>, tensor<1024xf32>) outs(%e : tensor<256x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<256x1024xf32>
  return %r : tensor<256x1024xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @test_matmul_result_used_twice
// CHECK:         scf.forall
// CHECK-NOT:       arith.maximumf
// CHECK:           scf.forall.in_parallel
// CHECK:         arith.maximumf
func.func @test_matmul_result_used_twice(%a: tensor<256x64xf32>, %b: tensor<64x1024xf32>) -> (tensor<256x1024xf32>, tensor<256x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x1024xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x1024xf32>) outs(%acc : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm : tensor<256x1024xf32>) outs(%e : tensor<256x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<256x1024xf32>
  return %r, %mm : tensor<256x1024xf32>, tensor<256x1024xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
// The transpose feeding the matmul is not fused into its forall: scheduled on its own before
// it, in 8 x 8 vector blocks (codegen/transpose.py).
// CHECK-LABEL: func.func @test_matmul_of_a_transpose
// CHECK:         vector.transpose {{.*}} : vector<8x8xf32> to vector<8x8xf32>
// CHECK:         scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (256, 1024) step (128, 512)
// CHECK-NOT:       linalg.transpose
// CHECK:           vector.fma {{.*}} : vector<32xf32>
// CHECK:           arith.maximumf {{.*}} : vector<64xf32>
// CHECK:           scf.forall.in_parallel
func.func @test_matmul_of_a_transpose(%at: tensor<64x256xf32>, %b: tensor<64x1024xf32>, %bias: tensor<1024xf32>) -> tensor<256x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<256x64xf32>
  %a = linalg.transpose ins(%at : tensor<64x256xf32>) outs(%ea : tensor<256x64xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<256x1024xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x1024xf32>) outs(%acc : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<256x1024xf32>, tensor<1024xf32>) outs(%e : tensor<256x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<256x1024xf32>
  return %r : tensor<256x1024xf32>
}

// -----

// The epilogue updates the contraction's result in place (`write_in_place`: the generic takes
// the matmul's result as its destination), so that after bufferization no tile is copied into
// a fresh buffer in each forall iteration. Before, the fill and the epilogue both wrote the
// same destination slice and one-shot bufferization allocated and copied every tile.
// RUN: dlc-opt %s -p 'builtin.module(dlc-schedule{target=avx512},eliminate-empty-tensors,dlc-distinct-results,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},canonicalize,cse)' --split-input-file | FileCheck %s --check-prefix=BUF
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
// BUF-LABEL: func.func @test_epilogue_in_place
// BUF:         memref.alloc() {{.*}} : memref<256x1024xf32>
// BUF:         scf.forall
// BUF-NOT:       memref.alloc
// BUF:           arith.maximumf {{.*}} : vector<64xf32>
// BUF:         return
func.func @test_epilogue_in_place(%a: tensor<256x64xf32>, %b: tensor<64x1024xf32>, %bias: tensor<1024xf32>) -> tensor<256x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x1024xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x1024xf32>) outs(%acc : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %r = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %bias : tensor<256x1024xf32>, tensor<1024xf32>) outs(%e : tensor<256x1024xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.maximumf %s, %zero : f32
    linalg.yield %m : f32
  } -> tensor<256x1024xf32>
  return %r : tensor<256x1024xf32>
}

// -----

// Two matmuls whose accumulators CSE merged into one zero fill: the fill is cloned into each
// forall (before, it stayed a whole-tensor fill whose buffer bufferization copied per matmul).
// CHECK-LABEL: func.func @test_shared_fill
// CHECK-NOT:     linalg.fill
// CHECK:         scf.forall
// CHECK:           vector.transfer_write {{.*}} : vector<64xf32>
// CHECK:           vector.fma
// CHECK:         scf.forall
// CHECK:           vector.transfer_write {{.*}} : vector<64xf32>
// CHECK:           vector.fma
// CHECK-NOT:     linalg.fill
func.func @test_shared_fill(%a: tensor<256x64xf32>, %b: tensor<64x1024xf32>, %c: tensor<64x1024xf32>) -> (tensor<256x1024xf32>, tensor<256x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x1024xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%e : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %x = linalg.matmul ins(%a, %b : tensor<256x64xf32>, tensor<64x1024xf32>) outs(%acc : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  %y = linalg.matmul ins(%a, %c : tensor<256x64xf32>, tensor<64x1024xf32>) outs(%acc : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  return %x, %y : tensor<256x1024xf32>, tensor<256x1024xf32>
}
