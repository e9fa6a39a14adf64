//===- ClusterPass.h - the pass's parts, shared by its files ------------===//
//
// Private to the plugin (lib/): what the pass's files share.  One job per
// file:
//   SysCluster.cpp  the pass: sites, matching a plan's clusters, its entry
//   IRFacts.cpp     facts about the IR the conditions are decided from
//   Conditions.cpp  the five conditions of seed 000 §3.2 for a pair of calls
//   CopyLoop.cpp    the rotated copy loop → looped multi-call (§3.3.3, §3.4)
//   CheckedLoop.cpp the copy loop that checks its writes → the same, checked (§3.3.2)
//   Regions.cpp     straight-line regions → one mc_run (fig. 6, fig. 7)
//   Specialize.cpp  value specialization of straight-line regions (§3.4)
//   Gain.cpp        never a slower program: the gain of each replacement
//   Inline.cpp      a plan edge across functions: the helpers inlined into
//                   a trial copy of their common caller (§3.3)
//   SeekRead.cpp    lseek + read as one pread, the file position kept pending
//   Interchange.cpp stores between a region's calls moved past the later
//                   calls (§3.3.1)
//   BatchWrite.cpp  a loop of one write with the same arguments → its
//                   iterations in writev batches, the loop resuming after
//                   a batch cut short
//
//===----------------------------------------------------------------------===//
#ifndef SYSCLUSTER_CLUSTERPASS_H
#define SYSCLUSTER_CLUSTERPASS_H

#include "SysCluster/Calibration.h"
#include "SysCluster/Plan.h"
#include "SysCluster/Syscalls.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/AliasAnalysis.h"
#include "llvm/Analysis/MemorySSA.h"
#include "llvm/Analysis/OptimizationRemarkEmitter.h"
#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"

namespace llvm {
class SCEV;
}

#include <deque>
#include <list>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace syscluster {
using namespace llvm;

inline constexpr const char *PassName = "syscluster";

/// A system call site with the source location it came from.
struct Site {
  SyscallSite S;
  std::string File;     // as the debug info names it (relative to the build)
  std::string FullPath; // directory + file, to read the source
  unsigned Line = 0;
  SmallVector<unsigned, 2> Outer; // the lines of the frames it is inlined into (calls that reach it)
};

/// Why a region was refused: the condition of §3.2 (or the replacement's
/// own proof) that failed, and what in the code made it fail.
struct Refusal {
  std::string Condition;
  std::string Detail;
};

// Nanoseconds as the remarks show them, "2.5 us" (Gain.cpp).
std::string us(double Ns);
// Facts about the IR (IRFacts.cpp).
std::string at(const Instruction *I);
std::string describe(const Site &S);
std::string describe(const Instruction *I);
bool functionMatches(StringRef Want, const Instruction *I);
bool mayWrite(const SyscallSite &S, const MemoryLocation &Loc, AAResults &AA);
const Value *throughLossless(const Value *V, uint64_t Max, bool Positive);
bool continuesWhilePositive(const BranchInst *Br, const BasicBlock *Body, const Value *Result, uint64_t Max);
bool doesNotReturn(const BasicBlock *BB);
uint64_t maxResult(const SyscallSite &S);
bool isFailureExit(const BranchInst *Br, const BasicBlock *Next, const SyscallSite &X, bool AnyHandler = false);
bool isTransfer(const SyscallSite &S);
const Value *countOf(const SyscallSite &S);
bool countNonNegative(const Value *Count, const DataLayout &DL);
bool isShortExit(const BranchInst *Br, const BasicBlock *Next, const SyscallSite &X, const DataLayout &DL,
                 bool CountPositive = false, bool AnyHandler = false);
bool movesBefore(Instruction *I, const SmallPtrSetImpl<const Instruction *> &InRegion,
                 SmallVectorImpl<Instruction *> &Order, unsigned Depth = 0);
bool isErrno(const Value *V);
// Stores moved past a region's later calls (Interchange.cpp).
bool privateVariable(const MemoryLocation &Loc);
bool provedApart(const Value *P, const MemoryLocation &Loc);
std::optional<Refusal> storeMovesPast(const StoreInst *SI, ArrayRef<SyscallSite> Later, AAResults &AA);
std::string storedName(const StoreInst *SI);
bool sameValue(const Value *A, const Value *B, DominatorTree &DT, MemorySSA &MSSA, AAResults &AA);

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
  SmallVector<StoreInst *, 2> Sunk;    // stores that stay in place: after the later calls (§3.3.1)
  std::string Rule; // the fusion rule that may merge the calls ("writev"), or empty
  std::string NoRuleWhy; // with no rule: what the pass could not prove, or empty
  bool OneFdGuard = false; // §3.4: the rule holds when the descriptors are one, checked at run time
  unsigned long OwnFds = 0; // bit I: call I's descriptor is its function's own, registered once (Specialize.cpp)
};

std::string fusionRule(const RegionShape &Shape);
// The copy loops' shared proofs (CopyLoop.cpp).
std::optional<Refusal> copyCallsUnderstood(const Site &W, const Site &R);
std::optional<Refusal> loopReadCount(const Site &R, const PlanCluster &C, ArrayRef<const BasicBlock *> Body,
                                     uint64_t &Max, uint64_t &Spec);
std::optional<Refusal> loopEntry(BasicBlock *Head, BasicBlock *Latch, BasicBlock *&Pre);
std::optional<Refusal> copyLoopInstruction(Instruction &I, ArrayRef<const BasicBlock *> Body, const Site &R,
                                           BasicBlock *Pre, FunctionAnalysisManager &FAM);
std::string specializeDescriptors(const PlanCluster &C, RegionShape &Shape);
// Descriptors registered once (Specialize.cpp).
std::optional<std::string> ownDescriptor(Value *V);
std::string ownDescriptors(RegionShape &Shape);
void releaseOwnDescriptors(RegionShape &Shape);

class ClusterPass {
public:
  ClusterPass(Module &M, FunctionAnalysisManager &FAM) : M(M), FAM(FAM) {}
  bool run(const Plan &P);

private:
  Module &M;
  FunctionAnalysisManager &FAM;
  std::list<Site> Sites; // a list: trial copies of functions add and remove theirs
  SmallPtrSet<Function *, 8> Changed;
  // The (cluster, function) pairs already said to be in another translation unit.
  std::set<std::pair<std::string, const Function *>> Elsewhere;
  // Calls already replaced (erased: compared, never dereferenced) → the
  // multi-call that replaced them and its cluster.
  DenseMap<const CallBase *, std::pair<Instruction *, unsigned>> Replaced;
  std::deque<char> Tombstones; // keys of erased calls whose address a new call took (collectSites)
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

  void collectSites(Function *Only = nullptr);
  // Only: the trial copy of a function (Inline.cpp); the cluster is applied
  // to its sites alone, without repeating the remarks of matching.
  void applyCluster(const PlanCluster &C, Function *Only = nullptr);
  using SitePair = std::pair<const Site *, const Site *>;
  void inlineAcross(const PlanCluster &C, const std::string &Name, ArrayRef<SitePair> Pairs,
                    ArrayRef<const Site *> Matched);
  void declaredElsewhere(const PlanLocation &L, const std::string &Name);
  bool reachedFrom(const PlanLocation &L, const Site &S, std::string &Path);
  bool callsElsewhere(const PlanLocation &L, const std::string &Name);
  void removeSites(const Function &F);
  std::optional<Refusal> checkPair(const Site &A, const Site &B);
  std::optional<Refusal> checkWriteReadLoop(const Site &W, const Site &R, const PlanCluster &C, uint64_t &Spec);
  std::optional<Refusal> gainCalibration(StringRef Unit, const Calibration *&C, std::string &Estimate);
  std::optional<Refusal> checkGain(const Site &R, uint64_t Spec, uint64_t Blocks, unsigned long &MinBlocks,
                                   std::string &Estimate);
  bool applyCheckedCopyLoop(const Site &W, const Site &R, const PlanCluster &C, const std::string &Name,
                            uint64_t Blocks);
  bool applyBatchWrite(const Site &S, const PlanCluster &C, const std::string &Name, uint64_t Recorded);
  std::optional<Refusal> checkBatchGain(const Site &S, const PlanCluster &C, const SCEV *Backedges,
                                        uint64_t Recorded, uint64_t &MinIterations, std::string &Estimate);
  Instruction *replaceWriteReadLoop(const Site &W, const Site &R, unsigned long MinBlocks, uint64_t Spec);
  std::optional<Refusal> checkRegion(ArrayRef<const Site *> R, RegionShape &Shape);
  std::optional<Refusal> checkRegionGain(const RegionShape &Shape, uint64_t Runs, unsigned long &MinRuns,
                                         std::string &Estimate);
  Instruction *replaceRegion(RegionShape &Shape, unsigned long MinRuns);
  // lseek + read as one pread (SeekRead.cpp): for each descriptor global,
  // its kind (asked once per descriptor it holds) and the position the
  // replaced pairs left pending.
  DenseMap<GlobalVariable *, std::pair<GlobalVariable *, GlobalVariable *>> Positions;
  std::optional<Refusal> positionTrackable(GlobalVariable *G);
  GlobalVariable *seekReadGlobal(const RegionShape &Shape);
  Instruction *replaceSeekRead(RegionShape &Shape, GlobalVariable *G);
  void trackPositions();
  void applyRegions(const PlanCluster &C, const std::string &Name,
                    std::vector<std::tuple<const Site *, const Site *, uint64_t>> &Edges,
                    const DenseMap<const Site *, uint64_t> &Recorded);
};

} // namespace syscluster

#endif
