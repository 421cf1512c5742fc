// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// ---------------------------------------------------------------- dlc.binary: named ops

// Floats of equal shapes: the named linalg op (max is NaN-propagating: arith.maximumf).

// CHECK-LABEL: func.func @test_binary_max_float_same_shape
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK-NEXT:    %[[R:.*]] = linalg.max ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<2x3xf32>) outs(%[[INIT]] : tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    return %[[R]] : tensor<2x3xf32>
func.func @test_binary_max_float_same_shape(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.binary"(%a, %b) {fn = "max"} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @test_binary_min_int_same_shape
// CHECK:         linalg.min ins(%{{.*}}, %{{.*}} : tensor<4xi64>, tensor<4xi64>) outs(%{{.*}} : tensor<4xi64>) -> tensor<4xi64>
func.func @test_binary_min_int_same_shape(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = "dlc.binary"(%a, %b) {fn = "min"} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @test_binary_pow_float_same_shape
// CHECK:         linalg.powf ins(%{{.*}}, %{{.*}} : tensor<4xf64>, tensor<4xf64>) outs(%{{.*}} : tensor<4xf64>) -> tensor<4xf64>
func.func @test_binary_pow_float_same_shape(%a: tensor<4xf64>, %b: tensor<4xf64>) -> tensor<4xf64> {
  %0 = "dlc.binary"(%a, %b) {fn = "pow"} : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// ---------------------------------------------------------------- dlc.binary: generic bodies

// Broadcasting: a linalg.generic whose maps read the row operand without its leading axis.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @test_binary_min_float_broadcast
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<3xf32>) outs(%{{.*}} : tensor<2x3xf32>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[R:.*]] = arith.minimumf %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
func.func @test_binary_min_float_broadcast(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.binary"(%a, %b) {fn = "min"} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Unsigned: stored as signless i8, compared unsigned; never the (signed) named op.

// CHECK-LABEL: func.func @test_binary_max_unsigned
// CHECK-SAME:    (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> tensor<4xi8>
// CHECK-NOT:     linalg.max
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i8, %[[Y:[^:]+]]: i8, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[R:.*]] = arith.maxui %[[X]], %[[Y]] : i8
// CHECK-NEXT:      linalg.yield %[[R]] : i8
func.func @test_binary_max_unsigned(%a: tensor<4xui8>, %b: tensor<4xui8>) -> tensor<4xui8> {
  %0 = "dlc.binary"(%a, %b) {fn = "max"} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// Integer pow: square-and-multiply, an scf.for over the 32 bits of |exponent|; a negative
// exponent gives 0 unless the base is 1 or -1.

// CHECK-LABEL: func.func @test_binary_pow_int
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG:     %[[WIDTH:.*]] = arith.constant 32 : index
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i32, %[[Y:[^:]+]]: i32, %{{[^:]+}}: i32):
// CHECK:           %[[NEG:.*]] = arith.cmpi slt, %[[Y]], %[[ZERO]] : i32
// CHECK:           %[[P:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %[[WIDTH]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[ONE]], %[[SQ:.*]] = %[[X]], %{{.*}} = %{{.*}}) -> (i32, i32, i32)
// CHECK:             arith.muli %[[ACC]], %[[SQ]] : i32
// CHECK:             arith.muli %[[SQ]], %[[SQ]] : i32
// CHECK:             arith.shrui
// CHECK:             scf.yield
// CHECK:           %[[VANISH:.*]] = arith.andi %[[NEG]], %{{.*}} : i1
// CHECK:           %[[R:.*]] = arith.select %[[VANISH]], %[[ZERO]], %[[P]]#0 : i32
// CHECK:           linalg.yield %[[R]] : i32
func.func @test_binary_pow_int(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "dlc.binary"(%a, %b) {fn = "pow"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Floor mod on floats (numpy's mod): fmod, plus the divisor when the signs differ; a zero
// takes the divisor's sign.

// CHECK-LABEL: func.func @test_binary_mod_float
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[REM:.*]] = arith.remf %[[X]], %[[Y]] : f32
// CHECK:           %[[FIX:.*]] = arith.andi
// CHECK:           %[[SUM:.*]] = arith.addf %[[REM]], %[[Y]] : f32
// CHECK:           %[[FIXED:.*]] = arith.select %[[FIX]], %[[SUM]], %[[REM]] : f32
// CHECK:           %[[SIGNED_ZERO:.*]] = math.copysign %{{.*}}, %[[Y]] : f32
// CHECK:           arith.select %{{.*}}, %[[SIGNED_ZERO]], %[[FIXED]] : f32
func.func @test_binary_mod_float(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "dlc.binary"(%a, %b) {fn = "mod"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @test_binary_fmod_float
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f16, %[[Y:[^:]+]]: f16, %{{[^:]+}}: f16):
// CHECK-NEXT:      %[[R:.*]] = arith.remf %[[X]], %[[Y]] : f16
// CHECK-NEXT:      linalg.yield %[[R]] : f16
func.func @test_binary_fmod_float(%a: tensor<4xf16>, %b: tensor<4xf16>) -> tensor<4xf16> {
  %0 = "dlc.binary"(%a, %b) {fn = "fmod"} : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Integer floor mod never traps: divisors 0 and -1 become 1 before arith.remsi (x % 0 -> 0),
// then the divisor is added where the remainder's sign differs from it.

// CHECK-LABEL: func.func @test_binary_mod_int
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG:     %[[MINUS_ONE:.*]] = arith.constant -1 : i64
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i64, %[[Y:[^:]+]]: i64, %{{[^:]+}}: i64):
// CHECK-DAG:       %[[BY_ZERO:.*]] = arith.cmpi eq, %[[Y]], %[[ZERO]] : i64
// CHECK-DAG:       %[[BY_MINUS_ONE:.*]] = arith.cmpi eq, %[[Y]], %[[MINUS_ONE]] : i64
// CHECK:           %[[UNSAFE:.*]] = arith.ori %[[BY_ZERO]], %[[BY_MINUS_ONE]] : i1
// CHECK:           %[[DIVISOR:.*]] = arith.select %[[UNSAFE]], %[[ONE]], %[[Y]] : i64
// CHECK:           %[[REM:.*]] = arith.remsi %[[X]], %[[DIVISOR]] : i64
// CHECK:           %[[SUM:.*]] = arith.addi %[[REM]], %[[Y]] : i64
// CHECK:           %[[R:.*]] = arith.select %{{.*}}, %[[SUM]], %[[REM]] : i64
// CHECK:           linalg.yield %[[R]] : i64
func.func @test_binary_mod_int(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = "dlc.binary"(%a, %b) {fn = "mod"} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @test_binary_fmod_unsigned
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i32, %[[Y:[^:]+]]: i32, %{{[^:]+}}: i32):
// CHECK-NEXT:      %[[BY_ZERO:.*]] = arith.cmpi eq, %[[Y]], %[[ZERO]] : i32
// CHECK-NEXT:      %[[DIVISOR:.*]] = arith.select %[[BY_ZERO]], %{{.*}}, %[[Y]] : i32
// CHECK-NEXT:      %[[R:.*]] = arith.remui %[[X]], %[[DIVISOR]] : i32
// CHECK-NEXT:      linalg.yield %[[R]] : i32
func.func @test_binary_fmod_unsigned(%a: tensor<4xui32>, %b: tensor<ui32>) -> tensor<4xui32> {
  %0 = "dlc.binary"(%a, %b) {fn = "fmod"} : (tensor<4xui32>, tensor<ui32>) -> tensor<4xui32>
  return %0 : tensor<4xui32>
}

// -----

// Shifts guard their amount with one unsigned compare (negative amounts count as huge):
// outside [0, width) a left shift gives 0 ...

// CHECK-LABEL: func.func @test_binary_shl
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i16
// CHECK-DAG:     %[[WIDTH:.*]] = arith.constant 16 : i16
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i16, %[[Y:[^:]+]]: i16, %{{[^:]+}}: i16):
// CHECK-NEXT:      %[[OUT:.*]] = arith.cmpi uge, %[[Y]], %[[WIDTH]] : i16
// CHECK-NEXT:      %[[AMOUNT:.*]] = arith.select %[[OUT]], %[[ZERO]], %[[Y]] : i16
// CHECK-NEXT:      %[[SHIFTED:.*]] = arith.shli %[[X]], %[[AMOUNT]] : i16
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[OUT]], %[[ZERO]], %[[SHIFTED]] : i16
// CHECK-NEXT:      linalg.yield %[[R]] : i16
func.func @test_binary_shl(%a: tensor<4xi16>, %b: tensor<4xi16>) -> tensor<4xi16> {
  %0 = "dlc.binary"(%a, %b) {fn = "shl"} : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  return %0 : tensor<4xi16>
}

// -----

// ... an arithmetic right shift shifts by width - 1 (0 or -1) ...

// CHECK-LABEL: func.func @test_binary_shr_signed
// CHECK-DAG:     %[[WIDTH:.*]] = arith.constant 8 : i8
// CHECK-DAG:     %[[LAST:.*]] = arith.constant 7 : i8
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i8, %[[Y:[^:]+]]: i8, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[OUT:.*]] = arith.cmpi uge, %[[Y]], %[[WIDTH]] : i8
// CHECK-NEXT:      %[[AMOUNT:.*]] = arith.select %[[OUT]], %[[LAST]], %[[Y]] : i8
// CHECK-NEXT:      %[[R:.*]] = arith.shrsi %[[X]], %[[AMOUNT]] : i8
// CHECK-NEXT:      linalg.yield %[[R]] : i8
func.func @test_binary_shr_signed(%a: tensor<4xi8>, %b: tensor<4xi8>) -> tensor<4xi8> {
  %0 = "dlc.binary"(%a, %b) {fn = "shr"} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

// ... and a logical right shift gives 0.

// CHECK-LABEL: func.func @test_binary_shr_unsigned
// CHECK:         linalg.generic
// CHECK:           arith.cmpi uge
// CHECK:           arith.shrui
// CHECK-NOT:       arith.shrsi
func.func @test_binary_shr_unsigned(%a: tensor<4xui64>, %b: tensor<4xui64>) -> tensor<4xui64> {
  %0 = "dlc.binary"(%a, %b) {fn = "shr"} : (tensor<4xui64>, tensor<4xui64>) -> tensor<4xui64>
  return %0 : tensor<4xui64>
}

// -----

// Logic on bool: bitwise ops on the i8 storage holding 0 or 1.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[COL:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @test_binary_xor_bool
// CHECK-SAME:    (%{{.*}}: tensor<2x3xi8>, %{{.*}}: tensor<2x1xi8>) -> tensor<2x3xi8>
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: i8, %[[Y:[^:]+]]: i8, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[R:.*]] = arith.xori %[[X]], %[[Y]] : i8
// CHECK-NEXT:      linalg.yield %[[R]] : i8
func.func @test_binary_xor_bool(%a: tensor<2x3xi1>, %b: tensor<2x1xi1>) -> tensor<2x3xi1> {
  %0 = "dlc.binary"(%a, %b) {fn = "xor"} : (tensor<2x3xi1>, tensor<2x1xi1>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @test_binary_and_int
// CHECK:         linalg.generic
// CHECK:           arith.andi %{{.*}}, %{{.*}} : i32
func.func @test_binary_and_int(%a: tensor<4xi32>, %b: tensor<i32>) -> tensor<4xi32> {
  %0 = "dlc.binary"(%a, %b) {fn = "and"} : (tensor<4xi32>, tensor<i32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// ---------------------------------------------------------------- dlc.compare

// The i1 of the comparison is stored as i8 (arith.extui); floats compare ordered (NaN: false).

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[SCALAR:map[0-9]*]] = affine_map<(d0, d1) -> ()>
// CHECK-LABEL: func.func @test_compare_lt_float
// CHECK-SAME:    (%[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<f32>) -> tensor<2x3xi8>
// CHECK:         %[[INIT:.*]] = tensor.empty() : tensor<2x3xi8>
// CHECK-NEXT:    linalg.generic {indexing_maps = [#[[ID]], #[[SCALAR]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[A]], %[[B]] : tensor<2x3xf32>, tensor<f32>) outs(%[[INIT]] : tensor<2x3xi8>)
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[C:.*]] = arith.cmpf olt, %[[X]], %[[Y]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.extui %[[C]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[R]] : i8
func.func @test_compare_lt_float(%a: tensor<2x3xf32>, %b: tensor<f32>) -> tensor<2x3xi1> {
  %0 = "dlc.compare"(%a, %b) {fn = "lt"} : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xi1>
  return %0 : tensor<2x3xi1>
}

// -----

// CHECK-LABEL: func.func @test_compare_ge_signed
// CHECK:         arith.cmpi sge, %{{.*}}, %{{.*}} : i32
// CHECK-NEXT:    arith.extui %{{.*}} : i1 to i8
func.func @test_compare_ge_signed(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi1> {
  %0 = "dlc.compare"(%a, %b) {fn = "ge"} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @test_compare_gt_unsigned
// CHECK:         arith.cmpi ugt, %{{.*}}, %{{.*}} : i64
func.func @test_compare_gt_unsigned(%a: tensor<4xui64>, %b: tensor<4xui64>) -> tensor<4xi1> {
  %0 = "dlc.compare"(%a, %b) {fn = "gt"} : (tensor<4xui64>, tensor<4xui64>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// CHECK-LABEL: func.func @test_compare_eq_bool
// CHECK-SAME:    (%{{.*}}: tensor<4xi8>, %{{.*}}: tensor<4xi8>) -> tensor<4xi8>
// CHECK:         arith.cmpi eq, %{{.*}}, %{{.*}} : i8
func.func @test_compare_eq_bool(%a: tensor<4xi1>, %b: tensor<4xi1>) -> tensor<4xi1> {
  %0 = "dlc.compare"(%a, %b) {fn = "eq"} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// ---------------------------------------------------------------- dlc.select

// The condition arrives as i8 (0 or 1): compared with 0, then arith.select; all three broadcast.

// CHECK-DAG:   #[[COND:map[0-9]*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG:   #[[ROW:map[0-9]*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @test_select
// CHECK-SAME:    (%[[C:.*]]: tensor<2x1xi8>, %[[A:.*]]: tensor<2x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK:         linalg.generic {indexing_maps = [#[[COND]], #[[ID]], #[[ROW]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:      ins(%[[C]], %[[A]], %[[B]] : tensor<2x1xi8>, tensor<2x3xf32>, tensor<3xf32>)
// CHECK-NEXT:    ^bb0(%[[CV:[^:]+]]: i8, %[[X:[^:]+]]: f32, %[[Y:[^:]+]]: f32, %{{[^:]+}}: f32):
// CHECK-NEXT:      %[[TRUE:.*]] = arith.cmpi ne, %[[CV]], %[[ZERO]] : i8
// CHECK-NEXT:      %[[R:.*]] = arith.select %[[TRUE]], %[[X]], %[[Y]] : f32
// CHECK-NEXT:      linalg.yield %[[R]] : f32
func.func @test_select(%c: tensor<2x1xi1>, %a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = "dlc.select"(%c, %a, %b) : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// ---------------------------------------------------------------- dlc.cast

// CHECK-LABEL: func.func @test_cast_f32_to_i32
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %{{[^:]+}}: i32):
// CHECK-NEXT:      %[[R:.*]] = arith.fptosi %[[X]] : f32 to i32
// CHECK-NEXT:      linalg.yield %[[R]] : i32
func.func @test_cast_f32_to_i32(%a: tensor<4xf32>) -> tensor<4xi32> {
  %0 = "dlc.cast"(%a) {to = i32} : (tensor<4xf32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @test_cast_f64_to_ui16
// CHECK:         arith.fptoui %{{.*}} : f64 to i16
func.func @test_cast_f64_to_ui16(%a: tensor<4xf64>) -> tensor<4xui16> {
  %0 = "dlc.cast"(%a) {to = ui16} : (tensor<4xf64>) -> tensor<4xui16>
  return %0 : tensor<4xui16>
}

// -----

// CHECK-LABEL: func.func @test_cast_ui8_to_f32
// CHECK:         arith.uitofp %{{.*}} : i8 to f32
func.func @test_cast_ui8_to_f32(%a: tensor<4xui8>) -> tensor<4xf32> {
  %0 = "dlc.cast"(%a) {to = f32} : (tensor<4xui8>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @test_cast_i64_to_f16
// CHECK:         arith.sitofp %{{.*}} : i64 to f16
func.func @test_cast_i64_to_f16(%a: tensor<4xi64>) -> tensor<4xf16> {
  %0 = "dlc.cast"(%a) {to = f16} : (tensor<4xi64>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// CHECK-LABEL: func.func @test_cast_f16_to_f64
// CHECK:         arith.extf %{{.*}} : f16 to f64
func.func @test_cast_f16_to_f64(%a: tensor<4xf16>) -> tensor<4xf64> {
  %0 = "dlc.cast"(%a) {to = f64} : (tensor<4xf16>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

// CHECK-LABEL: func.func @test_cast_f32_to_f16
// CHECK:         arith.truncf %{{.*}} : f32 to f16
func.func @test_cast_f32_to_f16(%a: tensor<4xf32>) -> tensor<4xf16> {
  %0 = "dlc.cast"(%a) {to = f16} : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// Widening: sign extension from signed types, zero extension from unsigned and bool.

// CHECK-LABEL: func.func @test_cast_i8_to_i64
// CHECK:         arith.extsi %{{.*}} : i8 to i64
func.func @test_cast_i8_to_i64(%a: tensor<4xi8>) -> tensor<4xi64> {
  %0 = "dlc.cast"(%a) {to = i64} : (tensor<4xi8>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// CHECK-LABEL: func.func @test_cast_ui16_to_i32
// CHECK:         arith.extui %{{.*}} : i16 to i32
func.func @test_cast_ui16_to_i32(%a: tensor<4xui16>) -> tensor<4xi32> {
  %0 = "dlc.cast"(%a) {to = i32} : (tensor<4xui16>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @test_cast_bool_to_i32
// CHECK-SAME:    (%{{.*}}: tensor<4xi8>) -> tensor<4xi32>
// CHECK:         arith.extui %{{.*}} : i8 to i32
func.func @test_cast_bool_to_i32(%a: tensor<4xi1>) -> tensor<4xi32> {
  %0 = "dlc.cast"(%a) {to = i32} : (tensor<4xi1>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func.func @test_cast_i64_to_i16
// CHECK:         arith.trunci %{{.*}} : i64 to i16
func.func @test_cast_i64_to_i16(%a: tensor<4xi64>) -> tensor<4xi16> {
  %0 = "dlc.cast"(%a) {to = i16} : (tensor<4xi64>) -> tensor<4xi16>
  return %0 : tensor<4xi16>
}

// -----

// To bool: x != 0 (unordered for floats: NaN is true), stored as i8.

// CHECK-LABEL: func.func @test_cast_f32_to_bool
// CHECK-SAME:    (%{{.*}}: tensor<4xf32>) -> tensor<4xi8>
// CHECK:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         linalg.generic
// CHECK-NEXT:    ^bb0(%[[X:[^:]+]]: f32, %{{[^:]+}}: i8):
// CHECK-NEXT:      %[[C:.*]] = arith.cmpf une, %[[X]], %[[ZERO]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.extui %[[C]] : i1 to i8
// CHECK-NEXT:      linalg.yield %[[R]] : i8
func.func @test_cast_f32_to_bool(%a: tensor<4xf32>) -> tensor<4xi1> {
  %0 = "dlc.cast"(%a) {to = i1} : (tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// int8 -> bool has the same storage type (i8) but still compares with 0.

// CHECK-LABEL: func.func @test_cast_i8_to_bool
// CHECK:         linalg.generic
// CHECK:           arith.cmpi ne, %{{.*}}, %{{.*}} : i8
// CHECK-NEXT:      arith.extui %{{.*}} : i1 to i8
func.func @test_cast_i8_to_bool(%a: tensor<4xi8>) -> tensor<4xi1> {
  %0 = "dlc.cast"(%a) {to = i1} : (tensor<4xi8>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Same storage type and no meaning change (int8 -> uint8, bool -> uint8): the operand itself.

// CHECK-LABEL: func.func @test_cast_i8_to_ui8
// CHECK-SAME:    (%[[A:.*]]: tensor<4xi8>) -> tensor<4xi8>
// CHECK-NEXT:    return %[[A]] : tensor<4xi8>
func.func @test_cast_i8_to_ui8(%a: tensor<4xi8>) -> tensor<4xui8> {
  %0 = "dlc.cast"(%a) {to = ui8} : (tensor<4xi8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

// CHECK-LABEL: func.func @test_cast_bool_to_ui8
// CHECK-SAME:    (%[[A:.*]]: tensor<4xi8>) -> tensor<4xi8>
// CHECK-NEXT:    return %[[A]] : tensor<4xi8>
func.func @test_cast_bool_to_ui8(%a: tensor<4xi1>) -> tensor<4xui8> {
  %0 = "dlc.cast"(%a) {to = ui8} : (tensor<4xi1>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}
