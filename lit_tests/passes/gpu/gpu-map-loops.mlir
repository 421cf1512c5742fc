// RUN: dlc-opt %s --split-input-file -p 'builtin.module(dlc-gpu-map-loops{block-size=128})' | FileCheck %s
// RUN: not dlc-opt %s -p 'builtin.module(dlc-gpu-map-loops{block-size=2048})' 2>&1 | FileCheck %s --check-prefix=INVALID

// INVALID: block-size must be in [1, 1024]

// A 3-D parallel loop (2x3x100 = 600 iterations) is one launch of 5 blocks of 128 threads;
// the linear index is guarded and delinearized, innermost dimension fastest.

// CHECK-LABEL: func.func @test_parallel
// CHECK-DAG:     %[[C5:.*]] = arith.constant 5 : index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK:         gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C5]], {{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C128]]
// CHECK:           %[[ROW:.*]] = arith.muli %[[BX]], %{{.*}} : index
// CHECK:           %[[I:.*]] = arith.addi %[[ROW]], %[[TX]] : index
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[I]], %{{.*}} : index
// CHECK:           scf.if %[[IN]] {
// CHECK:             %[[K:.*]] = arith.remui %[[I]], %{{.*}} : index
// CHECK:             %[[IJ:.*]] = arith.divui %[[I]], %{{.*}} : index
// CHECK:             %[[J:.*]] = arith.remui %[[IJ]], %{{.*}} : index
// CHECK:             %[[II:.*]] = arith.divui %[[IJ]], %{{.*}} : index
// CHECK:             memref.store %{{.*}}, %{{.*}}[%[[II]], %[[J]], %[[K]]]
// CHECK:           gpu.terminator
// CHECK-NOT:     scf.parallel
func.func @test_parallel(%m: memref<2x3x100xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c100 = arith.constant 100 : index
  %f = arith.constant 1.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%c2, %c3, %c100) step (%c1, %c1, %c1) {
    memref.store %f, %m[%i, %j, %k] : memref<2x3x100xf32>
    scf.reduce
  }
  return
}

// -----

// A host loop that reads memory and yields a value (an index check) moves, with the
// scf.if using its result, into one launch of a single thread.

// CHECK-LABEL: func.func @test_serial
// CHECK:         gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[ONE]],
// CHECK:           %[[BAD:.*]] = scf.for
// CHECK:           scf.if %[[BAD]]
// CHECK:           gpu.terminator
// CHECK-NEXT:    }
// CHECK-NEXT:    return
func.func @test_serial(%m: memref<4xi64>, %status: memref<2xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %false = arith.constant false
  %bad = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %false) -> (i1) {
    %v = memref.load %m[%i] : memref<4xi64>
    %zero = arith.constant 0 : i64
    %neg = arith.cmpi slt, %v, %zero : i64
    %or = arith.ori %acc, %neg : i1
    scf.yield %or : i1
  }
  scf.if %bad {
    %one = arith.constant 1 : i64
    memref.store %one, %status[%c0] : memref<2xi64>
  }
  return
}
