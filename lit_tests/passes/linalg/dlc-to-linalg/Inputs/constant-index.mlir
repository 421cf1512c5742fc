// (input of index-checks.mlir: a constant index out of range is a compile-time error)
func.func @test_constant_index_out_of_range(%d: tensor<3x4xf32>) -> tensor<1x4xf32> {
  %i = "dlc.constant"() {value = dense<[7]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = "dlc.gather"(%d, %i) {axis = 0 : i64} : (tensor<3x4xf32>, tensor<1xi64>) -> tensor<1x4xf32> loc("seven")
  return %0 : tensor<1x4xf32>
}
