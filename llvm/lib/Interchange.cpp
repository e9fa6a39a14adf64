//===- Interchange.cpp - stores moved past a region's later calls (§3.3.1) -===//
//
// Seed 000 §3.3.1: `read_bytes += n; block_sent++;` between `write` and
// `sendto` are independent of `sendto`, have no side effect beyond their own
// store and terminate, so they may run after it.  A region's calls all run
// at its first call's place (the multi-call); a store left where it is runs
// after them and before every check of a later call, so a handler that does
// not return (§3.3.2) still sees it, as it did.  What must be proved is that
// no later call of the region reads or writes the memory stored to.
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/Analysis/CaptureTracking.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/DebugInfo.h"

namespace syscluster {

namespace {
/// The variable a store writes: a global of this translation unit or a
/// local (or null), through constant offsets and casts.
const Value *storedObject(const StoreInst *SI) {
  const Value *O = getUnderlyingObject(SI->getPointerOperand());
  if (auto *G = dyn_cast<GlobalVariable>(O); G && !G->isConstant())
    return G;
  if (isa<AllocaInst>(O))
    return O;
  return nullptr;
}

/// A variable's name: the global's, or the local's from its debug info.
std::string nameOf(const Value *O) {
  if (O->hasName())
    return O->getName().str();
  Value *V = const_cast<Value *>(O);
  for (DbgVariableRecord *R : findDVRDeclares(V))
    return "the local " + R->getVariable()->getName().str();
  for (DbgDeclareInst *D : findDbgDeclares(V))
    return "the local " + D->getVariable()->getName().str();
  if (auto *I = dyn_cast<Instruction>(O)) // assignment tracking (clang -O2 -g)
    for (DbgVariableRecord *R : at::getDVRAssignmentMarkers(I))
      return "the local " + R->getVariable()->getName().str();
  return "a local";
}

/// Whether pointer P may point into O, an object whose address is never
/// captured: only a pointer computed from O itself can; an argument, a
/// loaded pointer or a call's result cannot, nor another variable.
bool mayPointInto(const Value *P, const Value *O) {
  SmallVector<const Value *, 4> Objs;
  getUnderlyingObjects(P, Objs, nullptr, 8);
  for (const Value *U : Objs) {
    if (U == O)
      return true;
    if (isa<Argument>(U) || isa<LoadInst>(U) || isa<ConstantPointerNull>(U) || isa<UndefValue>(U) ||
        isa<GlobalValue>(U) || isa<AllocaInst>(U))
      continue;
    if (auto *CB = dyn_cast<CallBase>(U); CB && !CB->getReturnedArgOperand())
      continue;
    return true; // not traced to its object: it may be O
  }
  return false;
}
} // namespace

/// Whether store SI, between a region's calls, may run after Later (the
/// region's calls that follow it): a simple store to a variable of the
/// program that none of them can read or write (§3.3.1's independence).
std::optional<Refusal> storeMovesPast(const StoreInst *SI, ArrayRef<SyscallSite> Later, AAResults &AA) {
  std::string What = describe(SI);
  if (!SI->isSimple())
    return Refusal{"convexity", What + " is a volatile or atomic store between the calls: its order with the "
                                       "system calls is observable, it cannot move past them"};
  if (isErrno(SI->getPointerOperand()))
    return Refusal{"convexity", What + " writes errno between the calls: the calls set it"};
  const Value *Obj = storedObject(SI);
  MemoryLocation Loc = MemoryLocation::get(SI);
  // First what aliases, named: a later call's pointer argument that may
  // point to it.  A system call reaches the program's memory only through
  // its arguments: directly, or through pointers in the memory they point
  // to, which needs the variable's address to escape (refused below).
  for (const SyscallSite &S : Later)
    for (unsigned K = S.FirstArg; K < S.Call->arg_size(); ++K) {
      Value *A = S.Call->getArgOperand(K);
      if (A->getType()->isPointerTy() && !AA.isNoAlias(MemoryLocation::getBeforeOrAfter(A), Loc) &&
          (!Obj || mayPointInto(A, Obj)))
        return Refusal{"convexity", What + " writes memory that argument " + Twine(K - S.FirstArg + 1).str() +
                                        " of " + describe(S.Call) +
                                        " may point to: it cannot move past that call (§3.3.1)"};
    }
  if (!Obj)
    return Refusal{"convexity", What + " writes through a pointer that is not a variable of this translation "
                                       "unit (a global or a local): it cannot move past the calls (§3.3.1)"};
  auto *G = dyn_cast<GlobalVariable>(Obj);
  if (G && !G->hasLocalLinkage())
    return Refusal{"convexity", What + " writes " + nameOf(Obj) + ", a global other translation units see: "
                                       "its address may be held in memory a later call follows (an iovec, a "
                                       "msghdr), so it cannot move past the calls (make it static)"};
  if (PointerMayBeCaptured(Obj, /*ReturnCaptures=*/true, /*StoreCaptures=*/true))
    return Refusal{"convexity", What + " writes " + nameOf(Obj) + ", whose address escapes: a later call may "
                                       "reach it through memory it is given, so it cannot move past the calls"};
  return std::nullopt;
}

/// Whether pointer P cannot point into Loc: Loc lies in a variable of this
/// translation unit (a static global or a local) whose address never
/// escapes, and P is not computed from it.  LLVM's alias analysis does not
/// know that a buffer argument cannot hold the address of a static counter.
bool provedApart(const Value *P, const MemoryLocation &Loc) {
  return privateVariable(Loc) && !mayPointInto(P, getUnderlyingObject(Loc.Ptr));
}

/// Whether Loc lies in a static global or a local whose address never
/// escapes: no memory and no integer holds its address.
bool privateVariable(const MemoryLocation &Loc) {
  const Value *O = getUnderlyingObject(Loc.Ptr);
  auto *G = dyn_cast<GlobalVariable>(O);
  if (!(G && G->hasLocalLinkage()) && !isa<AllocaInst>(O))
    return false;
  return !PointerMayBeCaptured(O, /*ReturnCaptures=*/true, /*StoreCaptures=*/true);
}

/// The object a store moved past the calls writes, for its remark.
std::string storedName(const StoreInst *SI) {
  const Value *O = storedObject(SI);
  return O ? nameOf(O) : "memory";
}

} // namespace syscluster
