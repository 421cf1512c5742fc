// REQUIRES: avx512-vbmi
// RUN: dlc-opt %s --cpu-target avx512 --split-input-file -p 'builtin.module(dlc-lower-vectors)' | FileCheck %s
// RUN: dlc-opt %s --cpu-target avx2 --split-input-file -p 'builtin.module(dlc-lower-vectors)' | FileCheck %s --check-prefix=AVX2

// dlc-qdq-lut's lookup, vectorized: a gather from a 256-byte table at safe_index(q) (q's bits
// as an unsigned number) becomes the table's 4 quarters, two vpermi2b (bytes 0-127 and
// 128-255 by bits 0-6 of q) and a select on q's sign (bit 7); 32 lanes are padded to 64 and cut
// back. On the AVX2 target the gather stays (LLVM's).

// CHECK-LABEL: func.func @test_lookup
// CHECK-SAME:    (%[[Q:.*]]: vector<32xi8>
// CHECK-DAG:     %[[T0:.*]] = vector.load %[[TABLE:.*]][%c0{{.*}}] : memref<256xi8>, vector<64xi8>
// CHECK-DAG:     %[[T1:.*]] = vector.load %[[TABLE]][%c64{{.*}}] : memref<256xi8>, vector<64xi8>
// CHECK-DAG:     %[[T2:.*]] = vector.load %[[TABLE]][%c128{{.*}}] : memref<256xi8>, vector<64xi8>
// CHECK-DAG:     %[[T3:.*]] = vector.load %[[TABLE]][%c192{{.*}}] : memref<256xi8>, vector<64xi8>
// CHECK:         %[[P:.*]] = vector.shuffle %[[Q]], %[[Q]] [0, 1, 2,
// CHECK:         %[[LO:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpermi2var.qi.512"(%[[T0]], %[[P]], %[[T1]])
// CHECK:         %[[HI:.*]] = llvm.call_intrinsic "llvm.x86.avx512.vpermi2var.qi.512"(%[[T2]], %[[P]], %[[T3]])
// CHECK:         %[[NEG:.*]] = arith.cmpi slt, %[[P]], %{{.*}} : vector<64xi8>
// CHECK:         %[[R:.*]] = arith.select %[[NEG]], %[[HI]], %[[LO]] : vector<64xi1>, vector<64xi8>
// CHECK:         vector.shuffle %[[R]], %[[R]] [0, 1, 2,
// CHECK-NOT:     vector.gather
// AVX2-LABEL:    func.func @test_lookup
// AVX2:          vector.gather
// AVX2-NOT:      vpermi2var
memref.global "private" constant @table : memref<256xi8> = dense<7>
func.func @test_lookup(%q: vector<32xi8>, %out: memref<32xi8>) {
  %c0 = arith.constant 0 : index
  %t = memref.get_global @table : memref<256xi8>
  %i = arith.index_cast %q : vector<32xi8> to vector<32xindex>
  %zero = arith.constant dense<0> : vector<32xindex>
  %size = arith.constant dense<256> : vector<32xindex>
  %last = arith.constant dense<255> : vector<32xindex>
  %negative = arith.cmpi slt, %i, %zero : vector<32xindex>
  %wrapped = arith.addi %i, %size : vector<32xindex>
  %s = arith.select %negative, %wrapped, %i : vector<32xi1>, vector<32xindex>
  %low = arith.minsi %s, %last : vector<32xindex>
  %index = arith.maxsi %low, %zero : vector<32xindex>
  %mask = arith.constant dense<true> : vector<32xi1>
  %pass = arith.constant dense<0> : vector<32xi8>
  %g = vector.gather %t[%c0] [%index], %mask, %pass : memref<256xi8>, vector<32xindex>, vector<32xi1>, vector<32xi8> into vector<32xi8>
  vector.transfer_write %g, %out[%c0] {in_bounds = [true]} : vector<32xi8>, memref<32xi8>
  return
}

// -----

// Indices that are not safe_index of a byte (here: any index vector) keep the gather.

// CHECK-LABEL: func.func @test_other_indices
// CHECK:         vector.gather
// CHECK-NOT:     vpermi2var
memref.global "private" constant @table2 : memref<256xi8> = dense<7>
func.func @test_other_indices(%index: vector<16xindex>, %out: memref<16xi8>) {
  %c0 = arith.constant 0 : index
  %t = memref.get_global @table2 : memref<256xi8>
  %mask = arith.constant dense<true> : vector<16xi1>
  %pass = arith.constant dense<0> : vector<16xi8>
  %g = vector.gather %t[%c0] [%index], %mask, %pass : memref<256xi8>, vector<16xindex>, vector<16xi1>, vector<16xi8> into vector<16xi8>
  vector.transfer_write %g, %out[%c0] {in_bounds = [true]} : vector<16xi8>, memref<16xi8>
  return
}
