// The plan reader on the plan fixtures shared with the Rust reader
// (tests/fixtures/formats/plan): the valid ones taken, the others refused.
// RUN: python3 %S/plan-fixtures.py %S/../../tests/fixtures/formats/plan %s -- %clang-sc | FileCheck %s
// CHECK: plan fixtures, 0 read differently
int main(void) { return 0; }
