// RUN: dlc-opt %s --split-input-file --verify-diagnostics -p 'builtin.module(dlc-to-linalg)'

// The lowering checks every op before it rewrites any, and reports each one it cannot lower
// at the op's location: the pass fails and leaves the IR alone.

func.func @test_dynamic_shape(%a: tensor<?x3xf32>) -> tensor<?x3xf32> {
  // expected-error @+1 {{'dlc.cumulative' op has a dynamic size (?), which its lowering does not take yet}}
  %0 = "dlc.cumulative"(%a) {fn = "sum", axis = 1, exclusive = 0, reverse = 0} : (tensor<?x3xf32>) -> tensor<?x3xf32>
  return %0 : tensor<?x3xf32>
}

// -----

func.func @test_two_dynamic_ops(%a: tensor<?x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4xf32>) -> tensor<?x4xf32> {
  // Static ops and the dynamic ops whose lowering takes a dynamic size are fine (a
  // transpose, a matmul whose contraction is dynamic, a sum over the size); a matmul with a
  // dynamic batch is not, nor a mean over the size (its count is a constant of the lowering).
  %s = "dlc.relu"(%c) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = "dlc.add"(%a, %s) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %1 = "dlc.transpose"(%0) {perm = array<i64: 1, 0>} : (tensor<?x4xf32>) -> tensor<4x?xf32>
  %r = "dlc.reduce"(%0) {fn = "sum", axes = array<i64: 0>, keepdims = 0} : (tensor<?x4xf32>) -> tensor<4xf32>
  // expected-error @below {{'dlc.reduce' op averages over a dynamic size (?)}}
  %m = "dlc.reduce"(%0) {fn = "mean", axes = array<i64: 0>, keepdims = 0} : (tensor<?x4xf32>) -> tensor<4xf32>
  %2 = "dlc.matmul"(%1, %0) : (tensor<4x?xf32>, tensor<?x4xf32>) -> tensor<4x4xf32>
  %3 = "dlc.matmul"(%0, %2) : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
  %4 = "dlc.reshape"(%3) {shape = array<i64: -9223372036854775808, 2, 2>} : (tensor<?x4xf32>) -> tensor<?x2x2xf32>
  // expected-error @below {{'dlc.matmul' op has a dynamic batch dimension (?) or a 1-D operand}}
  %5 = "dlc.matmul"(%4, %4) : (tensor<?x2x2xf32>, tensor<?x2x2xf32>) -> tensor<?x2x2xf32>
  return %3 : tensor<?x4xf32>
}

// -----

// Channels-last ops lower to named linalg ops only: a 1-D grouped conv_nhwc and an Lp pool_nhwc
// (which dlc-convert-layout never makes) are reported.

func.func @test_channels_last_limits(%x: tensor<1x5x5x4xf32>, %x1: tensor<1x5x4xf32>, %w: tensor<3x2x4xf32>) -> (tensor<1x3x4xf32>, tensor<1x5x5x4xf32>) {
  // expected-error @+1 {{'dlc.conv_nhwc' op with 1 spatial axes and group 2 has no channels-last lowering (1-3 spatial axes with group 1, or 2-D grouped and depthwise)}}
  %0 = "dlc.conv_nhwc"(%x1, %w) {strides = array<i64: 1>, dilations = array<i64: 1>, pads = array<i64: 0, 0>, group = 2} : (tensor<1x5x4xf32>, tensor<3x2x4xf32>) -> tensor<1x3x4xf32>
  // expected-error @+1 {{'dlc.pool_nhwc' op lp pooling of f32 with 2 spatial axes has no channels-last lowering (float max/avg, 1 or 2 spatial axes)}}
  %1 = "dlc.pool_nhwc"(%x) {kind = "lp", kernel = array<i64: 1, 1>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, ceil_mode = 0, count_include_pad = 0, p = 2} : (tensor<1x5x5x4xf32>) -> tensor<1x5x5x4xf32>
  return %0, %1 : tensor<1x3x4xf32>, tensor<1x5x5x4xf32>
}

// -----

// A gather_elements reads data at the indices' own positions off its axis: a `?` there in
// the indices only (rows past data's 4) is refused.
func.func @test_gather_elements_rows(%d: tensor<4x8xf32>, %i: tensor<?x8xi64>) -> tensor<?x8xf32> {
  // expected-error @+1 {{'dlc.gather_elements' op gathers along axis 1 with the dynamic size (?) at axis 0 of only one of data and indices, which its lowering does not take yet}}
  %g = "dlc.gather_elements"(%d, %i) {axis = 1 : i64} : (tensor<4x8xf32>, tensor<?x8xi64>) -> tensor<?x8xf32>
  return %g : tensor<?x8xf32>
}
