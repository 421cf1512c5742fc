// RUN: dlc-opt %s -p %gpu-kernels | FileCheck %s
// RUN: dlc-opt %s -p %gpu-ptx | FileCheck %s --check-prefix=PTX

// Softmax over rows (as imported: max, sub, exp, sum, div): each reduction is one thread
// per row (8 threads) looping over the row; the elementwise ops one thread per element.
// math.exp becomes the NVPTX ex2 instruction: no libdevice call (no `.extern .func`).

// CHECK-LABEL: func.func @test_softmax
// CHECK-COUNT-7: gpu.launch_func
// CHECK-NOT:     gpu.launch_func
// CHECK:         return
// CHECK:         gpu.func @{{.*}} kernel attributes {known_block_size = array<i32: 8, 1, 1>, known_grid_size = array<i32: 1, 1, 1>}
// CHECK:           scf.for
// CHECK:             arith.maximumf

// PTX-NOT:   .extern .func
// PTX:       ex2.approx
// PTX-NOT:   .extern .func
func.func @test_softmax(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %m = "dlc.reduce"(%x) {fn = "max", axes = array<i64: 1>, keepdims = 1} : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %d = "dlc.sub"(%x, %m) : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  %e = "dlc.unary"(%d) {fn = "exp", params = array<f64>} : (tensor<8x32xf32>) -> tensor<8x32xf32>
  %s = "dlc.reduce"(%e) {fn = "sum", axes = array<i64: 1>, keepdims = 1} : (tensor<8x32xf32>) -> tensor<8x1xf32>
  %y = "dlc.div"(%e, %s) : (tensor<8x32xf32>, tensor<8x1xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}
