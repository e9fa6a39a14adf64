//===- Syscalls.cpp - which calls are system calls ------------------------===//
#include "SysCluster/Syscalls.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"

using namespace llvm;

namespace syscluster {

namespace {
struct Entry {
  long Nr;
  unsigned Args;
};
struct Table {
  StringMap<Entry> ByName;
  DenseMap<long, StringRef> ByNr;
  struct Wrap {
    long Nr;
    bool Direct;
  };
  StringMap<Wrap> Wrapper; // glibc function -> the system call it issues
  Table() {
#define SC_SYSCALL(NR, NAME, NARGS)                                            \
  ByName[NAME] = {NR, NARGS};                                                  \
  ByNr[NR] = NAME;
#define SC_WRAPPER(FN, NR, DIRECT)
#include "Syscalls.def"
#undef SC_SYSCALL
#undef SC_WRAPPER
#define SC_SYSCALL(NR, NAME, NARGS)
#define SC_WRAPPER(FN, NR, DIRECT) Wrapper[FN] = {NR, DIRECT != 0};
#include "Syscalls.def"
#undef SC_SYSCALL
#undef SC_WRAPPER
  }
};
} // namespace

static const Table &table() {
  static const Table T;
  return T;
}

std::optional<SyscallSite> recognizeSyscall(CallBase &CB) {
  Function *F = CB.getCalledFunction();
  if (!F || !F->isDeclaration() || F->isIntrinsic())
    return std::nullopt;
  StringRef Name = F->getName();
  const Table &T = table();
  SyscallSite S;
  S.Call = &CB;
  if (Name == "syscall") {
    auto *Nr = CB.arg_size() ? dyn_cast<ConstantInt>(CB.getArgOperand(0)) : nullptr;
    if (!Nr)
      return std::nullopt;
    auto It = T.ByNr.find(Nr->getSExtValue());
    if (It == T.ByNr.end())
      return std::nullopt;
    S.Name = It->second.str();
    S.Nr = Nr->getSExtValue();
    S.FirstArg = 1;
    return S;
  }
  StringRef Base = Name;
  if (Name.starts_with("__") && Name.ends_with("_chk")) {
    Base = Name.drop_front(2).drop_back(4);
    S.Fortified = true;
  } else if (Name == "__open_2" || Name == "__openat_2") {
    Base = Name.drop_front(2).drop_back(2);
    S.Fortified = true;
  }
  // Named by the system call glibc's function issues (fstat is
  // newfstatat), as the recorder names it; else by the kernel's name.
  auto W = T.Wrapper.find(Base);
  StringRef Kernel = Base;
  if (W != T.Wrapper.end()) {
    auto N = T.ByNr.find(W->second.Nr);
    if (N == T.ByNr.end())
      return std::nullopt;
    Kernel = N->second;
  }
  auto It = T.ByName.find(Kernel);
  if (It == T.ByName.end())
    return std::nullopt;
  S.Name = Kernel.str();
  S.Nr = It->second.Nr;
  S.Direct = !S.Fortified && W != T.Wrapper.end() && W->second.Direct && !F->isVarArg() &&
             CB.arg_size() == It->second.Args;
  return S;
}

} // namespace syscluster
