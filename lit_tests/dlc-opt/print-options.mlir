// Output options: elided large constants, locations, the generic op form.
// RUN: dlc-opt %s --mlir-elide-elementsattrs-if-larger=2 | FileCheck %s --check-prefix=ELIDE
// RUN: dlc-opt %s --mlir-print-debuginfo | FileCheck %s --check-prefix=DEBUGINFO
// RUN: dlc-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC

// ELIDE-LABEL: func.func @test_print_options
// ELIDE:         "dlc.constant"() {value = dense_resource<__elided__> : tensor<3xf32>}
// ELIDE:         "dlc.constant"() {value = dense<1.000000e+00> : tensor<2xf32>}

// DEBUGINFO:   "dlc.relu"(%{{.*}}) : (tensor<3xf32>) -> tensor<3xf32> loc(#[[LOC:loc[0-9]*]])
// DEBUGINFO:   #[[LOC]] = loc("relu_node")

// GENERIC:     "func.func"() <{function_type = () -> tensor<3xf32>, sym_name = "test_print_options"}>
// GENERIC:     "func.return"
func.func @test_print_options() -> tensor<3xf32> {
  %0 = "dlc.constant"() {value = dense<[1.0, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32>
  %1 = "dlc.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %2 = "dlc.relu"(%0) : (tensor<3xf32>) -> tensor<3xf32> loc("relu_node")
  return %2 : tensor<3xf32>
}
