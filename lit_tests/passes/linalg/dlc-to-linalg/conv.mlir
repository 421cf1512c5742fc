// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s
// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-to-linalg)' | FileCheck %s --check-prefix=LOWERED

// LOWERED-NOT: "dlc.

// Group 1 maps onto the named convolutions; no padding, no insert_slice.

// CHECK-LABEL: func.func @test_conv_1d
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x7xf32>, %[[W:.*]]: tensor<3x2x3xf32>)
// CHECK:         %[[ZERO:.*]] = linalg.fill
// CHECK-NOT:     tensor.insert_slice
// CHECK:         %[[Y:.*]] = linalg.conv_1d_ncw_fcw {dilations = dense<1> : tensor<1xi64>, strides = dense<2> : tensor<1xi64>}
// CHECK-SAME:      ins(%[[X]], %[[W]] : tensor<1x2x7xf32>, tensor<3x2x3xf32>) outs(%[[ZERO]] : tensor<1x3x3xf32>)
// CHECK:         return %[[Y]]
func.func @test_conv_1d(%x: tensor<1x2x7xf32>, %w: tensor<3x2x3xf32>) -> tensor<1x3x3xf32> {
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 2>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, group = 1} : (tensor<1x2x7xf32>, tensor<3x2x3xf32>) -> tensor<1x3x3xf32>
  return %0 : tensor<1x3x3xf32>
}

// -----

// Pads: the input is inserted into zeros; the bias is broadcast into the accumulator.

// CHECK-DAG:   #[[BIAS:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d1)>
// CHECK-LABEL: func.func @test_conv_2d_pads_bias
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x5x5xf32>, %[[W:.*]]: tensor<4x3x3x3xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK:         %[[ZEROS:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x3x7x7xf32>)
// CHECK:         %[[PADDED:.*]] = tensor.insert_slice %[[X]] into %[[ZEROS]][0, 0, 1, 2] [1, 3, 5, 5] [1, 1, 1, 1]
// CHECK:         %[[ACC:.*]] = linalg.generic {indexing_maps = [#[[BIAS]], #{{.*}}]
// CHECK-SAME:      ins(%[[B]] : tensor<4xf32>) outs(%{{.*}} : tensor<1x4x5x3xf32>)
// CHECK:         linalg.conv_2d_nchw_fchw {dilations = dense<[1, 2]> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
// CHECK-SAME:      ins(%[[PADDED]], %[[W]] : tensor<1x3x7x7xf32>, tensor<4x3x3x3xf32>) outs(%[[ACC]] : tensor<1x4x5x3xf32>)
func.func @test_conv_2d_pads_bias(%x: tensor<1x3x5x5xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x5x3xf32> {
  %0 = "dlc.conv"(%x, %w, %b) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 2>, pads = array<i64: 1, 2, 1, 0>, group = 1} : (tensor<1x3x5x5xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x5x3xf32>
  return %0 : tensor<1x4x5x3xf32>
}

// -----

// CHECK-LABEL: func.func @test_conv_3d
// CHECK:         linalg.conv_3d_ncdhw_fcdhw
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<1x2x4x4x4xf64>, tensor<3x2x2x2x2xf64>) outs(%{{.*}} : tensor<1x3x3x3x3xf64>)
func.func @test_conv_3d(%x: tensor<1x2x4x4x4xf64>, %w: tensor<3x2x2x2x2xf64>) -> tensor<1x3x3x3x3xf64> {
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1, 1>, dilations = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, group = 1} : (tensor<1x2x4x4x4xf64>, tensor<3x2x2x2x2xf64>) -> tensor<1x3x3x3x3xf64>
  return %0 : tensor<1x3x3x3x3xf64>
}

// -----

// group = C = M: the weight [C,1,KH,KW] collapses to [C,KH,KW] for the depthwise op.

// CHECK-LABEL: func.func @test_conv_2d_depthwise
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x5x5xf32>, %[[W:.*]]: tensor<3x1x3x3xf32>)
// CHECK:         %[[W3:.*]] = tensor.collapse_shape %[[W]] {{\[}}[0, 1], [2], [3]] : tensor<3x1x3x3xf32> into tensor<3x3x3xf32>
// CHECK:         linalg.depthwise_conv_2d_nchw_chw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME:      ins(%[[X]], %[[W3]] : tensor<1x3x5x5xf32>, tensor<3x3x3xf32>) outs(%{{.*}} : tensor<1x3x2x2xf32>)
func.func @test_conv_2d_depthwise(%x: tensor<1x3x5x5xf32>, %w: tensor<3x1x3x3xf32>) -> tensor<1x3x2x2xf32> {
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 3} : (tensor<1x3x5x5xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x2x2xf32>
  return %0 : tensor<1x3x2x2xf32>
}

// -----

// Other 2-D groups: input, weight and accumulator are split by group for conv_2d_ngchw_gfchw.

// CHECK-LABEL: func.func @test_conv_2d_groups
// CHECK-SAME:    (%[[X:.*]]: tensor<1x4x5x5xf32>, %[[W:.*]]: tensor<6x2x3x3xf32>)
// CHECK:         %[[XG:.*]] = tensor.expand_shape %[[X]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 5, 5]
// CHECK:         %[[WG:.*]] = tensor.expand_shape %[[W]] {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3]
// CHECK:         %[[ACC:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 3, 3, 3]
// CHECK:         %[[Y:.*]] = linalg.conv_2d_ngchw_gfchw
// CHECK-SAME:      ins(%[[XG]], %[[WG]] : tensor<1x2x2x5x5xf32>, tensor<2x3x2x3x3xf32>) outs(%[[ACC]] : tensor<1x2x3x3x3xf32>)
// CHECK:         tensor.collapse_shape %[[Y]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x3x3x3xf32> into tensor<1x6x3x3xf32>
func.func @test_conv_2d_groups(%x: tensor<1x4x5x5xf32>, %w: tensor<6x2x3x3xf32>) -> tensor<1x6x3x3xf32> {
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 2} : (tensor<1x4x5x5xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x3x3xf32>
  return %0 : tensor<1x6x3x3xf32>
}

// -----

// Groups outside 2-D: one linalg.generic over (n, g, f, o, c, k), x read at o * stride + k.

// CHECK-DAG:   #[[XMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d3 * 2 + d5)>
// CHECK-DAG:   #[[WMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d2, d4, d5)>
// CHECK-DAG:   #[[YMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func.func @test_conv_1d_groups_generic
// CHECK:         linalg.generic {indexing_maps = [#[[XMAP]], #[[WMAP]], #[[YMAP]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
// CHECK-SAME:      ins(%{{.*}}, %{{.*}} : tensor<1x2x2x7xf32>, tensor<2x3x2x3xf32>) outs(%{{.*}} : tensor<1x2x3x3xf32>)
// CHECK:           arith.mulf
// CHECK-NEXT:      arith.addf
// CHECK:         tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2], [3]] : tensor<1x2x3x3xf32> into tensor<1x6x3xf32>
func.func @test_conv_1d_groups_generic(%x: tensor<1x4x7xf32>, %w: tensor<6x2x3xf32>) -> tensor<1x6x3xf32> {
  %0 = "dlc.conv"(%x, %w) {strides = array<i64: 2>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, group = 2} : (tensor<1x4x7xf32>, tensor<6x2x3xf32>) -> tensor<1x6x3xf32>
  return %0 : tensor<1x6x3xf32>
}

// -----

// ConvTranspose: x spread by the stride into zeros (offset K-1-pad), then a generic reading
// the weight [C, M/G, K] at the flipped tap (K-1-k).

// CHECK-DAG:   #[[XMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d3 + -d5 + 2)>
// CHECK-DAG:   #[[WMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d1, d4, d2, d5)>
// CHECK-LABEL: func.func @test_conv_transpose_1d
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x3xf32>, %[[W:.*]]: tensor<2x3x3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK:         %[[SPREAD:.*]] = tensor.insert_slice %[[X]] into %{{.*}}[0, 0, 2] [1, 2, 3] [1, 1, 2] : tensor<1x2x3xf32> into tensor<1x2x8xf32>
// CHECK:         linalg.generic {{.*}} ins(%[[B]] : tensor<3xf32>)
// CHECK:         %[[XG:.*]] = tensor.expand_shape %[[SPREAD]]
// CHECK:         linalg.generic {indexing_maps = [#[[XMAP]], #[[WMAP]], #{{.*}}]
// CHECK-SAME:      ins(%[[XG]], %{{.*}} : tensor<1x1x2x8xf32>, tensor<1x2x3x3xf32>) outs(%{{.*}} : tensor<1x1x3x6xf32>)
// CHECK:         tensor.collapse_shape {{.*}} into tensor<1x3x6xf32>
func.func @test_conv_transpose_1d(%x: tensor<1x2x3xf32>, %w: tensor<2x3x3xf32>, %b: tensor<3xf32>) -> tensor<1x3x6xf32> {
  %0 = "dlc.conv_transpose"(%x, %w, %b) {strides = array<i64: 2>, dilations = array<i64: 1>, pads = array<i64: 0, 1>, output_padding = array<i64: 0>, group = 1} : (tensor<1x2x3xf32>, tensor<2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x6xf32>
  return %0 : tensor<1x3x6xf32>
}

// -----

// A pad larger than dilation*(K-1) crops the spread input (tensor.extract_slice).

// CHECK-LABEL: func.func @test_conv_transpose_crop
// CHECK:         %[[SPREAD:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0] [1, 1, 3] [1, 1, 1] : tensor<1x1x3xf32> into tensor<1x1x4xf32>
// CHECK:         tensor.extract_slice %[[SPREAD]][0, 0, 1] [1, 1, 3] [1, 1, 1] : tensor<1x1x4xf32> to tensor<1x1x3xf32>
// CHECK:         linalg.generic
func.func @test_conv_transpose_crop(%x: tensor<1x1x3xf32>, %w: tensor<1x1x2xf32>) -> tensor<1x1x2xf32> {
  %0 = "dlc.conv_transpose"(%x, %w) {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 2, 0>, output_padding = array<i64: 0>, group = 1} : (tensor<1x1x3xf32>, tensor<1x1x2xf32>) -> tensor<1x1x2xf32>
  return %0 : tensor<1x1x2xf32>
}

// -----

// Max pooling: -inf padding and accumulator, linalg.pooling_nchw_max with a kernel-shaped tensor.

// CHECK-LABEL: func.func @test_pool_max_2d
// CHECK-SAME:    (%[[X:.*]]: tensor<1x2x5x5xf32>)
// CHECK:         %[[NEG_INF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[FILL:.*]] = linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.*}} : tensor<1x2x7x7xf32>)
// CHECK:         %[[PADDED:.*]] = tensor.insert_slice %[[X]] into %[[FILL]][0, 0, 1, 1] [1, 2, 5, 5] [1, 1, 1, 1]
// CHECK:         %[[ACC:.*]] = linalg.fill ins(%[[NEG_INF]] : f32) outs(%{{.*}} : tensor<1x2x3x3xf32>)
// CHECK:         %[[WINDOW:.*]] = tensor.empty() : tensor<3x3xf32>
// CHECK:         linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
// CHECK-SAME:      ins(%[[PADDED]], %[[WINDOW]] : tensor<1x2x7x7xf32>, tensor<3x3xf32>) outs(%[[ACC]] : tensor<1x2x3x3xf32>)
func.func @test_pool_max_2d(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "dlc.pool"(%x) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// ceil_mode: the last window reaches one past the input, so the input is padded at the end.

// CHECK-LABEL: func.func @test_pool_max_2d_ceil
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0] [1, 1, 6, 6] [1, 1, 1, 1] : tensor<1x1x6x6xf32> into tensor<1x1x7x7xf32>
// CHECK:         linalg.pooling_nchw_max
// CHECK-SAME:      outs(%{{.*}} : tensor<1x1x3x3xf32>)
func.func @test_pool_max_2d_ceil(%x: tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32> {
  %0 = "dlc.pool"(%x) {kind = "max", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 1, count_include_pad = 0, p = 2} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
  return %0 : tensor<1x1x3x3xf32>
}

// -----

// uint8 (stored as i8): a generic with arith.maxui, accumulator 0.

// CHECK-LABEL: func.func @test_pool_max_unsigned
// CHECK-SAME:    (%{{.*}}: tensor<1x1x4x4xi8>) -> tensor<1x1x2x2xi8>
// CHECK:         %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK:         linalg.fill ins(%[[ZERO]] : i8)
// CHECK:         linalg.generic
// CHECK:           arith.maxui
func.func @test_pool_max_unsigned(%x: tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8> {
  %0 = "dlc.pool"(%x) {kind = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x1x4x4xui8>) -> tensor<1x1x2x2xui8>
  return %0 : tensor<1x1x2x2xui8>
}

// -----

// 3-D pooling: a generic reading x at o * stride + k * dilation.

// CHECK-DAG:   #[[XMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2 + d5, d3 + d6, d4 + d7)>
// CHECK-DAG:   #[[KMAP:map[0-9]*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d5, d6, d7)>
// CHECK-LABEL: func.func @test_pool_max_3d
// CHECK:         linalg.generic {indexing_maps = [#[[XMAP]], #[[KMAP]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK:           arith.maximumf
func.func @test_pool_max_3d(%x: tensor<1x1x4x4x4xf32>) -> tensor<1x1x3x3x3xf32> {
  %0 = "dlc.pool"(%x) {kind = "max", kernel = array<i64: 2, 2, 2>, strides = array<i64: 1, 1, 1>, dilations = array<i64: 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x1x4x4x4xf32>) -> tensor<1x1x3x3x3xf32>
  return %0 : tensor<1x1x3x3x3xf32>
}

// -----

// Average pooling where every window counts the same: sum, then divide by a scalar.

// CHECK-LABEL: func.func @test_pool_avg_1d
// CHECK:         %[[COUNT:.*]] = arith.constant 2.000000e+00 : f32
// CHECK:         %[[SUM:.*]] = linalg.pooling_ncw_sum
// CHECK:         linalg.generic {{.*}} ins(%[[SUM]] : tensor<1x2x3xf32>)
// CHECK:           arith.divf %{{.*}}, %[[COUNT]] : f32
func.func @test_pool_avg_1d(%x: tensor<1x2x6xf32>) -> tensor<1x2x3xf32> {
  %0 = "dlc.pool"(%x) {kind = "avg", kernel = array<i64: 2>, strides = array<i64: 2>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x2x6xf32>) -> tensor<1x2x3xf32>
  return %0 : tensor<1x2x3xf32>
}

// -----

// count_include_pad = 0 with pads: divide by a constant table of window counts.

// CHECK-DAG:   #[[ID:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG:   #[[SPATIAL:map[0-9]*]] = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
// CHECK-LABEL: func.func @test_pool_avg_exclude_pad
// CHECK:         %[[COUNTS:.*]] = arith.constant dense<{{\[}}[4.000000e+00, 6.000000e+00, 4.000000e+00], [6.000000e+00, 9.000000e+00, 6.000000e+00], [4.000000e+00, 6.000000e+00, 4.000000e+00]]> : tensor<3x3xf32>
// CHECK:         %[[SUM:.*]] = linalg.pooling_nchw_sum
// CHECK:         linalg.generic {indexing_maps = [#[[ID]], #[[SPATIAL]], #[[ID]]]
// CHECK-SAME:      ins(%[[SUM]], %[[COUNTS]] : tensor<1x2x3x3xf32>, tensor<3x3xf32>)
// CHECK:           arith.divf
func.func @test_pool_avg_exclude_pad(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "dlc.pool"(%x) {kind = "avg", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// count_include_pad = 1: every window counts 9.

// CHECK-LABEL: func.func @test_pool_avg_include_pad
// CHECK:         %[[COUNT:.*]] = arith.constant 9.000000e+00 : f32
// CHECK:         linalg.pooling_nchw_sum
// CHECK:         arith.divf %{{.*}}, %[[COUNT]] : f32
func.func @test_pool_avg_include_pad(%x: tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "dlc.pool"(%x) {kind = "avg", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 0, count_include_pad = 1, p = 2} : (tensor<1x2x5x5xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Lp pooling, p = 2: sum of squares, then math.sqrt.

// CHECK-LABEL: func.func @test_pool_lp_p2
// CHECK:         linalg.generic
// CHECK:           %[[SQ:.*]] = arith.mulf %[[V:.*]], %[[V]] : f32
// CHECK-NEXT:      arith.addf %{{.*}}, %[[SQ]] : f32
// CHECK:         linalg.generic
// CHECK:           math.sqrt
func.func @test_pool_lp_p2(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "dlc.pool"(%x) {kind = "lp", kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Lp pooling, p = 3: sum of |x|^3 (math.powf), then ^(1/3).

// CHECK-LABEL: func.func @test_pool_lp_p3
// CHECK-DAG:     %[[THIRD:.*]] = arith.constant 0.333333343 : f32
// CHECK-DAG:     %[[THREE:.*]] = arith.constant 3.000000e+00 : f32
// CHECK:         linalg.generic
// CHECK:           %[[ABS:.*]] = math.absf
// CHECK-NEXT:      math.powf %[[ABS]], %[[THREE]] : f32
// CHECK:         linalg.generic
// CHECK:           math.powf %{{.*}}, %[[THIRD]] : f32
func.func @test_pool_lp_p3(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32> {
  %0 = "dlc.pool"(%x) {kind = "lp", kernel = array<i64: 2, 2>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 3} : (tensor<1x2x4x4xf32>) -> tensor<1x2x3x3xf32>
  return %0 : tensor<1x2x3x3xf32>
}

// -----

// Channels last: the pads go on axes 1..k, the bias broadcasts along the last axis.

// CHECK-LABEL: func.func @test_conv_nhwc
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[0, 1, 1, 0] [1, 5, 5, 2] [1, 1, 1, 1] : tensor<1x5x5x2xf32> into tensor<1x7x7x2xf32>
// CHECK:         linalg.generic {{.*}} ins(%{{.*}} : tensor<4xf32>) outs(%{{.*}} : tensor<1x5x5x4xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x7x7x2xf32>, tensor<3x3x2x4xf32>)
// CHECK-LABEL: func.func @test_depthwise_nhwc
// CHECK:         tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<3x3x1x4xf32> into tensor<3x3x4xf32>
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-LABEL: func.func @test_pool_nhwc
// CHECK:         linalg.pooling_nhwc_max {{.*}} strides = dense<2>
func.func @test_conv_nhwc(%x: tensor<1x5x5x2xf32>, %w: tensor<3x3x2x4xf32>, %b: tensor<4xf32>) -> tensor<1x5x5x4xf32> {
  %0 = "dlc.conv_nhwc"(%x, %w, %b) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, group = 1} : (tensor<1x5x5x2xf32>, tensor<3x3x2x4xf32>, tensor<4xf32>) -> tensor<1x5x5x4xf32>
  return %0 : tensor<1x5x5x4xf32>
}
func.func @test_depthwise_nhwc(%x: tensor<1x5x5x4xf32>, %w: tensor<3x3x1x4xf32>) -> tensor<1x3x3x4xf32> {
  %0 = "dlc.conv_nhwc"(%x, %w) {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, group = 4} : (tensor<1x5x5x4xf32>, tensor<3x3x1x4xf32>) -> tensor<1x3x3x4xf32>
  return %0 : tensor<1x3x3x4xf32>
}
func.func @test_pool_nhwc(%x: tensor<1x6x6x4xf32>) -> tensor<1x3x3x4xf32> {
  %0 = "dlc.pool_nhwc"(%x) {kind = "max", kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x6x6x4xf32>) -> tensor<1x3x3x4xf32>
  return %0 : tensor<1x3x3x4xf32>
}
