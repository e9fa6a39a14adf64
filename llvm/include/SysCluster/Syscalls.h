//===- Syscalls.h - which calls are system calls --------------------------===//
//
// A call is a system call when it calls libc's wrapper of one (the libc
// column of data/syscall_properties.tsv, else the names of
// data/syscalls_x86_64.tsv, generated into Syscalls.def), its fortified
// form (__NAME_chk, __open_2, __openat_2) or syscall(2) with a constant
// number.  A function defined in the module under one of these names is the
// program's own, not libc's.
//
//===----------------------------------------------------------------------===//
#ifndef SYSCLUSTER_SYSCALLS_H
#define SYSCLUSTER_SYSCALLS_H

#include "llvm/IR/InstrTypes.h"
#include <optional>
#include <string>

namespace syscluster {

struct SyscallSite {
  llvm::CallBase *Call = nullptr;
  std::string Name; // the kernel's name (data/syscalls_x86_64.tsv)
  long Nr = -1;
  unsigned FirstArg = 0; // 1 for syscall(2): its arguments follow the number
  bool Fortified = false;
  /// The callee is a glibc function that issues exactly this system call
  /// with the same arguments and returns its result (scripts/gen-llvm-
  /// syscalls.py decides which, from data/syscall_properties.tsv; the call
  /// passes the kernel's number of arguments): the pass may run the system
  /// call in its place.
  bool Direct = false;
};

std::optional<SyscallSite> recognizeSyscall(llvm::CallBase &CB);

} // namespace syscluster

#endif
