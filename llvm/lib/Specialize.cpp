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

#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"

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

// ---- Descriptors registered once (libmulticall's mc_fd_register) ----
//
// An unregistered descriptor is classified in every multi-call (a statx,
// more for a pipe or a socket): a region of two writes to a file is then
// statx + writev, as many crossings as the two writes.  libmulticall
// trusts a registered descriptor's class for as long as the number names
// the same open file with the same status flags — a promise the pass can
// keep only for a descriptor no code but its own function was given.  So
// a region call's descriptor is registered when it is the function's own
// (ownDescriptor): the result of open/openat/creat in this function
// (through phis, selects and casts that keep it), whose every use is a
// comparison, a system call that keeps every descriptor as it is
// (scl_keeps_fds: read, write, lseek, fstat, …) or a region's multi-call,
// or any system call of the function that may change a descriptor
// (close, dup2/dup3, fcntl, …: every one not in scl_keeps_fds), before
// which the runtime forgets the number it may change
// (__syscluster_fd_release: its first argument, dup2's and dup3's second;
// __syscluster_fd_release_all before close_range and closefrom).  Stored,
// returned, given to another function (fdopen, a helper, isatty): not
// registered, classified in each run as before.  What is assumed is what
// every program assumes of its descriptors: code never given the number
// does not close it behind the owner's back (a program that did would
// have its own writes go to whatever file took the number).

static constexpr const char *ReleaseFn = "__syscluster_fd_release";
static constexpr const char *ReleaseAllFn = "__syscluster_fd_release_all";

static bool opensDescriptor(const SyscallSite &S) {
  return S.Name == "open" || S.Name == "openat" || S.Name == "creat";
}

/// A cast that keeps a descriptor's number: between integers of 32 bits
/// or more.
static bool keepsNumber(const Value *V) {
  auto *C = dyn_cast<CastInst>(V);
  return C && (isa<SExtInst>(C) || isa<ZExtInst>(C) || isa<TruncInst>(C)) &&
         C->getSrcTy()->isIntegerTy() && C->getDestTy()->isIntegerTy() &&
         C->getSrcTy()->getIntegerBitWidth() >= 32 && C->getDestTy()->getIntegerBitWidth() >= 32;
}

/// A store of a descriptor into the calls of a multi-call the pass made.
static bool intoCallsArray(const StoreInst *SI, const Value *V) {
  if (SI->getValueOperand() != V || SI->getPointerOperand() == V)
    return false;
  auto *A = dyn_cast<AllocaInst>(getUnderlyingObject(SI->getPointerOperand()));
  return A && A->getName().starts_with("syscluster.calls");
}

static bool isRelease(const CallBase *CB) {
  Function *F = CB->getCalledFunction();
  return F && (F->getName() == ReleaseFn || F->getName() == ReleaseAllFn);
}

std::optional<std::string> ownDescriptor(Value *V) {
  // Back to the opens it may be.
  SmallVector<Value *, 8> Work{V};
  SmallPtrSet<Value *, 16> Seen;
  SmallVector<CallBase *, 2> Opens;
  while (!Work.empty()) {
    Value *X = Work.pop_back_val();
    if (!Seen.insert(X).second)
      continue;
    if (auto *Ph = dyn_cast<PHINode>(X)) {
      for (Value *In : Ph->incoming_values())
        Work.push_back(In);
    } else if (auto *Se = dyn_cast<SelectInst>(X)) {
      Work.push_back(Se->getTrueValue());
      Work.push_back(Se->getFalseValue());
    } else if (keepsNumber(X)) {
      Work.push_back(cast<CastInst>(X)->getOperand(0));
    } else {
      auto *CB = dyn_cast<CallBase>(X);
      auto S = CB ? recognizeSyscall(*CB) : std::nullopt;
      if (!S || !opensDescriptor(*S))
        return std::nullopt;
      Opens.push_back(CB);
    }
  }
  // Forward from each open: the number (or anything computed from it:
  // clang makes `out < 0 || log < 0` one `or` and a comparison) goes to
  // nothing but comparisons, system calls and the pass's own multi-calls.
  Work.assign(Opens.begin(), Opens.end());
  Seen.clear();
  while (!Work.empty()) {
    Value *X = Work.pop_back_val();
    if (!Seen.insert(X).second)
      continue;
    for (Use &Us : X->uses()) {
      User *U = Us.getUser();
      if (isa<PHINode>(U) || isa<CastInst>(U) || isa<BinaryOperator>(U) ||
          (isa<SelectInst>(U) && cast<SelectInst>(U)->getCondition() != X)) {
        Work.push_back(U);
        continue;
      }
      if (isa<ICmpInst>(U))
        continue;
      if (auto *SI = dyn_cast<StoreInst>(U)) {
        if (intoCallsArray(SI, X))
          continue;
        return std::nullopt;
      }
      auto *CB = dyn_cast<CallBase>(U);
      if (!CB)
        return std::nullopt;
      if (isRelease(CB))
        continue;
      auto S = recognizeSyscall(*CB);
      if (!S || !CB->isArgOperand(&Us) || CB->hasOperandBundles())
        return std::nullopt;
    }
  }
  std::string Where;
  for (const CallBase *CB : Opens)
    Where += (Where.empty() ? "" : ", ") + describe(CB);
  return Where;
}

/// The system calls of F that may change what a descriptor names or its
/// status flags, each with the number (or numbers) it may change: its
/// first argument, and dup2's and dup3's second; nullptr for close_range
/// and closefrom (every number above one).
static void changers(Function &F, SmallVectorImpl<std::pair<CallBase *, Value *>> &Out) {
  for (Instruction &I : instructions(F)) {
    auto *CB = dyn_cast<CallBase>(&I);
    auto S = CB ? recognizeSyscall(*CB) : std::nullopt;
    // An open's new number was not open before it: nothing it names changes.
    if (!S || keepsDescriptors(S->Nr) || opensDescriptor(*S))
      continue;
    if (S->Name == "close_range") {
      Out.push_back({CB, nullptr});
      continue;
    }
    for (unsigned K = S->FirstArg; K < CB->arg_size() && K <= S->FirstArg + 1; ++K) {
      Value *A = CB->getArgOperand(K);
      if (K > S->FirstArg && S->Name != "dup2" && S->Name != "dup3")
        break;
      if (A->getType()->isIntegerTy() && A->getType()->getIntegerBitWidth() <= 64)
        Out.push_back({CB, A});
    }
  }
}

std::string ownDescriptors(RegionShape &Shape) {
  Shape.OwnFds = 0;
  std::string Opened;
  SmallVector<std::pair<CallBase *, Value *>, 4> Changers;
  changers(*Shape.Calls.front().Call->getFunction(), Changers);
  // A region that may itself change a descriptor (a close among its calls)
  // would have it forgotten only after the multi-call: none registered.
  for (auto &[CB, V] : Changers)
    for (const SyscallSite &R : Shape.Calls)
      if (R.Call == CB)
        return "";
  for (size_t I = 0; I < Shape.Calls.size() && I < 64; ++I) {
    if (Shape.Args[I].empty() || Shape.Args[I][0].Ref >= 0 || !Shape.Args[I][0].Literal->getType()->isIntegerTy() ||
        !keepsDescriptors(Shape.Calls[I].Nr))
      continue;
    auto Open = ownDescriptor(Shape.Args[I][0].Literal);
    if (!Open)
      continue;
    Shape.OwnFds |= 1ul << I;
    if (Opened.find(*Open) == std::string::npos)
      Opened += (Opened.empty() ? "" : ", ") + *Open;
  }
  if (!Shape.OwnFds)
    return "";
  return "its descriptors registered once per thread (mc_fd_register: classified once, not in each run): opened "
         "here (" + Opened + ") and given to nothing but system calls, the runtime told before each call of the "
         "function that may change a descriptor";
}

void releaseOwnDescriptors(RegionShape &Shape) {
  if (!Shape.OwnFds)
    return;
  Function &F = *Shape.Calls.front().Call->getFunction();
  Module &M = *F.getParent();
  LLVMContext &Ctx = M.getContext();
  Type *I64 = Type::getInt64Ty(Ctx);
  Type *Void = Type::getVoidTy(Ctx);
  FunctionCallee Release = M.getOrInsertFunction(ReleaseFn, FunctionType::get(Void, {I64}, false));
  FunctionCallee ReleaseAll = M.getOrInsertFunction(ReleaseAllFn, FunctionType::get(Void, {}, false));
  // Already released right before (an earlier region of the function).
  auto released = [&](Instruction *Before, Value *V) {
    for (Instruction *P = Before->getPrevNode(); P; P = P->getPrevNode()) {
      auto *CB = dyn_cast<CallBase>(P);
      if (CB && isRelease(CB)) {
        if (CB->arg_size() == 0)
          return true; // every number
        Value *A = CB->getArgOperand(0);
        while (keepsNumber(A))
          A = cast<CastInst>(A)->getOperand(0);
        if (A == V)
          return true;
        continue;
      }
      if (!keepsNumber(P))
        break;
    }
    return false;
  };
  SmallVector<std::pair<CallBase *, Value *>, 4> Changers;
  changers(F, Changers);
  for (auto &[CB, V] : Changers) {
    if (released(CB, V))
      continue;
    IRBuilder<> B(CB);
    B.SetCurrentDebugLocation(CB->getDebugLoc());
    if (V)
      B.CreateCall(Release, {B.CreateSExtOrTrunc(V, I64)});
    else
      B.CreateCall(ReleaseAll, {});
  }
}

} // namespace syscluster
