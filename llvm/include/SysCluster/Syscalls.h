//===- Syscalls.h - which calls are system calls --------------------------===//
//
// A call is a system call when it calls a libc function that issues one,
// fortified forms included (scl_libc_functions[] of data/gen/syscall_lists.h,
// generated from data/syscall_properties.tsv), or syscall(2) with a constant
// number of a call libc wraps.  A function defined in the module under one of
// these names is the program's own, not libc's.
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
  std::string Name; // the kernel's name (data/syscalls_x86_64.tsv): pread64 for pread
  long Nr = -1;
  unsigned FirstArg = 0; // 1 for syscall(2): its arguments follow the number
  bool Fortified = false;
  /// The callee is a glibc function that issues exactly this system call
  /// with the same arguments and returns its result (scl_libc_functions[]'s
  /// `direct`, decided by scripts/gen-syscall-lists.py from
  /// data/syscall_properties.tsv; the call passes the kernel's number of
  /// arguments): the pass may run the system call in its place.
  bool Direct = false;
};

std::optional<SyscallSite> recognizeSyscall(llvm::CallBase &CB);

/// Whether system call Nr leaves every descriptor naming what it named,
/// with its status flags (scl_keeps_fds of data/gen/syscall_lists.h).
bool keepsDescriptors(long Nr);

/// Whether Name is one of libc's functions that issue a system call (or
/// syscall(2)): never a program's wrapper defined elsewhere, even where
/// recognizeSyscall cannot say which call it makes (a variable number).
bool isLibcSyscallFunction(llvm::StringRef Name);

} // namespace syscluster

#endif
