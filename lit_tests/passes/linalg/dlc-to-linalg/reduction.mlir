// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// dlc.reduce{sum} with keepdims: a reduction generic into a zero-filled init, then
// tensor.expand_shape puts the reduced axis back with size 1.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG:   #[[OUT:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-LABEL: func.func @test_reduce_sum_keepdims
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         %[[EMPTY:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK-NEXT:    %[[INIT:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%[[EMPTY]] : tensor<2x4xf32>)
// CHECK-NEXT:    %[[SUM:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[OUT]]], iterator_types = ["parallel", "reduction", "parallel"]}
// CHECK-SAME:      ins(%[[X]] : tensor<2x3x4xf32>) outs(%[[INIT]] : tensor<2x4xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f32, %[[ACC:[^:]+]]: f32):
// CHECK-NEXT:      %[[R:.*]] = arith.addf %[[ACC]], %[[IN]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
// CHECK:         %[[KEPT:.*]] = tensor.expand_shape %[[SUM]] {{\[\[}}0, 1], [2]] output_shape [2, 1, 4] : tensor<2x4xf32> into tensor<2x1x4xf32>
// CHECK-NEXT:    return %[[KEPT]]
func.func @test_reduce_sum_keepdims(%x: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %0 = "dlc.reduce"(%x) {fn = "sum", axes = array<i64: 1>, keepdims = 1} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  return %0 : tensor<2x1x4xf32>
}

// -----

// Every axis reduced, no keepdims: a rank-0 accumulator. The max is NaN-propagating with
// no signed zeros (nsz: x86's vmaxps and a NaN fix-up instead of 6 instructions a vector).

// CHECK-DAG:   #[[ALL:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @test_reduce_max_all_axes
// CHECK:         %[[LOWEST:.*]] = arith.constant 0xFF800000 : f32
// CHECK:         linalg.fill ins(%[[LOWEST]] : f32) outs(%{{.*}} : tensor<f32>)
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #[[ALL]]], iterator_types = ["reduction", "reduction"]}
// CHECK:           arith.maximumf {{.*}} fastmath<nsz> : f32
// CHECK-NOT:     tensor.expand_shape
func.func @test_reduce_max_all_axes(%x: tensor<2x3xf32>) -> tensor<f32> {
  %0 = "dlc.reduce"(%x) {fn = "max", axes = array<i64: 0, 1>, keepdims = 0} : (tensor<2x3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// Signed and unsigned integers: the identity and the comparison follow the written type.

// CHECK-LABEL: func.func @test_reduce_min_signed
// CHECK:         arith.constant 2147483647 : i32
// CHECK:         arith.minsi
func.func @test_reduce_min_signed(%x: tensor<4x3xi32>) -> tensor<4xi32> {
  %0 = "dlc.reduce"(%x) {fn = "min", axes = array<i64: 1>, keepdims = 0} : (tensor<4x3xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// CHECK-LABEL: func.func @test_reduce_min_unsigned
// CHECK:         arith.constant -1 : i8
// CHECK:         arith.minui
func.func @test_reduce_min_unsigned(%x: tensor<4x3xui8>) -> tensor<4xui8> {
  %0 = "dlc.reduce"(%x) {fn = "min", axes = array<i64: 1>, keepdims = 0} : (tensor<4x3xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// float16 accumulates in float32; mean divides by the count, then truncates, in an
// elementwise generic.

// CHECK-LABEL: func.func @test_reduce_mean_f16
// CHECK-DAG:     %[[COUNT:.*]] = arith.constant 3.000000e+00 : f32
// CHECK:         %[[ACC:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      ins(%{{.*}} : tensor<2x3xf16>) outs(%{{.*}} : tensor<2xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f16, %[[OUT:[^:]+]]: f32):
// CHECK-NEXT:      %[[WIDE:.*]] = arith.extf %[[IN]] : f16 to f32
// CHECK-NEXT:      arith.addf %[[OUT]], %[[WIDE]] : f32
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK-SAME:      ins(%[[ACC]] : tensor<2xf32>) outs(%{{.*}} : tensor<2xf16>)
// CHECK:           %[[MEAN:.*]] = arith.divf %{{.*}}, %[[COUNT]] : f32
// CHECK-NEXT:      arith.truncf %[[MEAN]] : f32 to f16
func.func @test_reduce_mean_f16(%x: tensor<2x3xf16>) -> tensor<2xf16> {
  %0 = "dlc.reduce"(%x) {fn = "mean", axes = array<i64: 1>, keepdims = 0} : (tensor<2x3xf16>) -> tensor<2xf16>
  return %0 : tensor<2xf16>
}

// -----

// l2: squares in the body, sqrt after.

// CHECK-LABEL: func.func @test_reduce_l2
// CHECK:         linalg.generic
// CHECK:           %[[SQ:.*]] = arith.mulf %[[IN:.*]], %[[IN]] : f32
// CHECK-NEXT:      arith.addf %{{.*}}, %[[SQ]] : f32
// CHECK:         linalg.generic
// CHECK:           math.sqrt
func.func @test_reduce_l2(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "dlc.reduce"(%x) {fn = "l2", axes = array<i64: 1>, keepdims = 0} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// logsumexp: a max that ignores infinities (0 where no element is finite: a shift of -inf
// made the rows of -infs and of infs NaN), a sum of exp(x - max), then log(sum) + max.

// CHECK-LABEL: func.func @test_reduce_logsumexp
// CHECK:         %[[PEAK:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           math.absf
// CHECK:           arith.maximumf
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}} ins(%[[PEAK]] : tensor<2xf32>)
// CHECK:           arith.cmpf oeq
// CHECK-NEXT:      arith.select
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK-SAME:      ins(%{{.*}}, %[[MAX]] : tensor<2x3xf32>, tensor<2xf32>)
// CHECK:           arith.subf
// CHECK-NEXT:      math.exp
// CHECK-NEXT:      arith.addf
// CHECK:         linalg.generic {{.*}} ins(%[[SUM]], %[[MAX]] : tensor<2xf32>, tensor<2xf32>)
// CHECK:           math.log
// CHECK-NEXT:      arith.addf
func.func @test_reduce_logsumexp(%x: tensor<2x3xf32>) -> tensor<2xf32> {
  %0 = "dlc.reduce"(%x) {fn = "logsumexp", axes = array<i64: 1>, keepdims = 0} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// No axis (noop_with_empty_axes): only the transform, with parallel loops.

// CHECK-LABEL: func.func @test_reduce_sumsquare_no_axes
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:           arith.mulf
func.func @test_reduce_sumsquare_no_axes(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.reduce"(%x) {fn = "sumsquare", axes = array<i64>, keepdims = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// dlc.argreduce: one generic with two outputs (best value, its index); the index comes from
// linalg.index on the reduced loop. select_last_index turns > into >=.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-LABEL: func.func @test_argmax_keepdims
// CHECK:         %[[BEST:.*]]:2 = linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:      outs(%{{.*}}, %{{.*}} : tensor<2xi32>, tensor<2xi64>)
// CHECK:           arith.cmpi sgt
// CHECK:           %[[I:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[I64:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK:           arith.select %{{.*}}, %[[I64]], %{{.*}} : i64
// CHECK:         tensor.expand_shape %[[BEST]]#1 {{\[\[}}0, 1]] output_shape [2, 1] : tensor<2xi64> into tensor<2x1xi64>
func.func @test_argmax_keepdims(%x: tensor<2x3xi32>) -> tensor<2x1xi64> {
  %0 = "dlc.argreduce"(%x) {fn = "max", axis = 1, keepdims = 1, select_last_index = 0} : (tensor<2x3xi32>) -> tensor<2x1xi64>
  return %0 : tensor<2x1xi64>
}

// CHECK-LABEL: func.func @test_argmin_last_index
// CHECK:         linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK:           arith.cmpf oge, %{{.*}}, %{{.*}} : f32
// CHECK:           arith.cmpf uno
func.func @test_argmin_last_index(%x: tensor<2x3xf32>) -> tensor<3xi64> {
  %0 = "dlc.argreduce"(%x) {fn = "min", axis = 0, keepdims = 0, select_last_index = 1} : (tensor<2x3xf32>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

// dlc.hardmax: the argmax generic, then 1.0 where linalg.index equals it.

// CHECK-LABEL: func.func @test_hardmax
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[ARG:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      ins(%[[ARG]]#1 : tensor<2xi64>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK:           %[[HIT:.*]] = arith.cmpi eq
// CHECK-NEXT:      arith.select %[[HIT]], %[[ONE]], %[[ZERO]] : f32
func.func @test_hardmax(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.hardmax"(%x) {axis = 1} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// dlc.cumulative{sum}: an extra reduction loop k over the axis; x[.., k] is added where k < i
// (exclusive) or k <= i, k >= i (reverse), k > i (reverse exclusive), 0 elsewhere.

// CHECK-DAG:   #[[IN:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG:   #[[OUT:map[0-9]*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @test_cumsum_exclusive
// CHECK:         linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK:           %[[K:.*]] = linalg.index 2 : index
// CHECK-NEXT:      %[[I:.*]] = linalg.index 1 : index
// CHECK-NEXT:      %[[TAKE:.*]] = arith.cmpi ult, %[[K]], %[[I]] : index
// CHECK-NEXT:      %[[V:.*]] = arith.select %[[TAKE]], %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:      arith.addi %{{.*}}, %[[V]] : i32
func.func @test_cumsum_exclusive(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %0 = "dlc.cumulative"(%x) {fn = "sum", axis = 1, exclusive = 1, reverse = 0} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  return %0 : tensor<2x3xi32>
}

// CHECK-LABEL: func.func @test_cumsum_reverse
// CHECK:           arith.cmpi uge
func.func @test_cumsum_reverse(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.cumulative"(%x) {fn = "sum", axis = 0, exclusive = 0, reverse = 1} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// dlc.cumulative{prod}: the same loops into a one-filled init, multiplying x[.., k] or 1.

// CHECK-LABEL: func.func @test_cumprod
// CHECK-SAME:    (%[[X:.*]]: tensor<3x4xf32>)
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[INIT:.*]] = linalg.fill ins(%[[ONE]] : f32) outs(%{{.*}} : tensor<3x4xf32>)
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// CHECK-SAME:      ins(%[[X]] : tensor<3x4xf32>) outs(%[[INIT]] : tensor<3x4xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:[^:]+]]: f32, %[[ACC:[^:]+]]: f32):
// CHECK:           %[[TAKE:.*]] = arith.cmpi ugt
// CHECK-NEXT:      %[[V:.*]] = arith.select %[[TAKE]], %[[IN]], %[[ONE]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.mulf %[[ACC]], %[[V]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
func.func @test_cumprod(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "dlc.cumulative"(%x) {fn = "prod", axis = 0, exclusive = 1, reverse = 1} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// CHECK-LABEL: func.func @test_cumprod_f16
// CHECK:         linalg.generic
// CHECK:           arith.extf %{{.*}} : f16 to f32
// CHECK:           arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:         linalg.generic
// CHECK:           arith.truncf %{{.*}} : f32 to f16
func.func @test_cumprod_f16(%x: tensor<5xf16>) -> tensor<5xf16> {
  %0 = "dlc.cumulative"(%x) {fn = "prod", axis = 0, exclusive = 0, reverse = 0} : (tensor<5xf16>) -> tensor<5xf16>
  return %0 : tensor<5xf16>
}

// -----

// dlc.det: scf.for over the batch, then over the pivot column k: find the pivot row (largest
// |x[b, i, k]|), swap it into row k, multiply the pivot into the determinant (negated on a
// swap) and eliminate the rows below, all with tensor.extract/insert into a copy of x.

// CHECK-LABEL: func.func @test_det
// CHECK-SAME:    (%[[X:.*]]: tensor<2x3x3xf32>) -> tensor<2xf32>
// CHECK:         %[[COPY:.*]] = linalg.copy {{.*}}ins(%[[X]] : tensor<2x3x3xf32>)
// CHECK:         %[[OUT:.*]] = tensor.empty() : tensor<2xf32>
// CHECK:         %[[R:.*]]:2 = scf.for %[[B:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[COPY]], %{{.*}} = %[[OUT]])
// CHECK:           scf.for %[[K:.*]] = {{.*}} -> (tensor<2x3x3xf32>, f32)
// CHECK:             scf.for {{.*}} -> (index, f32)
// CHECK:               math.absf
// CHECK:               arith.cmpf ogt
// CHECK:             scf.for {{.*}} -> (tensor<2x3x3xf32>)
// CHECK-COUNT-2:       tensor.insert
// CHECK:             arith.negf
// CHECK:             arith.mulf
// CHECK:             scf.for {{.*}} -> (tensor<2x3x3xf32>)
// CHECK:               arith.divf
// CHECK:               scf.for {{.*}} -> (tensor<2x3x3xf32>)
// CHECK:                 arith.subf
// CHECK:                 tensor.insert
// CHECK:           tensor.insert %{{.*}} into %{{.*}}[%[[B]]] : tensor<2xf32>
// CHECK:         return %[[R]]#1 : tensor<2xf32>
func.func @test_det(%x: tensor<2x3x3xf32>) -> tensor<2xf32> {
  %0 = "dlc.det"(%x) : (tensor<2x3x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// CHECK-LABEL: func.func @test_det_f16
// CHECK:         linalg.generic
// CHECK:           arith.extf %{{.*}} : f16 to f32
// CHECK:         scf.for
// CHECK:         arith.truncf %{{.*}} : f32 to f16
func.func @test_det_f16(%x: tensor<1x2x2xf16>) -> tensor<1xf16> {
  %0 = "dlc.det"(%x) : (tensor<1x2x2xf16>) -> tensor<1xf16>
  return %0 : tensor<1xf16>
}
