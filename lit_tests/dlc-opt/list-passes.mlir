// RUN: dlc-opt --list-passes | FileCheck %s

// Each dlc pass with its one-line description, then the named pipelines of the opt levels.
// CHECK:      dlc passes
// CHECK-DAG:  dlc-canonicalize {{.*}}Fold dlc ops
// CHECK-DAG:  dlc-to-linalg {{.*}}Lower dlc ops to linalg
// CHECK-DAG:  dlc-verify {{.*}}Verify dlc ops
// CHECK:      named pipelines
// CHECK-NEXT: -O0 builtin.module(dlc-verify,dlc-to-linalg,
// CHECK-NEXT: -O1 builtin.module(
// CHECK-NEXT: -O2 builtin.module({{.*}}dlc-fuse-elementwise
// CHECK-NEXT: -O3 builtin.module(
