// RUN: dlc-opt %s -p 'builtin.module(dlc-block-dynamic)' | FileCheck %s
// RUN: dlc-opt %s -p 'builtin.module(dlc-block-dynamic{block=32 tail=4})' | FileCheck %s --check-prefix=SIZES

// A linalg op of a dynamic size runs as static blocks: 64 rows in a loop peeled of its last,
// partial, block; that one as a block of 32 rows, 16, 8 (each when its bit of the count is
// set), then one row ([1, K]: the vector-matrix schedule) or the last rows padded with zero
// rows to 4 or to 8. Each writes its rows of the result in place.

// CHECK-LABEL: func.func @test_matmul
// CHECK:         %[[N:.*]] = tensor.dim
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64
// CHECK:           linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<64x32xf32>)
// CHECK:         scf.for %{{.*}} = %{{.*}} to %[[N]] step %c64
// CHECK:           arith.andi %{{.*}}, %c32
// CHECK:           scf.if
// CHECK:             linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<32x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<32x32xf32>)
// CHECK:           arith.andi %{{.*}}, %c16
// CHECK:             linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x64xf32>, tensor<64x32xf32>)
// CHECK:           arith.andi %{{.*}}, %c8
// CHECK:             linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<64x32xf32>)
// CHECK:           scf.if
// CHECK:             scf.if
// CHECK:               linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<1x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<1x32xf32>)
// CHECK:             } else {
// CHECK:               scf.if
// CHECK:                 linalg.fill
// CHECK:                 tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [%{{.*}}, 64] [1, 1] : tensor<?x64xf32> into tensor<4x64xf32>
// CHECK:                 linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<4x32xf32>)
// CHECK:               } else {
// CHECK:                 linalg.fill
// CHECK:                 tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [%{{.*}}, 64] [1, 1] : tensor<?x64xf32> into tensor<8x64xf32>
// CHECK:                 linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<8x32xf32>)
// CHECK-NOT:     linalg.matmul {{.*}}?x
// SIZES-LABEL: func.func @test_matmul
// SIZES:         step %c32
// SIZES:         tensor<32x64xf32>
// SIZES:         tensor<16x64xf32>
// SIZES:         tensor<8x64xf32>
// SIZES:         tensor<4x64xf32>
// SIZES:         tensor<1x64xf32>
// SIZES:         tensor<2x64xf32>
func.func @test_matmul(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<64x32xf32>
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %m = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<64x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %m : tensor<?x32xf32>
}

// An elementwise op's padded tail does not copy its init (it only writes it); a reduction
// over the dynamic size runs in blocks of 256 (4 x 64: a merge of its partial results per
// block) accumulating into its result, then its partial block as 128, 64, 32, 16 and 8 rows
// (each when its bit of the count is set), then a loop of one
// row at a time for the rest (fewer than 8); no padding.
// CHECK-LABEL: func.func @test_elementwise_and_reduction
// CHECK:         linalg.generic {{.*}} ins(%{{.*}} : tensor<64x16xf32>)
// CHECK:           } else {
// CHECK:             tensor.empty() : tensor<4x16xf32>
// CHECK:           tensor.insert_slice
// CHECK-NOT:       tensor.insert_slice {{.*}} into {{.*}} tensor<4x16xf32>
// CHECK:           linalg.generic {{.*}} ins(%{{.*}} : tensor<4x16xf32>)
// CHECK:         scf.for
// CHECK:           linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<256x16xf32>) outs(%{{.*}} : tensor<16xf32>)
// CHECK:         scf.for
// CHECK:           scf.if
// CHECK:             linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<128x16xf32>)
// CHECK:             linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<64x16xf32>)
// CHECK:             linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<32x16xf32>)
// CHECK:             linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<16x16xf32>)
// CHECK:             linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<8x16xf32>)
// CHECK:           scf.for
// CHECK:             linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%{{.*}} : tensor<1x16xf32>)
// CHECK-NOT:     tensor<?x16xf32>) outs(%{{.*}} : tensor<16xf32>)
#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @test_elementwise_and_reduction(%x: tensor<?x16xf32>) -> (tensor<?x16xf32>, tensor<16xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %x, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%n) : tensor<?x16xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<?x16xf32>) outs(%e : tensor<?x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.maximumf %in, %zero : f32
    linalg.yield %y : f32
  } -> tensor<?x16xf32>
  %s0 = tensor.empty() : tensor<16xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%s0 : tensor<16xf32>) -> tensor<16xf32>
  %s = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%x : tensor<?x16xf32>) outs(%s1 : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.addf %in, %out : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r, %s : tensor<?x16xf32>, tensor<16xf32>
}

// A producer whose one use is an input of a blocked op runs in its blocks: the matmul (and
// the fill of its accumulator) in the relu's loop, static [64, ...] ops in one block.
// CHECK-LABEL: func.func @test_fused_producer
// CHECK:         scf.for %{{.*}} step %c64
// CHECK-NEXT:      tensor.extract_slice
// CHECK:           linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<64x32xf32>)
// CHECK:           linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x64xf32>, tensor<64x32xf32>) outs(%{{.*}} : tensor<64x32xf32>)
// CHECK:           linalg.generic {{.*}} ins(%{{.*}} : tensor<64x32xf32>)
// CHECK:           tensor.insert_slice
// CHECK-NEXT:      scf.yield
func.func @test_fused_producer(%x: tensor<?x64xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<64x32xf32>
  %n = tensor.dim %x, %c0 : tensor<?x64xf32>
  %e = tensor.empty(%n) : tensor<?x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %m = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<64x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %e2 = tensor.empty(%n) : tensor<?x32xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<?x32xf32>) outs(%e2 : tensor<?x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = arith.maximumf %in, %zero : f32
    linalg.yield %y : f32
  } -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// A static function is left unchanged.
// CHECK-LABEL: func.func @test_static
// CHECK-NOT:     scf.for
// CHECK:         linalg.matmul
func.func @test_static(%x: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<64x32xf32>
  %e = tensor.empty() : tensor<4x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = linalg.matmul ins(%x, %w : tensor<4x64xf32>, tensor<64x32xf32>) outs(%f : tensor<4x32xf32>) -> tensor<4x32xf32>
  return %m : tensor<4x32xf32>
}

// Attention's scores, [S, D] x [D, S] -> [S, S]: blocked by rows, then each block by
// columns (one round each), their partial block padded to 64 columns; every matmul left is
// static, none of [?, ?].
// CHECK-LABEL: func.func @test_two_dynamic_loops
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x16xf32>, tensor<16x64xf32>) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK:         linalg.fill {{.*}} -> tensor<16x64xf32>
// CHECK:         linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x16xf32>, tensor<16x64xf32>) outs(%{{.*}} : tensor<64x64xf32>)
// CHECK-NOT:     linalg.matmul {{.*}}tensor<?x
// CHECK-NOT:     linalg.matmul {{.*}}x?xf32>
// CHECK:         return
func.func @test_two_dynamic_loops(%q: tensor<?x16xf32>, %k: tensor<16x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %q, %c0 : tensor<?x16xf32>
  %m = tensor.dim %k, %c1 : tensor<16x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = linalg.matmul ins(%q, %k : tensor<?x16xf32>, tensor<16x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// The init fill of an op blocked only along parallel loops is each block's (a static fill
// the schedules fuse into its tiles), not one of the whole [?, ?] result filled before the
// loops and read back by every block; the loops of blocks start from the empty.
// CHECK-LABEL: func.func @test_fill_in_blocks
// CHECK-NOT:     linalg.fill {{.*}} -> tensor<?x?xf32>
// CHECK:         %[[E:.*]] = tensor.empty(%{{.*}}, %{{.*}}) : tensor<?x?xf32>
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64 iter_args(%{{.*}} = %[[E]])
// CHECK:           %[[F:.*]] = linalg.fill {{.*}} -> tensor<64x64xf32>
// CHECK-NEXT:      linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<64x16xf32>, tensor<16x64xf32>) outs(%[[F]] : tensor<64x64xf32>)
// CHECK-NOT:     linalg.fill {{.*}} -> tensor<?x?xf32>
// CHECK:         return
func.func @test_fill_in_blocks(%q: tensor<?x16xf32>, %k: tensor<16x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %n = tensor.dim %q, %c0 : tensor<?x16xf32>
  %m = tensor.dim %k, %c1 : tensor<16x?xf32>
  %e = tensor.empty(%n, %m) : tensor<?x?xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %s = linalg.matmul ins(%q, %k : tensor<?x16xf32>, tensor<16x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %s : tensor<?x?xf32>
}

// In the columns round, an elementwise op over [heads, S, S] runs its column blocks inside
// a loop over the heads (each block [1, 64, 64], in memory order), not each block of 64
// columns over every head.
// CHECK-LABEL: func.func @test_columns_in_heads
// CHECK:         scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64
// CHECK:           scf.for %{{.*}} = %c0 to %c12 step %c1
// CHECK:             scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c64
// CHECK:               linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x64x64xf32>, tensor<1x64x1xf32>) outs(%{{.*}} : tensor<1x64x64xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d1, 0)>
func.func @test_columns_in_heads(%x: tensor<12x?x?xf32>, %r: tensor<12x?x1xf32>) -> tensor<12x?x?xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %n = tensor.dim %x, %c1 : tensor<12x?x?xf32>
  %m = tensor.dim %x, %c2 : tensor<12x?x?xf32>
  %e = tensor.empty(%n, %m) : tensor<12x?x?xf32>
  %y = linalg.generic {indexing_maps = [#id3, #row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%x, %r : tensor<12x?x?xf32>, tensor<12x?x1xf32>) outs(%e : tensor<12x?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.divf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<12x?x?xf32>
  return %y : tensor<12x?x?xf32>
}
