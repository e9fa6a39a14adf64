//===- Inline.cpp - a plan edge across functions: inlining (§3.3) --------===//
//
// Seed 000 §3.3: "two adjacent system calls in the syscall graph may
// actually reside in different procedures. However, they can be brought
// together using simple techniques such as function inlining."  Programs
// wrap their calls (safe_read, xwrite, write_buf); when clang's own inliner
// left such a helper out of line (too large for its threshold), a plan edge
// read -> write has its two calls in two functions.
//
// For such an edge the pass looks for the nearest function of this module
// that calls both (within MaxDepth calls), inlines the calls on the way —
// only those of the caller that dominate or follow one another, each
// checked (defined here, not interposable, not noinline or optnone, not
// variadic, not recursive, not larger than MaxCalleeSize) — into a *trial
// copy* of the caller, and applies the cluster to the copy as to any
// function.  When a region of the copy is replaced, the copy's body becomes
// the caller's; otherwise the copy is dropped and the caller is left as it
// was.  The helpers themselves never change: their other callers, and
// anyone holding their address, keep the original body.
//
//===----------------------------------------------------------------------===//
#include "ClusterPass.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Analysis/InlineCost.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/InstIterator.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"
#include "llvm/Transforms/Utils/BasicBlockUtils.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

namespace syscluster {

namespace {
constexpr unsigned MaxDepth = 2;        // calls from the common caller down to a system call's function
constexpr unsigned MaxCalleeSize = 500; // IR instructions of a function the pass inlines
constexpr unsigned MaxInlined = 16;     // call sites inlined into one caller for one cluster

/// The functions from which F is reached by at most MaxDepth direct calls,
/// with the fewest calls it takes (F itself: 0).
DenseMap<Function *, unsigned> callersOf(Function *F) {
  DenseMap<Function *, unsigned> Dist{{F, 0}};
  SmallVector<Function *, 8> Work{F};
  for (unsigned D = 1; D <= MaxDepth; ++D) {
    SmallVector<Function *, 8> Next;
    for (Function *G : Work)
      for (User *U : G->users())
        if (auto *CB = dyn_cast<CallBase>(U); CB && CB->getCalledOperand() == G)
          if (Function *P = CB->getFunction(); Dist.try_emplace(P, D).second)
            Next.push_back(P);
    Work = std::move(Next);
  }
  return Dist;
}

/// Why the call CB of Callee may not be inlined, or nothing.
std::optional<std::string> cannotInline(CallBase &CB, Function &Callee) {
  std::string N = Callee.getName().str();
  if (Callee.isDeclaration())
    return N + " is defined in another translation unit (the pass sees one at a time)";
  if (CB.getFunctionType() != Callee.getFunctionType())
    return "the call's type is not " + N + "'s";
  if (Callee.isInterposable())
    return N + " may be replaced by another definition when the program is linked (a weak definition)";
  if (Callee.hasFnAttribute(Attribute::NoInline) || CB.isNoInline())
    return N + " is marked noinline (the program asks for it to stay a call; clang marks every function so "
               "at -O0 and under -fno-inline)";
  if (Callee.hasOptNone())
    return N + " is optnone (compiled at -O0)";
  if (Callee.isVarArg())
    return N + " takes variable arguments";
  if (unsigned Size = Callee.getInstructionCount(); Size > MaxCalleeSize)
    return N + " has " + std::to_string(Size) + " instructions, more than the " + std::to_string(MaxCalleeSize) +
           " the pass inlines";
  InlineResult R = isInlineViable(Callee);
  if (!R.isSuccess())
    return N + ": " + std::string(R.getFailureReason()); // "recursive call", "contains indirect branches", ...
  for (const BasicBlock &BB : Callee)
    for (const Instruction &I : BB)
      if (auto *Inner = dyn_cast<CallBase>(&I); Inner && Inner->getCalledOperand() == &Callee)
        return N + " is recursive";
  return std::nullopt;
}
} // namespace

/// Whether the plan's location L is a call further out that reaches the
/// system call S — the recorder names the code a system call returns to:
/// when a wrapper ends in it (`return read(fd, buf, n);`, a tail call, a
/// jump at -O2) that is the wrapper's caller.  So L is S's place when an
/// inlined frame of S's debug location is L's line (S inlined there, as in
/// a trial copy), or S is its function's last act (a call followed by its
/// return) and that function is called at L's line.  Path: L's source file.
bool ClusterPass::reachedFrom(const PlanLocation &L, const Site &S, std::string &Path) {
  auto Same = [&](const DILocation *DL) {
    if (!DL || DL->getLine() != L.Line || sourceMatch(L.File, DL->getFilename()) == 0)
      return false;
    const DISubprogram *SP = DL->getScope()->getSubprogram();
    if (!L.Function.empty() && (!SP || (SP->getName() != L.Function && SP->getLinkageName() != L.Function)))
      return false;
    SmallString<256> Full(DL->getFilename());
    if (!sys::path::is_absolute(Full)) {
      Full = DL->getDirectory();
      sys::path::append(Full, DL->getFilename());
    }
    Path = Full.str().str();
    return true;
  };
  if (const DILocation *DL = S.S.Call->getDebugLoc().get())
    for (const DILocation *F = DL->getInlinedAt(); F; F = F->getInlinedAt())
      if (Same(F))
        return true;
  const Instruction *Next = S.S.Call->getNextNonDebugInstruction();
  auto *Ret = dyn_cast_or_null<ReturnInst>(Next);
  if (!Ret || (Ret->getReturnValue() && Ret->getReturnValue() != S.S.Call))
    return false;
  Function *G = S.S.Call->getFunction();
  for (User *U : G->users())
    if (auto *CB = dyn_cast<CallBase>(U); CB && CB->getCalledOperand() == G && Same(CB->getDebugLoc().get()))
      return true;
  return false;
}

/// A plan location whose line has no such system call but a call to a
/// function defined in another translation unit: a wrapper there that ends
/// in the system call (the recorder names the wrapper's caller).  Says so
/// (instead of calling the plan stale) and returns true.
bool ClusterPass::callsElsewhere(const PlanLocation &L, const std::string &Name) {
  for (Function &F : M) {
    if (F.isDeclaration() || (!L.Function.empty() && F.getName() != L.Function))
      continue;
    for (Instruction &I : instructions(F)) {
      auto *CB = dyn_cast<CallBase>(&I);
      Function *G = CB ? CB->getCalledFunction() : nullptr;
      const DebugLoc &DL = I.getDebugLoc();
      if (!G || !G->isDeclaration() || G->isIntrinsic() || recognizeSyscall(*CB) || !DL || DL.getLine() != L.Line ||
          sourceMatch(L.File, DL->getFilename()) == 0)
        continue;
      missed(CB, "NotInlined",
             Name + ": " + L.Syscall + " at " + sys::path::filename(L.File) + ":" + Twine(L.Line) + " is issued by " +
                 G->getName() + ", which " + F.getName() +
                 " calls there and which is defined in another translation unit (a wrapper ending in " + L.Syscall +
                 ": the recorder names its caller): it cannot be inlined here (the pass sees one translation unit "
                 "at a time; inlining across them, as under -flto, is not done)");
      return true;
    }
  }
  return false;
}

void ClusterPass::removeSites(const Function &F) {
  // A replaced call is erased: its entry is kept (AlreadyClustered), never dereferenced.
  Sites.remove_if([&](const Site &S) { return !Replaced.count(S.S.Call) && S.S.Call->getFunction() == &F; });
}

/// A plan location in a function that this module only declares and calls:
/// the helper is defined in another translation unit.
void ClusterPass::declaredElsewhere(const PlanLocation &L, const std::string &Name) {
  Function *D = L.Function.empty() ? nullptr : M.getFunction(L.Function);
  if (!D || !D->isDeclaration() || !Elsewhere.insert({Name, D}).second)
    return;
  CallBase *First = nullptr;
  for (User *U : D->users())
    if (auto *CB = dyn_cast<CallBase>(U); CB && CB->getCalledOperand() == D && CB->getDebugLoc())
      if (!First || CB->getDebugLoc().getLine() < First->getDebugLoc().getLine())
        First = CB;
  if (First)
    missed(First, "NotInlined",
           Name + ": " + L.Syscall + " at " + sys::path::filename(L.File) + ":" + Twine(L.Line) + " is in " +
               L.Function + ", called here (" + First->getFunction()->getName() + " at " + at(First) +
               "), which is defined in another translation unit: it cannot be inlined here (the pass sees one "
               "translation unit at a time; inlining across them, as under -flto, is not done)");
}

void ClusterPass::inlineAcross(const PlanCluster &C, const std::string &Name, ArrayRef<SitePair> Pairs,
                               ArrayRef<const Site *> Matched) {
  // The callers to try, in the order found, with the sites their calls lead to.
  struct Trial {
    Function *Caller;
    SmallPtrSet<Function *, 8> Need; // functions on the way from the caller to a site
    SmallVector<SitePair, 4> Pairs;
    SmallVector<std::pair<SmallPtrSet<Function *, 4>, SmallPtrSet<Function *, 4>>, 4> Ways; // per pair: to A, to B
  };
  std::vector<Trial> Trials;
  for (auto [A, B] : Pairs) {
    if (Replaced.count(A->S.Call) || Replaced.count(B->S.Call))
      continue;
    Function *FA = A->S.Call->getFunction(), *FB = B->S.Call->getFunction();
    // The edge lies within one function already: clang inlined the helper
    // there and kept its body for other callers.
    auto Within = [&](const Site *X, const Function *G) {
      return any_of(Matched, [&](const Site *S) {
        return !Replaced.count(S->S.Call) && S->S.Call->getFunction() == G && S->S.Name == X->S.Name &&
               S->Line == X->Line && S->File == X->File;
      });
    };
    if (Within(B, FA) || Within(A, FB))
      continue;
    auto DA = callersOf(FA), DB = callersOf(FB);
    Function *Best = nullptr;
    unsigned BestD = ~0u;
    for (Function &F : M) {
      auto IA = DA.find(&F), IB = DB.find(&F);
      if (IA != DA.end() && IB != DB.end() && IA->second + IB->second < BestD) {
        Best = &F;
        BestD = IA->second + IB->second;
      }
    }
    std::string What = Name + ": " + describe(*A) + " (in " + FA->getName().str() + ") and " + describe(*B) +
                       " (in " + FB->getName().str() + ") are in different functions";
    if (!Best) {
      auto Uncalled = [](const DenseMap<Function *, unsigned> &D, Function *F) {
        return D.size() == 1 ? " " + F->getName().str() + " is not called in this translation unit;" : "";
      };
      missed(A->S.Call, "NotInlined",
             What + " and no function of this translation unit calls both (within " + Twine(MaxDepth) +
                 " calls):" + Uncalled(DA, FA) + Uncalled(DB, FB) +
                 " a common caller, if there is one, is in another translation unit (the pass sees one at a "
                 "time)");
      continue;
    }
    auto It = find_if(Trials, [&](const Trial &T) { return T.Caller == Best; });
    if (It == Trials.end()) {
      Trials.emplace_back();
      Trials.back().Caller = Best;
      It = std::prev(Trials.end());
    }
    auto &Way = It->Ways.emplace_back();
    for (auto [G, D] : DA)
      if (G != Best && D < DA.lookup(Best))
        Way.first.insert(G);
    for (auto [G, D] : DB)
      if (G != Best && D < DB.lookup(Best))
        Way.second.insert(G);
    It->Need.insert(Way.first.begin(), Way.first.end());
    It->Need.insert(Way.second.begin(), Way.second.end());
    It->Pairs.push_back({A, B});
  }

  SmallPtrSet<Function *, 4> Callees; // inlined where a trial was kept
  for (size_t TI = 0; TI < Trials.size(); ++TI) {
    // A trial kept replaces the body some sites were in (their entries
    // leave Sites): the trials still to come go on with live pairs only,
    // dropped now, before this trial's sites may take the freed places.
    auto Alive = [&](const Site *X) {
      return any_of(Sites, [&](const Site &S) { return &S == X; }) && !Replaced.count(X->S.Call);
    };
    for (size_t TJ = TI; TJ < Trials.size(); ++TJ)
      for (size_t PI = Trials[TJ].Pairs.size(); PI-- > 0;)
        if (!Alive(Trials[TJ].Pairs[PI].first) || !Alive(Trials[TJ].Pairs[PI].second)) {
          Trials[TJ].Pairs.erase(Trials[TJ].Pairs.begin() + PI);
          Trials[TJ].Ways.erase(Trials[TJ].Ways.begin() + PI);
        }
    Trial &T = Trials[TI];
    if (T.Pairs.empty())
      continue;
    Function *Caller = T.Caller;
    std::string FName = Caller->getName().str();
    if (Caller->hasOptNone()) {
      missed(T.Pairs.front().first->S.Call, "NotInlined",
             Name + ": " + FName + ", which calls the functions holding the calls, is optnone (compiled at -O0): "
                                   "nothing is inlined into it");
      continue;
    }
    if (any_of(*Caller, [](const BasicBlock &BB) { return BB.hasAddressTaken(); })) {
      missed(T.Pairs.front().first->S.Call, "NotInlined",
             Name + ": " + FName + " takes the address of its own code (blockaddress): no trial copy is made");
      continue;
    }
    // The calls of the caller that lead to each side of an edge; a call that
    // leads to one side is inlined when it dominates, or follows, one that
    // leads to the other (the two may then form a region).
    DominatorTree &DT = FAM.getResult<DominatorTreeAnalysis>(*Caller);
    DenseMap<CallBase *, const Site *> Leads; // call in the caller -> the site it leads to
    SmallVector<CallBase *, 8> Selected;
    for (size_t PI = 0; PI < T.Pairs.size(); ++PI) {
      const Site *A = T.Pairs[PI].first, *B = T.Pairs[PI].second;
      auto Towards = [&](const Site *X, const SmallPtrSet<Function *, 4> &Way) {
        SmallVector<CallBase *, 4> Out;
        if (X->S.Call->getFunction() == Caller) {
          Out.push_back(X->S.Call);
          return Out;
        }
        for (Instruction &I : instructions(*Caller))
          if (auto *CB = dyn_cast<CallBase>(&I))
            if (Function *G = CB->getCalledFunction(); G && Way.count(G)) {
              Out.push_back(CB);
              Leads.try_emplace(CB, X);
            }
        return Out;
      };
      auto SA = Towards(A, T.Ways[PI].first), SB = Towards(B, T.Ways[PI].second);
      for (CallBase *X : SA)
        for (CallBase *Y : SB)
          if (X != Y && (DT.dominates(X, Y) || DT.dominates(Y, X)))
            for (CallBase *Z : {X, Y})
              if (Leads.count(Z) && !is_contained(Selected, Z))
                Selected.push_back(Z);
    }
    if (Selected.empty()) {
      const SitePair &P = T.Pairs.front();
      missed(P.first->S.Call, "NotInlined",
             Name + ": " + describe(*P.first) + " and " + describe(*P.second) + " are reached from " + FName +
                 " by calls neither of which dominates the other: inlining cannot bring them together");
      continue;
    }
    // Each call checked before any is inlined; a refused one stays a call.
    struct Done {
      DebugLoc Loc;
      std::string Callee, Where, What; // What: the system call it leads to
    };
    SmallVector<std::pair<CallBase *, const Site *>, 8> Work;
    for (CallBase *CB : Selected) {
      const Site *X = Leads.lookup(CB);
      if (auto Why = cannotInline(*CB, *CB->getCalledFunction())) {
        missed(CB, "NotInlined",
               Name + ": " + describe(*X) + " is reached through " + CB->getCalledFunction()->getName() +
                   ", called from " + FName + " at " + at(CB) + ": it cannot be inlined: " + *Why);
        continue;
      }
      Work.push_back({CB, X});
    }
    if (Work.empty())
      continue;

    // The trial copy takes the caller's name while it is tried, so that
    // remarks and matching name the function the user knows.
    Caller->setName(FName + ".syscluster.original");
    // Its debug info stays the caller's (LocalChangesOnly: the same
    // DISubprogram), since one of the two bodies goes before the pass ends.
    ValueToValueMapTy VMap;
    Function *Copy = Function::Create(Caller->getFunctionType(), Caller->getLinkage(), Caller->getAddressSpace(),
                                      FName, &M);
    for (unsigned I = 0; I < Caller->arg_size(); ++I)
      VMap[Caller->getArg(I)] = Copy->getArg(I);
    if (DISubprogram *SP = Caller->getSubprogram())
      VMap.MD()[SP].reset(SP); // else CloneFunctionInto makes the copy a DISubprogram of its own
    SmallVector<ReturnInst *, 4> Returns;
    CloneFunctionInto(Copy, Caller, VMap, CloneFunctionChangeType::LocalChangesOnly, Returns);
    for (auto &[CB, X] : Work)
      CB = cast<CallBase>(VMap[CB]);
    SmallVector<Done, 8> Inlined;
    for (unsigned Round = 0; Round < MaxDepth && !Work.empty(); ++Round) {
      SmallVector<std::pair<CallBase *, const Site *>, 8> Next;
      for (auto [CB, X] : Work) {
        Function *G = CB->getCalledFunction();
        if (Round > 0) { // a call inside inlined code: only one on the way
          if (!G || !T.Need.count(G))
            continue;
          if (auto Why = cannotInline(*CB, *G)) {
            missed(CB, "NotInlined",
                   Name + ": " + describe(*X) + " is reached through " + G->getName() + ", called at " + at(CB) +
                       ": it cannot be inlined: " + *Why);
            continue;
          }
        }
        if (Inlined.size() == MaxInlined)
          break;
        Done D{CB->getDebugLoc(), G->getName().str(), at(CB), describe(*X)};
        InlineFunctionInfo IFI;
        InlineResult R = InlineFunction(*CB, IFI, /*MergeAttributes=*/true, /*CalleeAAR=*/nullptr,
                                        /*InsertLifetime=*/false);
        if (!R.isSuccess()) {
          missed(X->S.Call, "NotInlined",
                 Name + ": " + describe(*X) + " is reached through " + D.Callee + ", called from " + FName + " at " +
                     D.Where + ": LLVM refused to inline it: " + R.getFailureReason());
          continue;
        }
        Inlined.push_back(std::move(D));
        for (CallBase *Inner : IFI.InlinedCallSites)
          Next.push_back({Inner, X});
      }
      Work = std::move(Next);
    }
    // Blocks that only follow one another (a helper's entry and return)
    // become one, as the copy loop's replacement expects of a loop body.
    for (BasicBlock &BB : make_early_inc_range(*Copy))
      MergeBlockIntoPredecessor(&BB);

    bool Kept = false;
    if (!Inlined.empty()) {
      collectSites(Copy);
      applyCluster(C, Copy);
      Kept = Changed.count(Copy);
    }
    if (Kept)
      for (const Done &D : Inlined)
        if (Function *G = M.getFunction(D.Callee))
          Callees.insert(G);
    removeSites(Kept ? *Caller : *Copy);
    FAM.clear(*Copy, FName);
    FAM.clear(*Caller, FName);
    if (Kept) {
      // Multi-calls of the caller's old body (earlier clusters) are the copy's now.
      for (auto &[Call, MC] : Replaced)
        if (MC.first->getFunction() == Caller)
          MC.first = cast<Instruction>(VMap.lookup(MC.first));
      // The copy's body becomes the caller's (its address, linkage, debug
      // info stay the caller's).
      for (BasicBlock &BB : *Caller)
        BB.dropAllReferences();
      while (!Caller->empty())
        Caller->begin()->eraseFromParent();
      Caller->splice(Caller->end(), Copy);
      for (unsigned I = 0; I < Caller->arg_size(); ++I)
        Copy->getArg(I)->replaceAllUsesWith(Caller->getArg(I));
      Caller->setAttributes(Copy->getAttributes()); // merged with the inlined functions'
      Changed.erase(Copy);
      Changed.insert(Caller);
    }
    Copy->setName(FName + ".syscluster.trial");
    Caller->setName(FName);
    Copy->eraseFromParent();
    std::set<std::string> Said; // two calls of one line (a rotated loop's guard and body): one remark
    for (const Done &D : Inlined) {
      std::string Msg = Name + ": " + D.What + " is reached through " + D.Callee + ", called from " +
                        FName + " at " + D.Where;
      if (!Said.insert(Msg).second)
        continue;
      if (Kept)
        ore(*Caller).emit([&] {
          return OptimizationRemark(PassName, "Inlined", DiagnosticLocation(D.Loc), &Caller->getEntryBlock())
                 << Msg + ": inlined (§3.3) for the multi-call it is now part of";
        });
      else
        ore(*Caller).emit([&] {
          return OptimizationRemarkMissed(PassName, "InliningUndone", DiagnosticLocation(D.Loc),
                                          &Caller->getEntryBlock())
                 << Msg + ": inlined into a trial copy of " + FName +
                        ", but no region of the cluster was replaced there (the remarks above say why): " + FName +
                        " is left as it was";
        });
    }
  }
  // A helper of this file that nothing calls any more goes, as after
  // clang's own inlining (not one that holds a multi-call itself).
  for (Function *G : Callees)
    if (G->hasLocalLinkage() && G->use_empty() && !Changed.count(G)) {
      removeSites(*G);
      FAM.clear(*G, G->getName());
      G->eraseFromParent();
    }
}

} // namespace syscluster
