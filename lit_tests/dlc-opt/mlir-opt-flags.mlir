// dlc-opt takes mlir-opt's command line: one-dash long options, passes as flags (upstream and
// dlc passes, with options, run in the order given) and the printing flags.
// RUN: dlc-opt %s -split-input-file -allow-unregistered-dialect -canonicalize -cse | FileCheck %s
// RUN: dlc-opt %s -split-input-file -allow-unregistered-dialect -mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: dlc-opt %s -split-input-file -allow-unregistered-dialect -canonicalize="max-iterations=1" -dlc-to-linalg -dump-pass-pipeline 2>&1 >/dev/null | FileCheck %s --check-prefix=PIPE
// RUN: not dlc-opt %s -split-input-file 2>&1 | FileCheck %s --check-prefix=UNREG
// RUN: not dlc-opt %s -pass-pipeline='builtin.module(cse)' -cse 2>&1 | FileCheck %s --check-prefix=BOTH

// PIPE: builtin.module(canonicalize{max-iterations=1},dlc-to-linalg)
// BOTH: dlc-opt: error: '-pass-pipeline' option can't be used with individual pass options

// CHECK-LABEL: func.func @cse
// CHECK-NEXT:    %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT:    %[[M:.*]] = arith.muli %{{.*}}, %[[C3]] : i32
// CHECK-NEXT:    %[[S:.*]] = arith.addi %[[M]], %[[M]] : i32
// CHECK-NEXT:    return %[[S]] : i32
// GENERIC-LABEL: "func.func"() <{function_type = (i32) -> i32, sym_name = "cse"}>
func.func @cse(%a: i32) -> i32 {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %s = arith.addi %c1, %c2 : i32
  %x = arith.muli %a, %s : i32
  %y = arith.muli %a, %s : i32
  %z = arith.addi %x, %y : i32
  return %z : i32
}

// -----

// CHECK:       // -----
// CHECK-LABEL: func.func @unregistered
// Unregistered ops may have side effects: CSE keeps both.
// CHECK-NEXT:    %[[R0:.*]] = "foo.bar"(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:    %[[R1:.*]] = "foo.bar"(%{{.*}}) : (f32) -> f32
// CHECK-NEXT:    "foo.sink"(%[[R0]], %[[R1]]) : (f32, f32) -> ()
// GENERIC:     "foo.bar"
// UNREG: mlir-opt-flags.mlir:[[# @LINE + 2]]:17: error: operation being parsed with an unregistered dialect
func.func @unregistered(%a: f32) {
  %0 = "foo.bar"(%a) : (f32) -> f32
  %1 = "foo.bar"(%a) : (f32) -> f32
  "foo.sink"(%0, %1) : (f32, f32) -> ()
  return
}
