// dlc-profile (profile compiles only, end of the bufferized stage): a timestamp (rtclock) is
// stored into the public global _mlir_dlc_profile before each top-level op group of main
// (consecutive work ops at one location) and before the return; ops that do no work (views,
// allocs, globals, constants) start no group. The module attribute dlc.profile_segments says
// what each group is: its node names, ops, families, and the linalg ops that run naive.
// RUN: dlc-opt %s -p 'builtin.module(dlc-profile)' | FileCheck %s

// CHECK:         dlc.profile_segments = [
// CHECK-SAME:      \22nodes\22: [\22mm\22], \22ops\22: [\22linalg.fill\22, \22linalg.matmul\22], \22families\22: [], \22naive\22: [\22linalg.matmul\22]
// CHECK-SAME:      \22nodes\22: [\22relu\22], \22ops\22: [\22linalg.generic\22], \22families\22: [], \22naive\22: [\22linalg.generic\22]
// CHECK-LABEL: func.func @main
// CHECK:         %[[T0:.*]] = call @rtclock() : () -> f64
// CHECK-NEXT:    %[[B0:.*]] = memref.get_global @_mlir_dlc_profile : memref<3xf64>
// CHECK-NEXT:    %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT:    memref.store %[[T0]], %[[B0]][%[[C0]]]
// CHECK-NEXT:    linalg.fill
// CHECK-NEXT:    linalg.matmul
// CHECK-NEXT:    %[[T1:.*]] = call @rtclock() : () -> f64
// CHECK:         memref.store %[[T1]], %{{.*}}[%c1]
// CHECK-NEXT:    linalg.generic
// CHECK:         %[[T2:.*]] = call @rtclock() : () -> f64
// CHECK:         memref.store %[[T2]], %{{.*}}[%c2]
// CHECK-NEXT:    return
// CHECK:       func.func private @rtclock() -> f64
// CHECK:       memref.global @_mlir_dlc_profile : memref<3xf64> = uninitialized
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @main(%a: memref<4x4xf32>, %b: memref<4x4xf32>, %out: memref<4x4xf32>) attributes {llvm.emit_c_interface} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<4x4xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<4x4xf32>) loc("mm")
    linalg.matmul ins(%a, %b : memref<4x4xf32>, memref<4x4xf32>) outs(%t : memref<4x4xf32>) loc("mm")
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%t : memref<4x4xf32>) outs(%out : memref<4x4xf32>) {
    ^bb0(%x: f32, %y: f32):
      %r = arith.maximumf %x, %zero : f32
      linalg.yield %r : f32
    } loc("relu")
    memref.dealloc %t : memref<4x4xf32>
    return
  }
}
