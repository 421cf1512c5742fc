// RUN: dlc-opt %s -p "builtin.module(finalize-memref-to-llvm,dlc-external-weights{min-bytes=16})" | FileCheck %s
// RUN: dlc-opt %s -p "builtin.module(finalize-memref-to-llvm,dlc-external-weights)" | FileCheck %s --check-prefix=DEFAULT

// dlc-external-weights: a constant global of at least min-bytes becomes a pointer to its data
// (zero until the loader binds it), each use of the data's address loads the pointer instead,
// the value moves, in order, into the module attribute dlc.weights, the pointer's address into
// the external table @_mlir_dlc_weights (what the loader reads to point each at its weight).
// Smaller globals, and i1 ones, stay constants.

// CHECK:      module attributes {dlc.weights = [dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>, dense<{{\[\[}}1, 2], [3, 4]]> : tensor<2x2xi32>]}
// CHECK:      llvm.mlir.global private @big() {{.*}} : !llvm.ptr {
// CHECK-NEXT:   %[[Z:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NEXT:   llvm.return %[[Z]] : !llvm.ptr
// CHECK:      llvm.mlir.global private constant @small(dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>)
// CHECK:      llvm.mlir.global private constant @flags(dense<true> : tensor<64xi1>)
// CHECK:      llvm.mlir.global private @ints() {{.*}} : !llvm.ptr {
// CHECK-LABEL: func.func @main
// CHECK:        %[[SLOT:.*]] = llvm.mlir.addressof @big : !llvm.ptr
// CHECK-NEXT:   %[[DATA:.*]] = llvm.load %[[SLOT]] invariant {alignment = 8 : i64} : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:   llvm.getelementptr %[[DATA]][0, 0, 0]
// CHECK:        llvm.mlir.addressof @small : !llvm.ptr
// CHECK-NOT:    llvm.load
// CHECK:        %[[ISLOT:.*]] = llvm.mlir.addressof @ints : !llvm.ptr
// CHECK-NEXT:   llvm.load %[[ISLOT]] invariant
// CHECK-LABEL: llvm.mlir.global external @_mlir_dlc_weights() {{.*}} : !llvm.array<2 x ptr> {
// CHECK:        %[[UNDEF:.*]] = llvm.mlir.undef : !llvm.array<2 x ptr>
// CHECK:        %[[BIG:.*]] = llvm.mlir.addressof @big : !llvm.ptr
// CHECK:        %[[T0:.*]] = llvm.insertvalue %[[BIG]], %[[UNDEF]][0] : !llvm.array<2 x ptr>
// CHECK:        %[[INTS:.*]] = llvm.mlir.addressof @ints : !llvm.ptr
// CHECK:        %[[T1:.*]] = llvm.insertvalue %[[INTS]], %[[T0]][1] : !llvm.array<2 x ptr>
// CHECK:        llvm.return %[[T1]] : !llvm.array<2 x ptr>

// Under the default bound (16 KiB) nothing moves: no attribute, no table.
// DEFAULT-NOT: dlc.weights
// DEFAULT:     llvm.mlir.global private constant @big(
// DEFAULT-NOT: _mlir_dlc_weights

module {
  memref.global "private" constant @big : memref<2x3xf32> = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> {alignment = 64 : i64}
  memref.global "private" constant @small : memref<2xf32> = dense<[1.0, 2.0]>
  memref.global "private" constant @flags : memref<64xi1> = dense<true>
  memref.global "private" constant @ints : memref<2x2xi32> = dense<[[1, 2], [3, 4]]>
  func.func @main() -> (memref<2x3xf32>, memref<2xf32>, memref<2x2xi32>) {
    %0 = memref.get_global @big : memref<2x3xf32>
    %1 = memref.get_global @small : memref<2xf32>
    %2 = memref.get_global @ints : memref<2x2xi32>
    return %0, %1, %2 : memref<2x3xf32>, memref<2xf32>, memref<2x2xi32>
  }
}
