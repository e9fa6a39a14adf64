//===- SysCluster.cpp - clusters of a plan, decided on the IR -------------===//
//
// What it does today (seed 000 §3):
//  - matches every cluster's locations to call sites (file by path suffix,
//    line, function; the source line's hash against the plan's source_hash);
//  - for each pair of the cluster's calls, decides the five conditions of
//    §3.2 (dominance, safety, convexity, argument safety, linearity) and
//    says which fails;
//  - replaces the rotated copy loop (§3.3.3: write followed by read in one
//    block, looping while read returns > 0) by a looped multi-call (§3.4)
//    when it proves that nothing observable changes;
//  - grows straight-line regions over the clusterable edges, heaviest
//    first (fig. 6), error checks to handlers that do not return made
//    checked calls (§3.3.2), and replaces each by one mc_run with result
//    references (fig. 7) when it proves the replacement and the
//    calibration says it gains.
// Anything else stays as it was, with a remark saying why.
//
//===----------------------------------------------------------------------===//
#include "SysCluster/SysCluster.h"
#include "SysCluster/Calibration.h"
#include "SysCluster/Plan.h"
#include "SysCluster/Syscalls.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/AssumptionCache.h"
#include "llvm/Analysis/Loads.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using namespace syscluster;

static cl::opt<std::string>
    PlanPath("syscluster-plan",
             cl::desc("apply the clusters of this plan (syscluster advise --plan-out)"),
             cl::value_desc("file"), cl::init(""));

static cl::opt<std::string> CalibrationPath(
    "syscluster-calibration",
    cl::desc("libmulticall's calibration of the target host (default: where libmulticall looks; "
             "'none': no calibration)"),
    cl::value_desc("file"), cl::init(""));

static cl::opt<bool> AssumeGain(
    "syscluster-assume-gain",
    cl::desc("replace regions the calibration shows no gain for (hosts with the kernel module)"),
    cl::init(false));

static const char *const PassName = "syscluster";

namespace {

/// A system call site with the source location it came from.
struct Site {
  SyscallSite S;
  std::string File;     // as the debug info names it (relative to the build)
  std::string FullPath; // directory + file, to read the source
  unsigned Line = 0;
};

/// Why a region was refused: the condition of §3.2 (or the replacement's
/// own proof) that failed, and what in the code made it fail.
struct Refusal {
  std::string Condition;
  std::string Detail;
};

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
    return !AA.isNoAlias(MemoryLocation(Buf, Size), Loc);
  }
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
/// and the check stays where it was, on the call's result).
bool isFailureExit(const BranchInst *Br, const BasicBlock *Next, const SyscallSite &X) {
  if (!Br || !Br->isConditional() || Br->getSuccessor(0) == Br->getSuccessor(1))
    return false;
  unsigned NextIdx = Br->getSuccessor(0) == Next ? 0 : Br->getSuccessor(1) == Next ? 1 : 2;
  if (NextIdx == 2)
    return false;
  const BasicBlock *Handler = Br->getSuccessor(1 - NextIdx);
  auto T = testTowards(Br, Handler);
  if (!T || !doesNotReturn(Handler) || throughLossless(T->V, maxResult(X), false) != X.Call)
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
bool comparesWithCount(const Value *Res, const Value *N, const SyscallSite &X) {
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
/// error, and a failure too; so for `lseek(fd, pos, SEEK_SET) != pos`.  §3.3.2 as for isFailureExit; the call gets
/// libmulticall's MC_CHECK_FULL, which stops the multi-call on exactly that
/// test (a failure counting as libc's -1).
bool isShortExit(const BranchInst *Br, const BasicBlock *Next, const SyscallSite &X, const DataLayout &DL) {
  if (!Br || !Br->isConditional() || Br->getSuccessor(0) == Br->getSuccessor(1))
    return false;
  unsigned NextIdx = Br->getSuccessor(0) == Next ? 0 : Br->getSuccessor(1) == Next ? 1 : 2;
  if (NextIdx == 2 || !doesNotReturn(Br->getSuccessor(1 - NextIdx)))
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
      if (P == CmpInst::ICMP_SLT && countNonNegative(countOf(X), DL))
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
                 SmallVectorImpl<Instruction *> &Order, unsigned Depth = 0) {
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

/// A straight-line region as the replacement needs it (fig. 7): the calls
/// in order, which are checked (§3.3.2), where each argument comes from,
/// and the loads that move in front of the multi-call (§3.3.1).
struct RegionShape {
  struct Arg {
    Value *Literal = nullptr; // defined before the region (or a hoisted load)
    int Ref = -1;             // else: the result of call Ref
  };
  SmallVector<SyscallSite, 4> Calls;
  SmallVector<bool, 4> Checked; // MC_CHECK: a failure leaves for a handler
  SmallVector<bool, 4> Full;    // MC_CHECK_FULL: a short transfer (or a failure) does
  SmallVector<SmallVector<Arg, 6>, 4> Args;
  SmallVector<LoadInst *, 4> Hoist;
  SmallVector<Instruction *, 4> Moved; // pure code on values from before the region, operands first
  std::string Rule; // the fusion rule that may merge the calls ("writev"), or empty
};

class ClusterPass {
public:
  ClusterPass(Module &M, FunctionAnalysisManager &FAM) : M(M), FAM(FAM) {}
  bool run(const Plan &P);

private:
  Module &M;
  FunctionAnalysisManager &FAM;
  std::vector<Site> Sites;
  SmallPtrSet<Function *, 8> Changed;
  // Calls already replaced (erased: compared, never dereferenced) → the
  // multi-call that replaced them and its cluster.
  DenseMap<const CallBase *, std::pair<Instruction *, unsigned>> Replaced;
  // The host's calibration, read at the first region that needs it.
  bool CalibrationRead = false;
  std::optional<Calibration> Cal;
  std::string CalibrationError;
  const Calibration *calibration();

  OptimizationRemarkEmitter &ore(Function &F) {
    return FAM.getResult<OptimizationRemarkEmitterAnalysis>(F);
  }
  void missed(const Instruction *I, StringRef Name, const Twine &Msg) {
    ore(*const_cast<Function *>(I->getFunction())).emit([&] {
      return OptimizationRemarkMissed(PassName, Name, I) << Msg.str();
    });
  }
  void analysis(const Instruction *I, StringRef Name, const Twine &Msg) {
    ore(*const_cast<Function *>(I->getFunction())).emit([&] {
      return OptimizationRemarkAnalysis(PassName, Name, I) << Msg.str();
    });
  }
  void missedIn(Function &F, StringRef Name, const Twine &Msg) {
    ore(F).emit([&] {
      return OptimizationRemarkMissed(PassName, Name, DiagnosticLocation(F.getSubprogram()),
                                      &F.getEntryBlock())
             << Msg.str();
    });
  }

  void collectSites();
  void applyCluster(const PlanCluster &C);
  std::optional<Refusal> checkPair(const Site &A, const Site &B);
  std::optional<Refusal> checkWriteReadLoop(const Site &W, const Site &R, const PlanCluster &C, uint64_t &Spec);
  std::optional<Refusal> gainCalibration(StringRef Unit, const Calibration *&C, std::string &Estimate);
  std::optional<Refusal> checkGain(const Site &R, uint64_t Spec, uint64_t Blocks, unsigned long &MinBlocks,
                                   std::string &Estimate);
  Instruction *replaceWriteReadLoop(const Site &W, const Site &R, unsigned long MinBlocks, uint64_t Spec);
  std::optional<Refusal> checkRegion(ArrayRef<const Site *> R, RegionShape &Shape);
  std::optional<Refusal> checkRegionGain(const RegionShape &Shape, uint64_t Runs, unsigned long &MinRuns,
                                         std::string &Estimate);
  Instruction *replaceRegion(RegionShape &Shape, unsigned long MinRuns);
  void applyRegions(const PlanCluster &C, const std::string &Name,
                    std::vector<std::tuple<const Site *, const Site *, uint64_t>> &Edges,
                    const DenseMap<const Site *, uint64_t> &Recorded);
};

void ClusterPass::collectSites() {
  for (Function &F : M)
    for (Instruction &I : instructions(F)) {
      auto *CB = dyn_cast<CallBase>(&I);
      if (!CB)
        continue;
      auto S = recognizeSyscall(*CB);
      const DebugLoc &DL = CB->getDebugLoc();
      if (!S || !DL)
        continue;
      Site Si;
      Si.S = *S;
      Si.File = DL->getFilename().str();
      SmallString<256> Full(DL->getFilename());
      if (!sys::path::is_absolute(Full)) {
        Full = DL->getDirectory();
        sys::path::append(Full, DL->getFilename());
      }
      Si.FullPath = Full.str().str();
      Si.Line = DL.getLine();
      Sites.push_back(std::move(Si));
    }
}

bool ClusterPass::run(const Plan &P) {
  // Debug info the user asked for (-g): clang also tracks locations when
  // only remarks are asked for (a compile unit marked NoDebug), and what
  // the pass does must not depend on -Rpass.
  bool HasLines = false;
  for (const DICompileUnit *CU : M.debug_compile_units())
    if (CU->getEmissionKind() != DICompileUnit::NoDebug)
      HasLines = true;
  Function *First = nullptr;
  for (Function &F : M)
    if (!F.isDeclaration() && !First)
      First = &F;
  if (!First)
    return false;
  if (!HasLines) {
    missedIn(*First, "NoDebugInfo",
             "syscluster: this translation unit has no debug info: the plan's " +
                 Twine(P.Clusters.size()) +
                 " clusters name file:line locations and cannot be matched; compile with -g");
    return false;
  }
  collectSites();
  for (const PlanCluster &C : P.Clusters)
    applyCluster(C);
  for (Function *F : Changed)
    FAM.invalidate(*F, PreservedAnalyses::none());
  return !Changed.empty();
}

void ClusterPass::applyCluster(const PlanCluster &C) {
  std::string Name = "plan cluster #" + std::to_string(C.Id) + " (" + C.Rule + ")";
  std::vector<const Site *> Matched;
  DenseMap<const Site *, uint64_t> Recorded; // calls the profile saw at each matched site
  SmallPtrSet<const CallBase *, 4> Reported;
  bool Stale = false, Already = false;
  for (const PlanLocation &L : C.Locations) {
    if (L.File.empty() || L.Line == 0) {
      // A profile of a binary without debug info: tell it where the function is here.
      for (Function &F : M)
        if (!F.isDeclaration() && !L.Function.empty() && F.getName() == L.Function)
          missedIn(F, "NoLineInPlan",
                   Name + ": the recorded binary had no debug info (" + L.Syscall + " in " +
                       L.Function + " has no file:line in the plan): such a profile cannot " +
                       "drive the compiler; record a build made with -g");
      continue;
    }
    // The file of this translation unit the location names best.
    unsigned Best = 0;
    for (const Site &S : Sites)
      Best = std::max(Best, sourceMatch(L.File, S.File));
    const Site *InFile = nullptr;
    bool Found = false;
    for (const Site &S : Sites) {
      if (Best == 0 || sourceMatch(L.File, S.File) != Best)
        continue;
      if (auto It = Replaced.find(S.S.Call); It != Replaced.end()) {
        if (S.Line == L.Line && S.S.Name == L.Syscall) {
          Found = Already = true;
          if (!Reported.count(S.S.Call)) {
            Reported.insert(S.S.Call);
            analysis(It->second.first, "AlreadyClustered",
                     Name + ": " + L.Syscall + " at " + sys::path::filename(S.File) + ":" + Twine(L.Line) +
                         " is already in the multi-call of plan cluster #" + Twine(It->second.second));
          }
        }
        continue;
      }
      InFile = &S;
      if (S.Line != L.Line || S.S.Name != L.Syscall || !functionMatches(L.Function, S.S.Call))
        continue;
      Found = true;
      if (L.SourceHash) {
        auto Now = sourceLineHash(S.FullPath, S.Line);
        if (!Now) {
          missed(S.S.Call, "StalePlan",
                 Name + ": cannot read " + S.FullPath + " to check the plan's source_hash; left as it is");
          Stale = true;
          continue;
        }
        if (*Now != *L.SourceHash) {
          missed(S.S.Call, "StalePlan",
                 Name + ": stale plan: " + describe(S) + " is not the source line the plan was made from (source_hash " +
                     *L.SourceHash + ", now " + *Now + "); left as it is");
          Stale = true;
          continue;
        }
      } else {
        analysis(S.S.Call, "NoSourceHash",
                 Name + ": the plan has no source_hash for " + describe(S) +
                     ": whether the source changed is not checked (the region is still proved on the IR)");
      }
      analysis(S.S.Call, "Matched",
               Name + ": " + describe(S) + " matched (" + Twine(L.Count) + " calls recorded there)");
      if (std::find(Matched.begin(), Matched.end(), &S) == Matched.end())
        Matched.push_back(&S);
      Recorded[&S] += L.Count;
    }
    if (!Found && InFile)
      missed(InFile->S.Call, "StalePlan",
             Name + ": stale plan: no call to " + L.Syscall + " at " +
                 sys::path::filename(InFile->File) + ":" + Twine(L.Line) +
                 (L.Function.empty() ? "" : " in " + L.Function) + " in this source; left as it is");
  }
  if (Stale || Matched.empty())
    return;

  // The write→read pairs of a copy cluster: after loop rotation (§3.3.3) a
  // write followed by the next iteration's read.
  bool IsCopy = C.Calls.size() == 2 &&
                ((C.Calls[0].Syscall == "read" && C.Calls[1].Syscall == "write") ||
                 (C.Calls[0].Syscall == "write" && C.Calls[1].Syscall == "read"));
  bool Tried = false;
  std::vector<std::tuple<const Site *, const Site *, uint64_t>> Edges; // clusterable, with their weight
  for (const Site *A : Matched)
    for (const Site *B : Matched) {
      if (A == B || Replaced.count(A->S.Call) || Replaced.count(B->S.Call))
        continue;
      // The cluster's edges, in both directions for a loop (the back edge).
      bool Edge = false;
      for (size_t I = 0; I < C.Calls.size(); ++I) {
        size_t J = I + 1;
        if (J == C.Calls.size()) {
          if (C.Shape != "loop" && C.Shape != "run")
            break;
          J = 0;
        }
        if (C.Calls[I].Syscall == A->S.Name && C.Calls[J].Syscall == B->S.Name)
          Edge = true;
      }
      if (!Edge)
        continue;
      Function *F = A->S.Call->getFunction();
      if (B->S.Call->getFunction() != F) {
        missed(A->S.Call, "Inlining",
               Name + ": " + describe(*A) + " and " + describe(*B) +
                   " are in different functions: inlining the one into the other (§3.3) is not done yet");
        Tried = true;
        continue;
      }
      Tried = true;
      if (auto Why = checkPair(*A, *B)) {
        missed(A->S.Call, "Region",
               Name + ": " + describe(*A) + " -> " + describe(*B) + " is not a clusterable region: " +
                   Why->Condition + ": " + Why->Detail);
        continue;
      }
      analysis(A->S.Call, "Region",
               Name + ": " + describe(*A) + " -> " + describe(*B) +
                   " is a clusterable region (dominance, safety, convexity, argument safety, linearity hold)");
      // The rotated copy loop (§3.3.3) is one looped multi-call; any other
      // region is straight-line code, grown below by fig. 6.
      auto SelfLoop = [](const CallBase *CB) {
        const BasicBlock *BB = CB->getParent();
        return is_contained(successors(BB), BB);
      };
      if (!(IsCopy && A->S.Name == "write" && B->S.Name == "read" &&
            (SelfLoop(A->S.Call) || SelfLoop(B->S.Call)))) {
        Edges.emplace_back(A, B, std::min(Recorded.lookup(A), Recorded.lookup(B)));
        continue;
      }
      uint64_t Spec = 0;
      if (auto Why = checkWriteReadLoop(*A, *B, C, Spec)) {
        missed(A->S.Call, "NotReplaced",
               Name + ": the loop of " + describe(*A) + " -> " + describe(*B) + " is left as it is: " +
                   Why->Condition + ": " + Why->Detail);
        continue;
      }
      unsigned long MinBlocks = 0;
      std::string Estimate;
      if (auto Why = checkGain(*B, Spec, Recorded.lookup(B), MinBlocks, Estimate)) {
        missed(A->S.Call, "NoGain",
               Name + ": the loop of " + describe(*A) + " -> " + describe(*B) + " is left as it is: " +
                   Why->Condition + ": " + Why->Detail);
        continue;
      }
      std::string Msg = Name + ": the loop of " + describe(*A) + " -> " + describe(*B) +
                        " became one looped multi-call (libmulticall mc_run_loop, auto backend: "
                        "copy_file_range between regular files, the calls as they are elsewhere); " +
                        (Spec ? "specialized (§3.4) for the read's count " + Twine(Spec).str() +
                                    ", the plan's value profile: a guard runs the loop as written for any "
                                    "other count; "
                              : std::string()) +
                        Estimate;
      const CallBase *At = A->S.Call;
      ore(*F).emit([&] { return OptimizationRemark(PassName, "Clustered", At) << Msg; });
      Instruction *MC = replaceWriteReadLoop(*A, *B, MinBlocks, Spec);
      Replaced[A->S.Call] = {MC, C.Id};
      Replaced[B->S.Call] = {MC, C.Id};
      Changed.insert(F);
      // The dominator tree and alias analysis of F describe the loop just erased.
      FAM.invalidate(*F, PreservedAnalyses::none());
    }
  applyRegions(C, Name, Edges, Recorded);
  if (!Tried && !Already)
    missed(Matched.front()->S.Call, "Region",
           Name + ": the cluster's calls matched here do not form one of its edges; left as it is");
}

/// The five conditions of seed 000 §3.2 for Between(a, b).
std::optional<Refusal> ClusterPass::checkPair(const Site &A, const Site &B) {
  Function &F = *A.S.Call->getFunction();
  DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(F);
  AAResults &AA = FAM.getResult<AAManager>(F);
  CallBase *IA = A.S.Call, *IB = B.S.Call;

  // 1. Dominance: a, the region's entry, dominates b.
  if (!DT.dominates(IA, IB)) {
    std::string Why;
    if (IA->getParent() == IB->getParent())
      Why = " (it comes after it in the block)";
    else if (DT.dominates(IB, IA))
      Why = " (" + B.S.Name + " comes first on every path: in a loop not rotated, the next " + B.S.Name +
            " is reached through the loop test; loop rotation (§3.3.3, clang -O1 and above) puts it after " +
            A.S.Name + ")";
    return Refusal{"dominance", describe(A) + " does not dominate " + describe(B) + Why};
  }

  // Between(a, b): every x with a dom x dom b — the instructions after a
  // and before b on the dominator-tree path from a's block to b's.
  SmallVector<BasicBlock *, 4> Chain; // a's block ... b's block
  for (DomTreeNode *N = DT.getNode(IB->getParent()); N; N = N->getIDom()) {
    Chain.push_back(N->getBlock());
    if (N->getBlock() == IA->getParent())
      break;
  }
  std::reverse(Chain.begin(), Chain.end());
  SmallVector<Instruction *, 16> Between;
  // The last system call before each chain block's end (a, or one between):
  // the call an error check there may test.
  SmallVector<SyscallSite, 4> LastAt;
  SyscallSite Last = A.S;
  for (BasicBlock *BB : Chain) {
    for (Instruction &I : *BB) {
      if (BB == IA->getParent() && !DT.dominates(IA, &I))
        continue;
      if (&I == IA || &I == IB)
        continue;
      if (BB == IB->getParent() && !I.comesBefore(IB))
        continue;
      if (isa<PHINode>(I) || I.isTerminator())
        continue;
      Between.push_back(&I);
      if (auto *CB = dyn_cast<CallBase>(&I))
        if (auto S = recognizeSyscall(*CB))
          Last = *S;
    }
    LastAt.push_back(Last);
  }

  // 5. Linearity: control flows from a to b without a choice.
  for (size_t I = 0; I + 1 < Chain.size(); ++I) {
    auto *Br = dyn_cast<BranchInst>(Chain[I]->getTerminator());
    if (Br && Br->isUnconditional() && Br->getSuccessor(0) == Chain[I + 1])
      continue;
    // §3.3.2: a check that leaves for a handler that does not return
    // exactly when the call before it failed is mutually exclusive with
    // the rest of the region: the call becomes a checked call.
    if (isFailureExit(Br, Chain[I + 1], LastAt[I]) ||
        isShortExit(Br, Chain[I + 1], LastAt[I], M.getDataLayout()))
      continue;
    std::string Extra;
    if (Br && Br->isConditional())
      for (BasicBlock *Succ : Br->successors())
        if (Succ != Chain[I + 1] && doesNotReturn(Succ))
          Extra = " (its other side does not return, but it is not taken exactly when " +
                  LastAt[I].Name + " at " + at(LastAt[I].Call) + " fails (result < 0) or falls short (result != its "
                  "count, or lseek's SEEK_SET offset): the §3.3.2 restructuring would run calls the program does not)";
    return Refusal{"linearity", "a branch (" + describe(Chain[I]->getTerminator()) +
                                    ") lies between the calls" + Extra};
  }

  // 2 and 3. Safety and convexity: what lies between the calls is either
  // part of the region (setting up arguments, retrieving results: code
  // without side effects) or can be moved out of the way (§3.3.1: no side
  // effects, guaranteed to terminate, independent of the calls).
  for (Instruction *I : Between) {
    if (I->isDebugOrPseudoInst() || I->isLifetimeStartOrEnd())
      continue;
    if (auto *CB = dyn_cast<CallBase>(I); CB && recognizeSyscall(*CB))
      continue; // a system call between: it joins the region
    if (!I->mayHaveSideEffects() && !I->mayReadFromMemory() && isSafeToSpeculativelyExecute(I))
      continue;
    if (auto *LI = dyn_cast<LoadInst>(I); LI && LI->isSimple()) {
      MemoryLocation Loc = MemoryLocation::get(LI);
      if (!mayWrite(A.S, Loc, AA))
        continue; // independent of a: it can move before it
      return Refusal{"convexity", describe(I) + " reads memory that " + describe(A) +
                                       " may write; it lies between the calls and cannot move out"};
    }
    if (isa<CallBase>(I))
      return Refusal{"safety", describe(I) + " lies between the calls: user code cannot run in a multi-call, "
                                              "and it has side effects, so it cannot move out of the region"};
    return Refusal{"convexity", describe(I) + " has side effects and lies between the calls: "
                                               "it cannot move out of the region"};
  }

  // 4. Argument safety: b's arguments are constants, values defined outside
  // the region, or a's result.
  SmallPtrSet<const Instruction *, 16> InRegion(Between.begin(), Between.end());
  InRegion.insert(IA);
  for (unsigned K = B.S.FirstArg; K < IB->arg_size(); ++K) {
    Value *V = IB->getArgOperand(K);
    if (isa<Constant>(V))
      continue;
    auto *I = dyn_cast<Instruction>(V);
    if (!I || !InRegion.count(I))
      continue;
    SmallVector<Instruction *, 4> Moved;
    if (I == IA || throughLossless(I, ~uint64_t(0) >> 1, true) == IA ||
        isa<LoadInst>(I) || // a load independent of a (checked above) moves before the region
        movesBefore(I, InRegion, Moved))
      continue;
    return Refusal{"argument safety", "argument " + Twine(K - B.S.FirstArg + 1).str() + " of " + describe(B) +
                                          " is an expression computed between the calls (" + describe(I) + ")"};
  }
  return std::nullopt;
}

/// Beyond the five conditions: what replacing the rotated copy loop
///   L: p = phi [init, pre], [r, L];  write(out, wbuf, p);  r = read(in, rbuf, C);  br r > 0, L, exit
/// by __syscluster_write_read_loop(out, wbuf, in, rbuf, C, init) needs.
std::optional<Refusal> ClusterPass::checkWriteReadLoop(const Site &W, const Site &R, const PlanCluster &C,
                                                       uint64_t &Spec) {
  Spec = 0;
  CallBase *CW = W.S.Call, *CR = R.S.Call;
  BasicBlock *L = CW->getParent();
  Function &F = *L->getParent();
  const DataLayout &DL = M.getDataLayout();
  AAResults &AA = FAM.getResult<AAManager>(F);
  DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(F);
  AssumptionCache &AC = FAM.getResult<AssumptionAnalysis>(F);

  if (CR->getParent() != L)
    return Refusal{"linearity", "the write and the read are not in one block"};
  if (W.S.FirstArg || R.S.FirstArg || W.S.Fortified)
    return Refusal{"IR not understood", "only the libc wrappers read/write (and __read_chk) are replaced"};
  // The calls as libc declares them: (int, ptr, size_t) -> ssize_t.
  for (CallBase *CB : {CW, CR}) {
    Type *I64 = Type::getInt64Ty(M.getContext());
    if (CB->getType() != I64 || CB->arg_size() < 3 ||
        !CB->getArgOperand(0)->getType()->isIntegerTy(32) ||
        !CB->getArgOperand(1)->getType()->isPointerTy() || CB->getArgOperand(2)->getType() != I64)
      return Refusal{"IR not understood", describe(CB) + " does not have libc's signature"};
  }
  Value *CountV = CR->getArgOperand(2);
  auto *Count = dyn_cast<ConstantInt>(CountV);
  if (!Count) {
    // §3.4, value specialization: the count the plan's value profile
    // shows in most calls, behind a guard; any other runs the loop.
    std::optional<int64_t> K;
    for (const PlanCall &PC : C.Calls)
      if (PC.Syscall == "read")
        for (const auto &[Name, V] : PC.Args)
          if (Name == "count")
            K = V;
    auto *CI = dyn_cast<Instruction>(CountV);
    if (K && *K > 0 && *K < (int64_t(1) << 31) && !(CI && CI->getParent() == L))
      Spec = uint64_t(*K);
  }
  if (!Spec && (!Count || Count->isZero() || Count->getZExtValue() >= (uint64_t(1) << 31)))
    return Refusal{"argument safety", "the read's count is not a constant between 1 and 2^31-1" +
                                          std::string(Count ? "" : " (nor one the plan's value profile gives, "
                                                                   "computed before the loop)") +
                                          ", so the write's count cannot be proved to be the read's result"};
  uint64_t Max = Spec ? Spec : Count->getZExtValue();
  if (R.S.Fortified) {
    auto *Len = CR->arg_size() > 3 ? dyn_cast<ConstantInt>(CR->getArgOperand(3)) : nullptr;
    if (!Len || Len->getZExtValue() < Max)
      return Refusal{"safety", "the fortified read's check (__read_chk) is not proved to pass"};
  }

  // §3.4: the region must be the whole loop body — one block that loops to
  // itself while the read returns more than 0, and leaves to one exit.
  auto *Br = dyn_cast<BranchInst>(L->getTerminator());
  if (!Br || !Br->isConditional() || (Br->getSuccessor(0) != L && Br->getSuccessor(1) != L))
    return Refusal{"loop", "the block holding the calls is not a whole loop body (§3.4)"};
  BasicBlock *Exit = Br->getSuccessor(0) == L ? Br->getSuccessor(1) : Br->getSuccessor(0);
  if (Exit == L || !continuesWhilePositive(Br, L, CR, Max))
    return Refusal{"loop", "the loop does not go on exactly while the read returns more than 0"};
  BasicBlock *Pre = nullptr;
  for (BasicBlock *P : predecessors(L)) {
    if (P == L)
      continue;
    if (Pre && Pre != P)
      return Refusal{"dominance", "the loop is entered from more than one place"};
    Pre = P;
  }
  if (!Pre || isa<CallBrInst>(Pre->getTerminator()) || !isa<BranchInst>(Pre->getTerminator()))
    return Refusal{"dominance", "the loop has no single ordinary entry"};

  // Safety: the body holds only the calls, the carried read result, the
  // arguments' setup and the loop test; loads that no call of the loop may
  // write are moved in front of it (§3.3.1).
  PHINode *Carried = nullptr;
  for (Instruction &I : *L) {
    if (&I == CW || &I == CR || &I == Br || I.isDebugOrPseudoInst())
      continue;
    if (auto *Phi = dyn_cast<PHINode>(&I)) {
      if (Carried)
        return Refusal{"safety", "a value other than the read's result is carried around the loop (" +
                                     describe(Phi) + ")"};
      if (Phi->getIncomingValueForBlock(L) != CR)
        return Refusal{"safety", "the value carried around the loop is not the read's result"};
      Carried = Phi;
      continue;
    }
    if (auto *LI = dyn_cast<LoadInst>(&I)) {
      if (!LI->isSimple())
        return Refusal{"safety", describe(LI) + " is volatile or atomic"};
      auto *Ptr = dyn_cast<Instruction>(LI->getPointerOperand());
      if (Ptr && Ptr->getParent() == L)
        return Refusal{"argument safety", "the address of " + describe(LI) + " is computed in the loop"};
      if (mayWrite(R.S, MemoryLocation::get(LI), AA))
        return Refusal{"argument safety", describe(LI) + " reads memory the loop's read may write "
                                          "(alias analysis cannot separate it from the buffer)"};
      if (!isDereferenceableAndAlignedPointer(LI->getPointerOperand(), LI->getType(), LI->getAlign(), DL,
                                              Pre->getTerminator(), &AC, &DT))
        return Refusal{"safety", describe(LI) + " is not known to be safe to load before the loop"};
      continue;
    }
    if (isa<CallBase>(I) && I.isLifetimeStartOrEnd())
      return Refusal{"safety", "the buffer's lifetime starts or ends inside the loop"};
    if (I.mayHaveSideEffects() || I.mayReadOrWriteMemory() || !isSafeToSpeculativelyExecute(&I))
      return Refusal{"safety", describe(&I) + " is user code in the loop body: it cannot run inside a multi-call"};
    // Pure code: its uses are checked below (arguments, loop test, after the loop).
  }
  if (!Carried)
    return Refusal{"loop", "the write's count is not carried from the previous read"};
  for (User *U : Carried->users())
    if (auto *I = dyn_cast<Instruction>(U); !I || I->getParent() != L)
      return Refusal{"safety", "the previous read's result is used after the loop"};

  // Argument safety: fds and buffers are the same in every iteration, the
  // write's count is exactly the previous read's result.
  for (unsigned K : {0u, 1u})
    for (CallBase *CB : {CW, CR}) {
      Value *V = CB->getArgOperand(K);
      if (auto *I = dyn_cast<Instruction>(V); I && I->getParent() == L && !isa<LoadInst>(I))
        return Refusal{"argument safety", "argument " + Twine(K + 1).str() + " of " + describe(CB) +
                                              " is computed in the loop"};
    }
  if (throughLossless(CW->getArgOperand(2), Max, true) != Carried)
    return Refusal{"argument safety", "the write's count is not the previous read's result"};

  // The first iteration's count: a read of at most Max bytes whose result
  // was tested > 0 on the way in, as the loop's own reads are.
  Value *Init = Carried->getIncomingValueForBlock(Pre);
  auto *InitCall = dyn_cast<CallBase>(Init);
  auto InitS = InitCall ? recognizeSyscall(*InitCall) : std::nullopt;
  Value *InitCountV = InitS && InitS->Name == "read" && !InitS->FirstArg ? InitCall->getArgOperand(2) : nullptr;
  auto *InitCount = dyn_cast_or_null<ConstantInt>(InitCountV);
  // Specialized: the guard read's count is the loop's (the guard tests it).
  bool InitOk = Spec ? InitCountV == CountV : InitCount && InitCount->getZExtValue() <= Max;
  if (!InitOk ||
      !continuesWhilePositive(dyn_cast<BranchInst>(Pre->getTerminator()), L, InitCall, Max))
    return Refusal{"argument safety", "the loop's first write count is not a read's result tested > 0 "
                                      "before the loop"};

  // Same values in the same variables: the write's result is not used
  // (the program ignores it, so the loop goes on after a failing write, as
  // the replacement does), and after the loop only the last read's result is.
  if (!CW->use_empty())
    return Refusal{"safety", "the write's result is used: a loop that checks its writes is not replaced yet"};
  for (Instruction &I : *L)
    for (User *U : I.users()) {
      auto *UI = dyn_cast<Instruction>(U);
      if (!UI || UI->getParent() == L)
        continue;
      if (&I == CR || (isa<CastInst>(I) && I.getOperand(0) == CR)) {
        // Specialized, the loop stays beside the multi-call: its values
        // reach the code after it only through the exit's phis, which
        // then get the multi-call's too.
        if (Spec && !(isa<PHINode>(UI) && is_contained(successors(L), UI->getParent())))
          return Refusal{"safety", describe(&I) + " is used after the loop other than by a phi of its exit: "
                                                  "the specialized loop (§3.4) cannot keep the original beside it"};
        continue;
      }
      return Refusal{"safety", describe(&I) + " computed in the loop is used after it"};
    }

  // Never a slower program: the gain is the copy fused into copy_file_range,
  // which needs one buffer.
  if (CW->getArgOperand(1) != CR->getArgOperand(1) &&
      !AA.isMustAlias(CW->getArgOperand(1), CR->getArgOperand(1)))
    return Refusal{"no gain", "the write and the read use different buffers: the multi-call could not "
                              "fuse them into a copy and would only add bookkeeping"};
  return std::nullopt;
}

const Calibration *ClusterPass::calibration() {
  if (!CalibrationRead) {
    CalibrationRead = true;
    std::string Path = CalibrationPath.empty() ? defaultCalibrationPath() : CalibrationPath.getValue();
    if (Path.empty() || Path == "none") {
      CalibrationError = "no calibration file is named (MULTICALL_CALIBRATION=none or no $HOME)";
    } else if (auto C = loadCalibration(Path)) {
      Cal = *C;
    } else {
      CalibrationError = toString(C.takeError());
      if (CalibrationError.find("No such file") != std::string::npos)
        CalibrationError += " (run `syscluster calibrate` on the host the program is for)";
    }
  }
  return Cal ? &*Cal : nullptr;
}

/// Nanoseconds as the remarks show them ("2.5 us").
std::string us(double Ns) {
  std::string S;
  raw_string_ostream(S) << format("%.1f", Ns / 1000) << " us";
  return S;
}

/// Where every gain decision starts: with -syscluster-assume-gain, no
/// calibration (C stays null) and Estimate says why; else the host's
/// calibration, or a refusal when it cannot be read.
std::optional<Refusal> ClusterPass::gainCalibration(StringRef Unit, const Calibration *&C, std::string &Estimate) {
  if (AssumeGain) {
    Estimate = ("compiled without a gain estimate (-syscluster-assume-gain: a host with the kernel module, where "
                "the " + Unit + " is one crossing)").str();
    return std::nullopt;
  }
  C = calibration();
  if (!C)
    return Refusal{"no gain known", "this host's calibration cannot be read (" + CalibrationError +
                                        "), so whether the multi-call is faster is unknown"};
  return std::nullopt;
}

/// Never a slower program (issue 12, Must 7): the looped multi-call pays
/// once for the program's first context and the probes of the copy's
/// descriptors, and gains a little per block.  The calibration gives both;
/// the profile gives the blocks a run copies at this read.  Fills MinBlocks
/// (the blocks left below which the replacement runs the loop as written)
/// and a sentence on the estimate.
std::optional<Refusal> ClusterPass::checkGain(const Site &R, uint64_t Spec, uint64_t Blocks, unsigned long &MinBlocks,
                                              std::string &Estimate) {
  MinBlocks = 0;
  const Calibration *C = nullptr;
  if (auto Why = gainCalibration("loop", C, Estimate))
    return Why;
  if (!C)
    return std::nullopt;
  // checkWriteReadLoop: a constant, or the specialized one.
  uint64_t Block = Spec ? Spec : cast<ConstantInt>(R.S.Call->getArgOperand(2))->getZExtValue();
  double Save = C->savingPerBlock(Block), Fixed = C->FirstContextNs + C->ProbeNs;
  if (!(Save > 0))
    return Refusal{"no gain", "on this host the looped multi-call copies a block no faster than read+write (" +
                                  us(C->FusedNs) + " against " + us(C->DirectNs) + ", " + C->Path + ")"};
  MinBlocks = C->breakEvenBlocks(Block);
  std::string Basis = Twine(Blocks).str() + " reads at " + at(R.S.Call) + " in the profile x " + us(Save) +
                      " saved per block of " + Twine(Block).str() + " B - " + us(C->FirstContextNs) +
                      " first context - " + us(C->ProbeNs) + " probes (" + C->Path + ")";
  if (Blocks < MinBlocks)
    return Refusal{"no gain", "estimated " + us(Blocks * Save - Fixed) + " per run: " + Basis +
                                  "; it pays from " + Twine(MinBlocks).str() + " blocks"};
  Estimate = "estimated saving " + us(Blocks * Save - Fixed) + " per run like the recorded one: " + Basis +
             "; a run with fewer than " + Twine(MinBlocks).str() +
             " blocks left to copy (or not from a regular file) runs the loop as written";
  return std::nullopt;
}

Instruction *ClusterPass::replaceWriteReadLoop(const Site &W, const Site &R, unsigned long MinBlocks,
                                               uint64_t Spec) {
  CallBase *CW = W.S.Call, *CR = R.S.Call;
  BasicBlock *L = CW->getParent();
  Function &F = *L->getParent();
  LLVMContext &Ctx = M.getContext();
  auto *Br = cast<BranchInst>(L->getTerminator());
  BasicBlock *Exit = Br->getSuccessor(0) == L ? Br->getSuccessor(1) : Br->getSuccessor(0);
  BasicBlock *Pre = nullptr;
  PHINode *Carried = nullptr;
  for (BasicBlock *P : predecessors(L))
    if (P != L)
      Pre = P;
  for (PHINode &Phi : L->phis())
    Carried = &Phi;

  BasicBlock *N = BasicBlock::Create(Ctx, "syscluster.copy", &F, L);
  IRBuilder<> B(N);
  B.SetCurrentDebugLocation(CW->getDebugLoc());
  // Loads proved independent of the loop's calls move in front of it.
  DenseMap<Value *, Value *> Hoisted;
  auto arg = [&](Value *V) -> Value * {
    auto *LI = dyn_cast<LoadInst>(V);
    if (!LI || LI->getParent() != L)
      return V;
    if (!Hoisted.count(LI)) {
      Instruction *C = LI->clone();
      B.Insert(C);
      Hoisted[LI] = C;
    }
    return Hoisted[LI];
  };
  Type *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx), *Ptr = PointerType::get(Ctx, 0);
  FunctionCallee Loop = M.getOrInsertFunction(
      "__syscluster_write_read_loop", FunctionType::get(I64, {I32, Ptr, I32, Ptr, I64, I64, I64}, false));
  Value *Args[] = {arg(CW->getArgOperand(0)), arg(CW->getArgOperand(1)), arg(CR->getArgOperand(0)),
                   arg(CR->getArgOperand(1)), Spec ? ConstantInt::get(I64, Spec) : CR->getArgOperand(2),
                   Carried->getIncomingValueForBlock(Pre),
                   ConstantInt::get(I64, MinBlocks)};
  CallInst *Last = B.CreateCall(Loop, Args);
  Last->setDebugLoc(CR->getDebugLoc());
  // The values the loop leaves: its last read's result, and casts of it.
  DenseMap<Value *, Value *> After;
  After[CR] = Last;
  for (Instruction &I : *L)
    if (auto *C = dyn_cast<CastInst>(&I); C && C->getOperand(0) == CR &&
                                          any_of(C->users(), [&](User *U) {
                                            return cast<Instruction>(U)->getParent() != L;
                                          }))
      After[C] = B.CreateCast(C->getOpcode(), Last, C->getType());
  B.CreateBr(Exit);

  if (Spec) {
    // §3.4: the guard sends the profiled count to the multi-call and every
    // other to the loop as written, which stays.
    BasicBlock *G = BasicBlock::Create(Ctx, "syscluster.spec", &F, N);
    IRBuilder<> GB(G);
    GB.SetCurrentDebugLocation(CR->getDebugLoc());
    GB.CreateCondBr(GB.CreateICmpEQ(CR->getArgOperand(2), ConstantInt::get(I64, Spec), "syscluster.spec.count"),
                    N, L);
    Pre->getTerminator()->replaceSuccessorWith(L, G);
    L->replacePhiUsesWith(Pre, G);
    for (PHINode &Phi : Exit->phis()) {
      int Idx = Phi.getBasicBlockIndex(L);
      if (Idx < 0)
        continue;
      Value *V = Phi.getIncomingValue(Idx);
      Phi.addIncoming(After.count(V) ? After[V] : V, N);
    }
    return Last;
  }
  Pre->getTerminator()->replaceSuccessorWith(L, N);
  for (PHINode &Phi : Exit->phis()) {
    int Idx = Phi.getBasicBlockIndex(L);
    if (Idx < 0)
      continue;
    Value *V = Phi.getIncomingValue(Idx);
    if (After.count(V))
      V = After[V];
    Phi.setIncomingValue(Idx, V);
    Phi.setIncomingBlock(Idx, N);
  }
  for (auto &[From, To] : After)
    const_cast<Value *>(From)->replaceUsesWithIf(To, [&](Use &U) {
      return cast<Instruction>(U.getUser())->getParent() != L;
    });
  L->dropAllReferences();
  L->eraseFromParent();
  return Last;
}

/// Fig. 6: the clusterable edges, heaviest first, grow regions — an edge
/// starts one, extends one at either end, or joins two — and each region is
/// replaced by one multi-call where the replacement is proved and gains.
void ClusterPass::applyRegions(const PlanCluster &C, const std::string &Name,
                               std::vector<std::tuple<const Site *, const Site *, uint64_t>> &Edges,
                               const DenseMap<const Site *, uint64_t> &Recorded) {
  // Heaviest first; equal weights in the order the edges were found.
  std::vector<size_t> Order(Edges.size());
  for (size_t I = 0; I < Order.size(); ++I)
    Order[I] = I;
  std::sort(Order.begin(), Order.end(), [&](size_t X, size_t Y) {
    return std::get<2>(Edges[X]) != std::get<2>(Edges[Y]) ? std::get<2>(Edges[X]) > std::get<2>(Edges[Y]) : X < Y;
  });
  std::vector<std::vector<const Site *>> Regions;
  DenseMap<const Site *, unsigned> In;
  for (size_t E : Order) {
    const Site *A = std::get<0>(Edges[E]), *B = std::get<1>(Edges[E]);
    auto IA = In.find(A), IB = In.find(B);
    if (IA == In.end() && IB == In.end()) {
      In[A] = In[B] = Regions.size();
      Regions.push_back({A, B});
    } else if (IA != In.end() && IB == In.end() && Regions[IA->second].back() == A) {
      Regions[IA->second].push_back(B);
      In[B] = IA->second;
    } else if (IB != In.end() && IA == In.end() && Regions[IB->second].front() == B) {
      auto &R = Regions[IB->second];
      R.insert(R.begin(), A);
      In[A] = IB->second;
    } else if (IA != In.end() && IB != In.end() && IA->second != IB->second &&
               Regions[IA->second].back() == A && Regions[IB->second].front() == B) {
      unsigned From = IB->second, To = IA->second;
      for (const Site *S : Regions[From]) {
        Regions[To].push_back(S);
        In[S] = To;
      }
      Regions[From].clear();
    }
  }
  for (auto &R : Regions) {
    if (R.size() < 2)
      continue;
    Function *F = R.front()->S.Call->getFunction();
    std::string What = "the region " + describe(*R.front()) + " -> " + describe(*R.back());
    if (R.size() > 2)
      What += " (" + Twine(R.size()).str() + " calls of the plan)";
    RegionShape Shape;
    if (auto Why = checkRegion(R, Shape)) {
      missed(R.front()->S.Call, "NotReplaced",
             Name + ": " + What + " is left as it is: " + Why->Condition + ": " + Why->Detail);
      continue;
    }
    uint64_t Runs = ~uint64_t(0);
    for (const Site *S : R)
      Runs = std::min(Runs, Recorded.lookup(S));
    unsigned long MinRuns = 0;
    std::string Estimate;
    if (auto Why = checkRegionGain(Shape, Runs, MinRuns, Estimate)) {
      missed(R.front()->S.Call, "NoGain",
             Name + ": " + What + " is left as it is: " + Why->Condition + ": " + Why->Detail);
      continue;
    }
    std::string Checked;
    for (size_t I = 0; I < Shape.Calls.size(); ++I)
      if (Shape.Checked[I] || Shape.Full[I])
        Checked += (Checked.empty() ? "" : ", ") + Shape.Calls[I].Name + " at " + at(Shape.Calls[I].Call) +
                   (!Shape.Full[I] ? "" : isTransfer(Shape.Calls[I]) ? " (short transfer)" : " (result != offset)");
    std::string Msg = Name + ": " + What + " became one multi-call of " + Twine(Shape.Calls.size()).str() +
                      " calls (libmulticall mc_run, auto backend" +
                      (Checked.empty() ? std::string("") : "; checked, its error handler kept (§3.3.2): " + Checked) +
                      "); " + Estimate;
    const CallBase *At = R.front()->S.Call;
    ore(*F).emit([&] { return OptimizationRemark(PassName, "Clustered", At) << Msg; });
    Instruction *MC = replaceRegion(Shape, MinRuns);
    for (const SyscallSite &S : Shape.Calls)
      Replaced[S.Call] = {MC, C.Id};
    Changed.insert(F);
    FAM.invalidate(*F, PreservedAnalyses::none());
  }
}

/// Beyond the five conditions: what replacing a straight-line region by
/// mc_run needs.  Walks the region from its first call to its last along
/// the dominator tree; every system call met is one of the multi-call's.
std::optional<Refusal> ClusterPass::checkRegion(ArrayRef<const Site *> R, RegionShape &Shape) {
  CallBase *First = R.front()->S.Call, *LastCall = R.back()->S.Call;
  Function &F = *First->getFunction();
  const DataLayout &DL = M.getDataLayout();
  DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(F);
  AAResults &AA = FAM.getResult<AAManager>(F);
  AssumptionCache &AC = FAM.getResult<AssumptionAnalysis>(F);
  if (LastCall->getFunction() != &F || !DT.dominates(First, LastCall))
    return Refusal{"dominance", "the first call does not dominate the last"};
  SmallVector<BasicBlock *, 4> Chain;
  for (DomTreeNode *N = DT.getNode(LastCall->getParent()); N; N = N->getIDom()) {
    Chain.push_back(N->getBlock());
    if (N->getBlock() == First->getParent())
      break;
  }
  std::reverse(Chain.begin(), Chain.end());

  SmallPtrSet<const Instruction *, 16> Pure;   // computed between the calls, stays where it is
  SmallPtrSet<const Instruction *, 4> Hoisted; // loads moved in front of the region
  DenseMap<const CallBase *, unsigned> Index;
  auto addCall = [&](const SyscallSite &S) -> std::optional<Refusal> {
    CallBase *CB = S.Call;
    if (!S.Direct)
      return Refusal{"IR not understood",
                     describe(CB) + " is not a libc wrapper that issues " + S.Name +
                         " with the same arguments (data/syscall_properties.tsv, libc column): it is not run "
                         "as that system call"};
    Type *RT = CB->getType();
    if (!(RT->isVoidTy() || (RT->isIntegerTy() && RT->getIntegerBitWidth() <= 64)) || CB->arg_size() > 6 ||
        CB->hasOperandBundles())
      return Refusal{"IR not understood", describe(CB) + " does not have a system call's signature"};
    SmallVector<RegionShape::Arg, 6> Args;
    for (unsigned K = 0; K < CB->arg_size(); ++K) {
      Value *V = CB->getArgOperand(K);
      Type *T = V->getType();
      if (!T->isPointerTy() && !(T->isIntegerTy() && T->getIntegerBitWidth() <= 64))
        return Refusal{"IR not understood", "argument " + Twine(K + 1).str() + " of " + describe(CB) +
                                                " is neither an integer nor a pointer"};
      RegionShape::Arg A;
      auto *I = dyn_cast<Instruction>(V);
      // A result of an earlier call of the region, through casts that keep it.
      int Ref = -1;
      for (auto &[Call, Idx] : Index)
        if (throughLossless(V, maxResult(Shape.Calls[Idx]), true) == Call)
          Ref = Idx;
      if (Ref >= 0) {
        // The reference passes the raw result; the consumer runs only when
        // the producer did not fail (MC_CHECK), or was whole
        // (MC_CHECK_FULL) with a count that a failure's -1 cannot equal.
        if (!Shape.Checked[Ref] && !(Shape.Full[Ref] && countNonNegative(countOf(Shape.Calls[Ref]), DL)))
          return Refusal{"argument safety",
                         "argument " + Twine(K + 1).str() + " of " + describe(CB) + " is the result of " +
                             describe(Shape.Calls[Ref].Call) +
                             ", which is not checked: after a failure the program passes libc's -1, a "
                             "multi-call's reference would pass -errno"};
        A.Ref = Ref;
      } else if (I && Pure.count(I)) {
        // Pure code on values from before the region moves in front of it.
        SmallPtrSet<const Instruction *, 16> InRegion(Pure.begin(), Pure.end());
        InRegion.insert(Hoisted.begin(), Hoisted.end());
        for (auto &[Call, Idx] : Index)
          InRegion.insert(Call);
        if (!movesBefore(I, InRegion, Shape.Moved))
          return Refusal{"argument safety", "argument " + Twine(K + 1).str() + " of " + describe(CB) +
                                                " is an expression computed between the calls (" + describe(I) +
                                                ") on values of the region"};
        A.Literal = V;
      } else {
        A.Literal = V; // a constant, an argument, defined before the region, or a load moved before it
      }
      Args.push_back(A);
    }
    Index[CB] = Shape.Calls.size();
    Shape.Calls.push_back(S);
    Shape.Checked.push_back(false);
    Shape.Full.push_back(false);
    Shape.Args.push_back(std::move(Args));
    return std::nullopt;
  };

  for (size_t BI = 0; BI < Chain.size(); ++BI) {
    BasicBlock *BB = Chain[BI];
    if (BI > 0 && BB->getSinglePredecessor() != Chain[BI - 1])
      return Refusal{"linearity", "the block of " + describe(&*BB->getFirstNonPHIOrDbg()) +
                                      " is entered from elsewhere too (a loop or a join inside the region)"};
    BasicBlock::iterator It = BI == 0 ? First->getIterator() : BB->begin();
    for (; It != BB->end(); ++It) {
      Instruction &I = *It;
      if (I.isTerminator()) {
        auto *Br = dyn_cast<BranchInst>(&I);
        if (BI + 1 == Chain.size())
          break;
        if (Br && Br->isUnconditional() && Br->getSuccessor(0) == Chain[BI + 1])
          continue;
        const SyscallSite &Last = Shape.Calls.back();
        if (isFailureExit(Br, Chain[BI + 1], Last) && !Shape.Checked.back()) {
          Shape.Checked.back() = true;
          continue;
        }
        if (isShortExit(Br, Chain[BI + 1], Last, DL) && !Shape.Full.back()) {
          Shape.Full.back() = true;
          continue;
        }
        return Refusal{"linearity", "a branch (" + describe(&I) + ") lies between the calls and is not a check "
                                    "of " + describe(Last.Call) + " that leaves for a handler that does not return"};
      }
      if (auto *CB = dyn_cast<CallBase>(&I)) {
        if (auto S = recognizeSyscall(*CB)) {
          if (auto Why = addCall(*S))
            return Why;
          if (CB == LastCall)
            break;
          continue;
        }
      }
      if (I.isDebugOrPseudoInst())
        continue;
      if (isa<PHINode>(I)) { // a later block's (single-entry) phi: stays, as pure code
        Pure.insert(&I);
        continue;
      }
      if (I.isLifetimeStartOrEnd())
        return Refusal{"safety", "a buffer's lifetime starts or ends between the calls (" + describe(&I) + ")"};
      if (auto *LI = dyn_cast<LoadInst>(&I); LI && LI->isSimple()) {
        MemoryLocation Loc = MemoryLocation::get(LI);
        if (isErrno(LI->getPointerOperand()))
          return Refusal{"convexity", describe(LI) + " reads errno between the calls: the calls set it"};
        for (const SyscallSite &S : Shape.Calls)
          if (mayWrite(S, Loc, AA))
            return Refusal{"convexity", describe(LI) + " reads memory that " + describe(S.Call) +
                                            " may write; it lies between the calls and cannot move out"};
        auto *Ptr = dyn_cast<Instruction>(LI->getPointerOperand());
        if ((Ptr && (Pure.count(Ptr) || Hoisted.count(Ptr) || Index.count(dyn_cast<CallBase>(Ptr)))) ||
            !isDereferenceableAndAlignedPointer(LI->getPointerOperand(), LI->getType(), LI->getAlign(), DL, First,
                                                &AC, &DT))
          return Refusal{"safety", describe(LI) + " cannot be proved safe to load before the region"};
        Hoisted.insert(LI);
        Shape.Hoist.push_back(LI);
        continue;
      }
      if (!I.mayHaveSideEffects() && !I.mayReadOrWriteMemory() && isSafeToSpeculativelyExecute(&I)) {
        Pure.insert(&I);
        continue;
      }
      if (isa<CallBase>(I))
        return Refusal{"safety", describe(&I) + " lies between the calls: user code cannot run in a multi-call"};
      return Refusal{"convexity", describe(&I) + " has side effects and lies between the calls"};
    }
  }
  if (Shape.Calls.size() < 2 || Shape.Calls.back().Call != LastCall)
    return Refusal{"IR not understood", "the walk from the first call did not end at the last"};
  // The fusion rule that may merge the calls (libmulticall's rules, named as
  // its calibration names them).
  const SyscallSite &S0 = Shape.Calls.front();
  bool SameFd = all_of(Shape.Calls, [&](const SyscallSite &S) {
    return S.Call->arg_size() && S.Call->getArgOperand(0) == S0.Call->getArgOperand(0);
  });
  auto AllNamed = [&](size_t From, StringRef N) {
    return all_of(ArrayRef<SyscallSite>(Shape.Calls).drop_front(From),
                  [&](const SyscallSite &S) { return S.Name == N; });
  };
  if (SameFd) {
    if (AllNamed(0, "write"))
      Shape.Rule = "writev";
    else if (AllNamed(0, "read"))
      Shape.Rule = "readv";
    else if (AllNamed(0, "pread64"))
      Shape.Rule = "preadv";
    else if (AllNamed(0, "pwrite64"))
      Shape.Rule = "pwritev";
    else if (S0.Name == "lseek" && AllNamed(1, "read") && S0.Call->arg_size() == 3 &&
             isa<ConstantInt>(S0.Call->getArgOperand(2)) &&
             cast<ConstantInt>(S0.Call->getArgOperand(2))->isZero()) // SEEK_SET
      Shape.Rule = "seek_pread";
  }
  return std::nullopt;
}

/// Never a slower program: without the kernel module a multi-call crosses
/// once per call unless a fusion rule merges its calls; then it saves at
/// most a crossing per call merged, and the program pays once for its
/// first context.
std::optional<Refusal> ClusterPass::checkRegionGain(const RegionShape &Shape, uint64_t Runs,
                                                    unsigned long &MinRuns, std::string &Estimate) {
  MinRuns = 0;
  const Calibration *C = nullptr;
  if (auto Why = gainCalibration("region", C, Estimate))
    return Why;
  if (!C)
    return std::nullopt;
  std::string Calls;
  for (const SyscallSite &S : Shape.Calls)
    Calls += (Calls.empty() ? "" : ", ") + S.Name;
  unsigned N = Shape.Calls.size();
  auto Fewest = Shape.Rule.empty() ? std::pair<unsigned, std::string>{0, ""} : C->fewestCalls(Shape.Rule);
  if (Shape.Rule.empty())
    return Refusal{"no gain", "no fusion rule merges " + Calls +
                                  ": without the kernel module each call still crosses once and the multi-call only "
                                  "adds bookkeeping (-syscluster-assume-gain compiles it for a host with the module)"};
  if (!Fewest.first || Fewest.first > N)
    return Refusal{"no gain", "the fusion rule for " + Calls + " (" + Shape.Rule + ") pays " +
                                  (Fewest.first ? "from " + Twine(Fewest.first).str() + " calls"
                                                : std::string("on no descriptor")) +
                                  " on this host (" + C->Path + "); the region has " + Twine(N).str()};
  double Save = (N - 1) * C->CrossingNs;
  MinRuns = (unsigned long)std::ceil(C->FirstContextNs / Save);
  std::string Basis = Twine(Runs).str() + " runs in the profile x at most " + us(Save) + " saved (" +
                      Twine(N - 1).str() + " crossings merged by " + Shape.Rule + " on " + Fewest.second +
                      " descriptors) - " + us(C->FirstContextNs) + " first context (" + C->Path + ")";
  if (Runs < MinRuns)
    return Refusal{"no gain", "estimated " + us(Runs * Save - C->FirstContextNs) + " per run: " + Basis +
                                  "; it pays from " + Twine(MinRuns).str() + " runs"};
  Estimate = "estimated saving at most " + us(Runs * Save - C->FirstContextNs) + " per run like the recorded one: " +
             Basis + "; the first " + Twine(MinRuns).str() + " runs of the region run the calls as written";
  return std::nullopt;
}

/// Fig. 7: the calls become one array of struct mc_call (libmulticall's
/// binary interface), run by __syscluster_run (llvm/runtime/region.c); each
/// call's value is its result, -1 where it failed (errno is set by the
/// runtime), and the program's checks stay where they were.
Instruction *ClusterPass::replaceRegion(RegionShape &Shape, unsigned long MinRuns) {
  LLVMContext &Ctx = M.getContext();
  CallBase *First = Shape.Calls.front().Call;
  Function &F = *First->getFunction();
  Type *I8 = Type::getInt8Ty(Ctx), *I32 = Type::getInt32Ty(Ctx), *I64 = Type::getInt64Ty(Ctx);
  Type *Ptr = PointerType::get(Ctx, 0);
  // struct mc_call { long nr; long args[6]; long result; unsigned flags; unsigned char ref[6]; }
  StructType *CallTy = StructType::get(Ctx, {I64, ArrayType::get(I64, 6), I64, I32, ArrayType::get(I8, 6)});
  const unsigned McCheck = 1, McCheckFull = 4; // MC_CHECK, MC_CHECK_FULL (multicall.h)
  unsigned N = Shape.Calls.size();

  for (LoadInst *LI : Shape.Hoist)
    LI->moveBefore(First);
  for (Instruction *I : Shape.Moved)
    I->moveBefore(First);
  IRBuilder<> EB(&F.getEntryBlock(), F.getEntryBlock().getFirstInsertionPt());
  ArrayType *ArrTy = ArrayType::get(CallTy, N);
  AllocaInst *Arr = EB.CreateAlloca(ArrTy, nullptr, "syscluster.calls");
  Arr->setAlignment(Align(8));

  IRBuilder<> B(First);
  B.SetCurrentDebugLocation(First->getDebugLoc());
  auto field = [&](unsigned I, unsigned Fld, int J = -1) {
    SmallVector<Value *, 4> Idx{B.getInt32(0), B.getInt32(I), B.getInt32(Fld)};
    if (J >= 0)
      Idx.push_back(B.getInt32(J));
    return B.CreateInBoundsGEP(ArrTy, Arr, Idx);
  };
  for (unsigned I = 0; I < N; ++I) {
    const SyscallSite &S = Shape.Calls[I];
    B.CreateStore(ConstantInt::get(I64, S.Nr), field(I, 0));
    for (unsigned J = 0; J < 6; ++J) {
      Value *V = ConstantInt::get(I64, 0);
      unsigned Ref = 0;
      if (J < Shape.Args[I].size()) {
        const RegionShape::Arg &A = Shape.Args[I][J];
        if (A.Ref >= 0)
          Ref = A.Ref + 1;
        else if (A.Literal->getType()->isPointerTy())
          V = B.CreatePtrToInt(A.Literal, I64);
        else
          V = B.CreateSExtOrTrunc(A.Literal, I64); // as glibc's (long) casts pass an int
      }
      B.CreateStore(V, field(I, 1, J));
      B.CreateStore(ConstantInt::get(I8, Ref), field(I, 4, J));
    }
    B.CreateStore(ConstantInt::get(I64, 0), field(I, 2));
    unsigned Flags = (Shape.Checked[I] ? McCheck : 0) | (Shape.Full[I] ? McCheckFull : 0);
    B.CreateStore(ConstantInt::get(I32, Flags), field(I, 3));
  }
  auto *Runs = new GlobalVariable(M, I64, false, GlobalValue::InternalLinkage, ConstantInt::get(I64, 0),
                                  "syscluster.region.runs");
  FunctionCallee Run =
      M.getOrInsertFunction("__syscluster_run", FunctionType::get(I64, {Ptr, I32, I64, Ptr}, false));
  CallInst *MC = B.CreateCall(Run, {Arr, B.getInt32(N), ConstantInt::get(I64, MinRuns), Runs});
  for (unsigned I = 0; I < N; ++I) {
    CallBase *CB = Shape.Calls[I].Call;
    B.SetCurrentDebugLocation(CB->getDebugLoc());
    if (!CB->getType()->isVoidTy()) {
      Value *R = B.CreateLoad(I64, field(I, 2));
      // libc's value: -1 on failure (errno set by the runtime), else the result.
      Value *V = B.CreateSelect(B.CreateICmpSLT(R, ConstantInt::get(I64, 0)), ConstantInt::getSigned(I64, -1), R);
      V = B.CreateSExtOrTrunc(V, CB->getType());
      CB->replaceAllUsesWith(V);
    }
  }
  for (const SyscallSite &S : Shape.Calls)
    S.Call->eraseFromParent();
  return MC;
}

} // namespace

PreservedAnalyses SysClusterPass::run(Module &M, ModuleAnalysisManager &MAM) {
  if (PlanPath.empty())
    return PreservedAnalyses::all();
  auto P = loadPlan(PlanPath);
  if (!P) {
    M.getContext().emitError("syscluster: " + toString(P.takeError()));
    return PreservedAnalyses::all();
  }
  auto &FAM = MAM.getResult<FunctionAnalysisManagerModuleProxy>(M).getManager();
  ClusterPass CP(M, FAM);
  return CP.run(*P) ? PreservedAnalyses::none() : PreservedAnalyses::all();
}
