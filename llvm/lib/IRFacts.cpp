//===- IRFacts.cpp - facts about the IR the conditions are decided from --===//
//
// Where a call's buffer may be written, what a branch tests, whether a
// block returns, what a call's result can be and which checks of it are
// error exits (§3.3.2), what code may move (§3.3.1).
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/Analysis/MemorySSA.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/Support/Path.h"

namespace syscluster {

std::string at(const Instruction *I) {
  if (const DebugLoc &DL = I->getDebugLoc())
    return (sys::path::filename(DL->getFilename()) + ":" + Twine(DL.getLine())).str();
  return "<no line>";
}

std::string describe(const Site &S) {
  return S.S.Name + " at " + at(S.S.Call);
}

std::string describe(const Instruction *I) {
  std::string What;
  if (auto *CB = dyn_cast<CallBase>(I)) {
    if (Function *F = CB->getCalledFunction())
      What = "call to " + F->getName().str();
    else
      What = "indirect call";
  } else {
    What = I->getOpcodeName();
  }
  return What + " at " + at(I);
}

bool functionMatches(StringRef Want, const Instruction *I) {
  if (Want.empty() || I->getFunction()->getName() == Want)
    return true;
  for (const DILocation *DL = I->getDebugLoc().get(); DL; DL = DL->getInlinedAt())
    if (const DISubprogram *SP = DL->getScope()->getSubprogram())
      if (SP->getName() == Want || SP->getLinkageName() == Want)
        return true;
  return false;
}

/// The memory a system call may write, as far as this pass knows it: the
/// buffer of a read-like call (its count bytes), else anything it is given.
bool mayWrite(const SyscallSite &S, const MemoryLocation &Loc, AAResults &AA) {
  CallBase *CB = S.Call;
  if (S.Name == "write" || S.Name == "close" || S.Name == "lseek")
    return false; // they write no user memory
  if ((S.Name == "read" || S.Name == "pread64") && CB->arg_size() >= S.FirstArg + 3) {
    Value *Buf = CB->getArgOperand(S.FirstArg + 1);
    LocationSize Size = LocationSize::beforeOrAfterPointer();
    if (auto *N = dyn_cast<ConstantInt>(CB->getArgOperand(S.FirstArg + 2)))
      Size = LocationSize::precise(N->getZExtValue());
    return !AA.isNoAlias(MemoryLocation(Buf, Size), Loc) && !provedApart(Buf, Loc);
  }
  // A system call reaches the program's memory only through its arguments.
  if (all_of(CB->args(), [&](const Use &A) { return !A->getType()->isPointerTy() || provedApart(A, Loc); }) &&
      privateVariable(Loc))
    return false;
  return isModSet(AA.getModRefInfo(CB, Loc));
}

/// V through operations that do not change a value known to lie in
/// [-1, Max] (Positive: in [1, Max]): truncations that keep Max's bits and
/// the sign, sign extensions, and — for positive values — zero extensions
/// and masks that keep every bit Max can have.  Returns the value beneath.
const Value *throughLossless(const Value *V, uint64_t Max, bool Positive) {
  for (;;) {
    if (auto *T = dyn_cast<TruncInst>(V)) {
      unsigned Bits = T->getType()->getIntegerBitWidth();
      if (Bits > 64 || Bits < 2 || Max >= (uint64_t(1) << (Bits - 1)))
        return V;
      V = T->getOperand(0);
    } else if (auto *S = dyn_cast<SExtInst>(V)) {
      V = S->getOperand(0);
    } else if (auto *Z = dyn_cast<ZExtInst>(V); Z && Positive) {
      V = Z->getOperand(0);
    } else if (auto *B = dyn_cast<BinaryOperator>(V);
               B && Positive && B->getOpcode() == Instruction::And) {
      auto *M = dyn_cast<ConstantInt>(B->getOperand(1));
      uint64_t Need = Max == 0 ? 0 : (~uint64_t(0) >> countl_zero(Max));
      if (!M || (M->getZExtValue() & Need) != Need)
        return V;
      V = B->getOperand(0);
    } else {
      return V;
    }
  }
}

/// The test of a conditional branch Br as "V P C" that holds exactly when
/// Br goes to To (V the compared value, C an integer constant); nothing for
/// another branch.
namespace {
struct BranchTest {
  const Value *V;
  CmpInst::Predicate P;
  const ConstantInt *C;
};
std::optional<BranchTest> testTowards(const BranchInst *Br, const BasicBlock *To) {
  if (!Br || !Br->isConditional() || Br->getSuccessor(0) == Br->getSuccessor(1))
    return std::nullopt;
  auto *Cmp = dyn_cast<ICmpInst>(Br->getCondition());
  if (!Cmp || (Br->getSuccessor(0) != To && Br->getSuccessor(1) != To))
    return std::nullopt;
  CmpInst::Predicate P = Cmp->getPredicate();
  const Value *L = Cmp->getOperand(0), *R = Cmp->getOperand(1);
  if (isa<ConstantInt>(L)) {
    std::swap(L, R);
    P = CmpInst::getSwappedPredicate(P);
  }
  if (Br->getSuccessor(0) != To)
    P = CmpInst::getInversePredicate(P);
  auto *C = dyn_cast<ConstantInt>(R);
  if (!C)
    return std::nullopt;
  return BranchTest{L, P, C};
}
} // namespace

/// Whether Br continues to Body exactly when Result > 0, where Result is
/// the value of a read whose count is Max (so it lies in [-1, Max]).
bool continuesWhilePositive(const BranchInst *Br, const BasicBlock *Body,
                            const Value *Result, uint64_t Max) {
  auto T = testTowards(Br, Body);
  if (!T || throughLossless(T->V, Max, false) != Result)
    return false;
  return (T->P == CmpInst::ICMP_SGT && T->C->isZero()) || (T->P == CmpInst::ICMP_SGE && T->C->isOne());
}

/// A call that never returns (exit, abort, err, __assert_fail, ...).
bool doesNotReturn(const BasicBlock *BB) {
  for (const Instruction &I : *BB)
    if (auto *CB = dyn_cast<CallBase>(&I))
      if (CB->doesNotReturn())
        return true;
  return false;
}

/// The largest value a system call's result can have: the count of a
/// read or write with a constant one, else what its type holds.
uint64_t maxResult(const SyscallSite &S) {
  CallBase *CB = S.Call;
  if ((S.Name == "read" || S.Name == "write" || S.Name == "pread64" || S.Name == "pwrite64") &&
      CB->arg_size() >= S.FirstArg + 3)
    if (auto *N = dyn_cast<ConstantInt>(CB->getArgOperand(S.FirstArg + 2)))
      return N->getZExtValue();
  if (CB->getType()->isIntegerTy(32))
    return uint64_t(INT32_MAX);
  return uint64_t(INT64_MAX);
}

/// Whether Br leaves a chain that goes on to Next exactly when system call
/// X failed (its result, -1 from libc, is negative), for a block that does
/// not return: the error check that the mutually exclusive restructuring of
/// §3.3.2 moves out of a region (the call becomes a checked call, MC_CHECK,
/// and the check stays where it was, on the call's result).  AnyHandler:
/// the caller proved by itself that the handler never leads back (a copy
/// loop's handler that leaves the loop, CheckedLoop.cpp).
bool isFailureExit(const BranchInst *Br, const BasicBlock *Next, const SyscallSite &X, bool AnyHandler) {
  if (!Br || !Br->isConditional() || Br->getSuccessor(0) == Br->getSuccessor(1))
    return false;
  unsigned NextIdx = Br->getSuccessor(0) == Next ? 0 : Br->getSuccessor(1) == Next ? 1 : 2;
  if (NextIdx == 2)
    return false;
  const BasicBlock *Handler = Br->getSuccessor(1 - NextIdx);
  auto T = testTowards(Br, Handler);
  if (!T || !(AnyHandler || doesNotReturn(Handler)) || throughLossless(T->V, maxResult(X), false) != X.Call)
    return false;
  // Taken iff the result is negative: libc's results are -1 or >= 0.
  return (T->P == CmpInst::ICMP_SLT && T->C->isZero()) || (T->P == CmpInst::ICMP_SLE && T->C->isMinusOne()) ||
         (T->P == CmpInst::ICMP_EQ && T->C->isMinusOne());
}

bool isTransfer(const SyscallSite &S) {
  return S.Name == "read" || S.Name == "write" || S.Name == "pread64" || S.Name == "pwrite64";
}

/// What a call asks for, as its result gives it back in full: the count
/// argument of a read or write (its third: the result lies in [-1, count]),
/// the offset of lseek(fd, offset, SEEK_SET) (the result is -1 or it); or
/// null.  libmulticall's MC_CHECK_FULL compares the result with the same
/// argument.
const Value *countOf(const SyscallSite &S) {
  CallBase *CB = S.Call;
  if (CB->arg_size() < S.FirstArg + 3 || !CB->getArgOperand(S.FirstArg + 2)->getType()->isIntegerTy())
    return nullptr;
  if (isTransfer(S) && CB->getArgOperand(S.FirstArg + 2)->getType()->isIntegerTy(64))
    return CB->getArgOperand(S.FirstArg + 2);
  auto *Whence = dyn_cast<ConstantInt>(CB->getArgOperand(S.FirstArg + 2));
  if (S.Name == "lseek" && Whence && Whence->isZero() &&
      CB->getArgOperand(S.FirstArg + 1)->getType()->isIntegerTy(64))
    return CB->getArgOperand(S.FirstArg + 1);
  return nullptr;
}

/// Whether a count (as a long) is known not to be negative: then a failed
/// call's -1 never equals it.
bool countNonNegative(const Value *Count, const DataLayout &DL) {
  return Count && isKnownNonNegative(Count, SimplifyQuery(DL));
}

/// Whether Res compared with N at Res's width is the call X's libc result
/// compared with its count: Res is X's result (or a truncation of it to 32
/// bits or more: a transfer is at most 0x7ffff000 bytes, so -1 and every
/// count it can reach keep their value), and N is the count, or what the
/// count sign-extends (a constant of the same value included).
static bool comparesWithCount(const Value *Res, const Value *N, const SyscallSite &X) {
  const Value *Count = countOf(X);
  if (!Count)
    return false;
  if (Res == X.Call)
    return N == Count;
  auto *T = dyn_cast<TruncInst>(Res);
  if (!T || T->getOperand(0) != X.Call || T->getType()->getIntegerBitWidth() < 32 || !isTransfer(X))
    return false;
  if (auto *S = dyn_cast<SExtInst>(Count))
    return S->getOperand(0) == N;
  auto *CN = dyn_cast<ConstantInt>(N);
  auto *CC = dyn_cast<ConstantInt>(Count);
  return CN && CC && CN->getSExtValue() == CC->getSExtValue();
}

/// Whether Br leaves a chain that goes on to Next exactly when system call
/// X did not transfer its whole count, for a block that does not return:
/// `if (write(fd, buf, n) != n) err(...)` (or `< n` where n is not
/// negative: the result is at most n), which treats a short transfer as an
/// error, and a failure too; so for `lseek(fd, pos, SEEK_SET) != pos`.
/// CountPositive: the caller proved the count > 0 (a copy loop's write of
/// a read result tested > 0).  §3.3.2 as for isFailureExit; the call gets
/// libmulticall's MC_CHECK_FULL, which stops the multi-call on exactly that
/// test (a failure counting as libc's -1).
bool isShortExit(const BranchInst *Br, const BasicBlock *Next, const SyscallSite &X, const DataLayout &DL,
                 bool CountPositive, bool AnyHandler) {
  if (!Br || !Br->isConditional() || Br->getSuccessor(0) == Br->getSuccessor(1))
    return false;
  unsigned NextIdx = Br->getSuccessor(0) == Next ? 0 : Br->getSuccessor(1) == Next ? 1 : 2;
  if (NextIdx == 2 || !(AnyHandler || doesNotReturn(Br->getSuccessor(1 - NextIdx))))
    return false;
  auto *Cmp = dyn_cast<ICmpInst>(Br->getCondition());
  if (!Cmp)
    return false;
  // The predicate that holds exactly when the branch goes to the handler.
  CmpInst::Predicate P = NextIdx == 1 ? Cmp->getPredicate() : Cmp->getInversePredicate();
  const Value *L = Cmp->getOperand(0), *R = Cmp->getOperand(1);
  for (int Swap = 0; Swap < 2; ++Swap) {
    if (comparesWithCount(L, R, X)) {
      if (P == CmpInst::ICMP_NE)
        return true;
      // result < count, with the result in [-1, count] and count >= 0.
      if (P == CmpInst::ICMP_SLT && (CountPositive || countNonNegative(countOf(X), DL)))
        return true;
    }
    std::swap(L, R);
    P = CmpInst::getSwappedPredicate(P);
  }
  return false;
}

/// Whether the pure instruction I, computed between a region's calls, is a
/// function of values from before the region only (InRegion: what lies
/// between): then it can move in front of the region (§3.3.1: no side
/// effects, it terminates, it does not depend on the calls) — clang often
/// leaves a count's `sext` next to the call that uses it.  Appends what
/// moves to Order, operands first.
bool movesBefore(Instruction *I, const SmallPtrSetImpl<const Instruction *> &InRegion,
                 SmallVectorImpl<Instruction *> &Order, unsigned Depth) {
  if (Depth > 4 || isa<PHINode>(I) || I->mayHaveSideEffects() || I->mayReadOrWriteMemory() ||
      !isSafeToSpeculativelyExecute(I) || isa<CallBase>(I))
    return false;
  for (Value *Op : I->operands())
    if (auto *OI = dyn_cast<Instruction>(Op); OI && InRegion.count(OI) && !is_contained(Order, OI))
      if (!movesBefore(OI, InRegion, Order, Depth + 1))
        return false;
  if (!is_contained(Order, I))
    Order.push_back(I);
  return true;
}

/// Whether V is the address of errno (or within it): libc's wrappers write
/// it, so no load of it moves across a system call.
bool isErrno(const Value *V) {
  auto *CB = dyn_cast<CallBase>(getUnderlyingObject(V));
  Function *F = CB ? CB->getCalledFunction() : nullptr;
  return F && F->getName() == "__errno_location";
}

/// Whether A and B are one value where the later is used: the same SSA
/// value, or two simple loads of one address and type (clang loads a
/// global descriptor again after each call to libc) with nothing between
/// them that may write it.  The memory writes between are MemorySSA's
/// definitions from the later load up to the earlier's; a system call
/// writes no memory of the program but what mayWrite says (its buffer),
/// any other instruction what alias analysis says.  A join (MemoryPhi) on
/// the way is not followed.
bool sameValue(const Value *A, const Value *B, DominatorTree &DT, MemorySSA &MSSA, AAResults &AA) {
  if (A == B)
    return true;
  auto *LA = dyn_cast<LoadInst>(A), *LB = dyn_cast<LoadInst>(B);
  if (!LA || !LB || !LA->isSimple() || !LB->isSimple() || LA->getType() != LB->getType() ||
      LA->getPointerOperand()->stripPointerCasts() != LB->getPointerOperand()->stripPointerCasts())
    return false;
  if (!DT.dominates(LA, LB)) {
    if (!DT.dominates(LB, LA))
      return false;
    std::swap(LA, LB);
  }
  MemoryUseOrDef *UA = MSSA.getMemoryAccess(LA), *UB = MSSA.getMemoryAccess(LB);
  if (!UA || !UB)
    return false;
  MemoryLocation Loc = MemoryLocation::get(LB);
  MemoryAccess *Stop = UA->getDefiningAccess(), *D = UB->getDefiningAccess();
  for (unsigned Steps = 0; D != Stop; ++Steps) {
    auto *Def = dyn_cast<MemoryDef>(D);
    if (!Def || MSSA.isLiveOnEntryDef(Def) || Steps > 64)
      return false;
    Instruction *I = Def->getMemoryInst();
    auto *CB = dyn_cast<CallBase>(I);
    if (auto S = CB ? recognizeSyscall(*CB) : std::nullopt) {
      if (mayWrite(*S, Loc, AA))
        return false;
    } else if (isModSet(AA.getModRefInfo(I, Loc))) {
      return false;
    }
    D = Def->getDefiningAccess();
  }
  return true;
}

/// A straight-line region as the replacement needs it (fig. 7): the calls
/// in order, which are checked (§3.3.2), where each argument comes from,

} // namespace syscluster
