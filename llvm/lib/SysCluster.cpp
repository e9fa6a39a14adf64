//===- SysCluster.cpp - clusters of a plan, decided on the IR -------------===//
//
// The pass's entry and its matching; what it does (seed 000 §3), and where
// (lib/ClusterPass.h lists the files):
//  - matches every cluster's locations to call sites (file by path suffix,
//    line, function; the source line's hash against the plan's source_hash,
//    the hash of the whole function holding it against its function_hash,
//    the file's macros that function uses against its macro_hash);
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
//    calibration says it gains;
//  - puts a loop of one write with the same arguments in every iteration
//    in writev batches (advise's batch-writes), the loop resuming after a
//    batch cut short.
// Anything else stays as it was, with a remark saying why.
//
//===----------------------------------------------------------------------===//
#include "SysCluster/SysCluster.h"
#include "ClusterPass.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using namespace syscluster;

static cl::opt<std::string>
    PlanPath("syscluster-plan",
             cl::desc("apply the clusters of this plan (syscluster advise --plan-out)"),
             cl::value_desc("file"), cl::init(""));

namespace syscluster {

void ClusterPass::collectSites(Function *Only) {
  for (Function &F : M)
    for (Instruction &I : instructions(F)) {
      if (Only && &F != Only)
        break;
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
      for (const DILocation *F = DL->getInlinedAt(); F; F = F->getInlinedAt())
        Si.Outer.push_back(F->getLine());
      // A call of a trial copy (Inline.cpp) may lie where an erased one
      // did: the erased one's entries move to a key of their own.
      if (auto It = Replaced.find(CB); It != Replaced.end()) {
        auto *Key = reinterpret_cast<CallBase *>(&Tombstones.emplace_back());
        Replaced[Key] = It->second;
        Replaced.erase(CB);
        for (Site &Old : Sites)
          if (Old.S.Call == CB)
            Old.S.Call = Key;
      }
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
  // A plan for another program (or for other files of this one): none of
  // its file:line locations names a file whose system calls are here.
  // Nothing changes; say so once, not silently.
  unsigned WithFile = 0;
  bool Here = false;
  for (const PlanCluster &C : P.Clusters)
    for (const PlanLocation &L : C.Locations)
      if (!L.File.empty() && L.Line != 0) {
        ++WithFile;
        Here = Here || any_of(Sites, [&](const Site &S) { return sourceMatch(L.File, S.File) != 0; });
      }
  if (WithFile && !Here)
    missedIn(*First, "NotInPlan",
             "syscluster: none of the plan's " + Twine(WithFile) +
                 " locations is a system call of a file of this translation unit (" + M.getSourceFileName() +
                 "): a plan for another program, or for other files of this one; nothing here is changed");
  for (const PlanCluster &C : P.Clusters)
    applyCluster(C);
  trackPositions();
  for (Function *F : Changed)
    FAM.invalidate(*F, PreservedAnalyses::none());
  return !Changed.empty();
}

void ClusterPass::applyCluster(const PlanCluster &C, Function *Only) {
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
      if (Best == 0 || sourceMatch(L.File, S.File) != Best ||
          (Only && (Replaced.count(S.S.Call) || S.S.Call->getFunction() != Only)))
        continue;
      if (auto It = Replaced.find(S.S.Call); It != Replaced.end()) {
        if ((S.Line == L.Line || is_contained(S.Outer, L.Line)) && S.S.Name == L.Syscall) {
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
      // The location is the call itself, or a call further out that
      // reaches it (a wrapper's tail call, an inlined frame: Inline.cpp).
      std::string Via;
      if (S.S.Name != L.Syscall ||
          (!(S.Line == L.Line && functionMatches(L.Function, S.S.Call)) && !reachedFrom(L, S, Via)))
        continue;
      Found = true;
      if (L.SourceHash) {
        auto Now = sourceLineHash(Via.empty() ? S.FullPath : Via, L.Line);
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
      } else if (!Only) {
        analysis(S.S.Call, "NoSourceHash",
                 Name + ": the plan has no source_hash for " + describe(S) +
                     ": whether the source changed is not checked (the region is still proved on the IR)");
      }
      // The whole function, not only the line: an edit elsewhere in it
      // that moves no line (an error check, a buffer size)
      // makes the plan stale too (docs/PLAN_FORMAT.md, function_hash).
      if (L.FunctionHash) {
        std::string File = Via.empty() ? S.FullPath : Via;
        std::string Fn = L.Function.empty() ? S.S.Call->getFunction()->getName().str() : L.Function;
        std::pair<unsigned, unsigned> Span{0, 0};
        auto Now = functionHash(File, L.Line, &Span);
        if (!Now || *Now != *L.FunctionHash) {
          missed(S.S.Call, "StaleFunction",
                 Name + ": stale plan: the function " + Fn + " holding " + describe(S) +
                     " changed since the recording: " +
                     (Now ? "its source (" + sys::path::filename(File).str() + ":" + std::to_string(Span.first) +
                                "-" + std::to_string(Span.second) + ") is not the one the plan was made from "
                                "(function_hash " + *L.FunctionHash + ", now " + *Now + ")"
                          : File + " cannot be read, or no function body holds line " + std::to_string(L.Line) +
                                " now") +
                     "; left as it is");
          Stale = true;
          continue;
        }
        // The macros of the file the function uses, defined outside it
        // (`#define BUFSIZE 4096` above it): docs/PLAN_FORMAT.md, macro_hash.
        if (L.MacroHash) {
          auto MNow = macroHash(File, L.Line);
          if (!MNow || *MNow != *L.MacroHash) {
            missed(S.S.Call, "StaleMacros",
                   Name + ": stale plan: the macros of " + sys::path::filename(File).str() + " that the function " +
                       Fn + " holding " + describe(S) + " uses changed since the recording (macro_hash " +
                       *L.MacroHash + ", now " + MNow.value_or("none") + "); left as it is");
            Stale = true;
            continue;
          }
        } else if (!Only) {
          analysis(S.S.Call, "NoMacroHash",
                   Name + ": the plan has no macro_hash for " + describe(S) +
                       " (a plan written before it): the macros the function uses, defined outside it, are not "
                       "checked");
        }
      } else if (L.SourceHash && !Only) {
        analysis(S.S.Call, "NoFunctionHash",
                 Name + ": the plan has no function_hash for " + describe(S) +
                     " (a plan_version 1 plan): the function was not fingerprinted, only its line is checked");
      }
      if (!Only)
        analysis(S.S.Call, "Matched",
                 Name + ": " + describe(S) + " matched (" + Twine(L.Count) + " calls recorded there" +
                     (Via.empty() ? std::string()
                                  : ", at " + sys::path::filename(L.File).str() + ":" + std::to_string(L.Line) +
                                        ", the call that reaches it") +
                     ")");
      if (std::find(Matched.begin(), Matched.end(), &S) == Matched.end())
        Matched.push_back(&S);
      Recorded[&S] += L.Count;
    }
    if (!Found && !InFile && !Only)
      declaredElsewhere(L, Name);
    if (!Found && InFile && !Only && !callsElsewhere(L, Name))
      missed(InFile->S.Call, "StalePlan",
             Name + ": stale plan: no call to " + L.Syscall + " at " +
                 sys::path::filename(InFile->File) + ":" + Twine(L.Line) +
                 (L.Function.empty() ? "" : " in " + L.Function) + " in this source; left as it is");
  }
  if (Stale || Matched.empty())
    return;

  // A loop of one write (advise's batch-writes): its iterations in writev
  // batches (BatchWrite.cpp).
  if (C.Rule == "batch-writes") {
    for (const Site *S : Matched)
      if (S->S.Name == "write" && !Replaced.count(S->S.Call) &&
          applyBatchWrite(*S, C, Name, Recorded.lookup(S))) {
        Replaced[S->S.Call] = {S->S.Call, C.Id};
        Changed.insert(S->S.Call->getFunction());
        FAM.invalidate(*S->S.Call->getFunction(), PreservedAnalyses::none());
      }
    return;
  }

  // The write→read pairs of a copy cluster: after loop rotation (§3.3.3) a
  // write followed by the next iteration's read.
  bool IsCopy = C.Calls.size() == 2 &&
                ((C.Calls[0].Syscall == "read" && C.Calls[1].Syscall == "write") ||
                 (C.Calls[0].Syscall == "write" && C.Calls[1].Syscall == "read"));
  bool Tried = false;
  std::vector<std::tuple<const Site *, const Site *, uint64_t>> Edges; // clusterable, with their weight
  std::vector<SitePair> Across; // edges whose calls lie in different functions (Inline.cpp)
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
        Across.emplace_back(A, B);
        Tried = true;
        continue;
      }
      Tried = true;
      // The copy loop whose write is checked is not rotated: the read
      // heads it (CheckedLoop.cpp).
      if (IsCopy && A->S.Name == "write" && B->S.Name == "read" &&
          applyCheckedCopyLoop(*A, *B, C, Name, Recorded.lookup(B)))
        continue;
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
  if (!Only && !Across.empty())
    inlineAcross(C, Name, Across, Matched);
  if (!Tried && !Already && !Only)
    missed(Matched.front()->S.Call, "Region",
           Name + ": the cluster's calls matched here do not form one of its edges; left as it is");
}

} // namespace syscluster

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
