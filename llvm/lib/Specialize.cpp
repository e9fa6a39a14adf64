//===- Specialize.cpp - value specialization of straight-line regions -----===//
//
// §3.4, seed 004 §4.2: where the plan's value profile shows an argument
// constant, a guarded fast path for it.  A straight-line region's calls
// are passed as they are, so a constant count or offset changes no proof
// there; what a value does change is whether a fusion rule applies: the
// rules (writev, readv, preadv, pwritev, lseek+pread) need the calls on
// one descriptor.  Where the code does not prove the descriptors one (two
// parameters, two variables) but the profile shows every call of the
// cluster on the same descriptor, the region is replaced for that case:
// the runtime's guard (__syscluster_run_one_fd, llvm/runtime/region.c)
// runs the multi-call when the descriptors are equal at run time, and the
// calls as written, one system call each, when they are not.
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

namespace syscluster {

/// Marks Shape specialized for one descriptor when the profile says so;
/// returns the sentence for the remark, or empty.
std::string specializeDescriptors(const PlanCluster &C, RegionShape &Shape) {
  std::string Rule = fusionRule(Shape);
  if (Rule.empty())
    return "";
  // Every call's descriptor: a literal argument (not a result reference),
  // whose profiled value is the same for every call of the cluster.
  std::optional<int64_t> Fd;
  for (size_t I = 0; I < Shape.Calls.size(); ++I) {
    if (Shape.Args[I].empty() || Shape.Args[I][0].Ref >= 0)
      return "";
    std::optional<int64_t> V;
    for (const PlanCall &PC : C.Calls)
      if (PC.Syscall == Shape.Calls[I].Name)
        for (const auto &[Name, Value] : PC.Args)
          if (Name == "fd")
            V = Value;
    if (!V || (Fd && *Fd != *V))
      return "";
    Fd = V;
  }
  Shape.Rule = Rule;
  Shape.OneFdGuard = true;
  Shape.NoRuleWhy.clear();
  return "specialized (§3.4) for one descriptor, the plan's value profile (fd " + std::to_string(*Fd) +
         " in most calls): a guard runs the calls as written when their descriptors differ";
}

} // namespace syscluster
