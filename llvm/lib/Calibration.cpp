//===- Calibration.cpp - reading libmulticall's calibration ---------------===//
#include "SysCluster/Calibration.h"
#include "SysCluster/Plan.h"

#include "llvm/Support/JSON.h"
#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>
#include <cstdlib>

using namespace llvm;

namespace syscluster {

static Error bad(StringRef Path, const Twine &What) {
  return createStringError(inconvertibleErrorCode(), "calibration " + Path + ": " + What);
}

std::string defaultCalibrationPath() {
  // The same order as libmulticall's calib_path().
  if (const char *E = std::getenv("MULTICALL_CALIBRATION"))
    return StringRef(E) == "none" ? std::string() : std::string(E);
  if (const char *X = std::getenv("XDG_CACHE_HOME"); X && *X)
    return std::string(X) + "/syscluster/multicall-calibration.json";
  if (const char *H = std::getenv("HOME"); H && *H)
    return std::string(H) + "/.cache/syscluster/multicall-calibration.json";
  return {};
}

// The block mc-calibrate's copy-loop.file copies (measure_loop in
// libmulticall/tools/mc-calibrate.c).
static constexpr uint64_t CalibratedBlock = 4096;

/// Below the smallest block measured: its two crossings and the share of
/// the rest (the bytes moved twice through the program) its size has.
static double scaledDown(double S, double Crossings, uint64_t Bytes, uint64_t Measured) {
  if (!(S > Crossings))
    return S;
  return Crossings + (S - Crossings) * (double)Bytes / (double)Measured;
}

Calibration::Saving Calibration::savingPerBlock(uint64_t Bytes) const {
  double Two = 2 * CrossingNs;
  auto B = [](uint64_t N) { return std::to_string(N) + " B"; };
  if (Blocks.empty()) {
    // A file from an older mc-calibrate: copy-loop.file's 4096 B blocks only.
    double S = DirectNs - FusedNs;
    if (Bytes == CalibratedBlock)
      return {S, DirectNs, FusedNs, "measured at 4096 B by copy-loop.file"};
    if (Bytes < CalibratedBlock)
      return {scaledDown(S, Two, Bytes, CalibratedBlock), DirectNs, FusedNs,
              "scaled from copy-loop.file's 4096 B"};
    return {std::min(S, Two), DirectNs, FusedNs,
            "its two crossings: this calibration measures no block above 4096 B (copy-loop.file; a newer "
            "mc-calibrate measures copy-block.file)"};
  }
  const BlockPoint &First = Blocks.front(), &Last = Blocks.back();
  if (Bytes < First.Bytes)
    return {scaledDown(First.DirectNs - First.FusedNs, Two, Bytes, First.Bytes), First.DirectNs, First.FusedNs,
            "scaled from " + B(First.Bytes) + ", copy-block.file's smallest"};
  if (Bytes > Last.Bytes)
    return {std::min(Last.DirectNs - Last.FusedNs, Two), Last.DirectNs, Last.FusedNs,
            "its two crossings: copy-block.file measures blocks up to " + B(Last.Bytes)};
  for (size_t I = 0;; ++I) {
    const BlockPoint &P = Blocks[I];
    if (Bytes == P.Bytes)
      return {P.DirectNs - P.FusedNs, P.DirectNs, P.FusedNs, "measured at " + B(P.Bytes) + " by copy-block.file"};
    const BlockPoint &Q = Blocks[I + 1];
    if (Bytes < Q.Bytes) {
      // Linear between the two sizes measured around it.
      double X = (double)(Bytes - P.Bytes) / (double)(Q.Bytes - P.Bytes);
      double D = P.DirectNs + X * (Q.DirectNs - P.DirectNs), F = P.FusedNs + X * (Q.FusedNs - P.FusedNs);
      return {D - F, D, F, "interpolated between " + B(P.Bytes) + " and " + B(Q.Bytes) + " of copy-block.file"};
    }
  }
}

Calibration::Charge Calibration::copyFirstContext() const {
  if (FirstFusionNs > 0)
    return {FirstFusionNs, "a fusion context: costs_ns.first_fusion_context"};
  return {FirstContextNs, "an auto context: costs_ns.first_context, this calibration has no first_fusion_context"};
}

Calibration::Charge Calibration::copyFixed() const {
  if (CopyFixedNs >= 0)
    return {CopyFixedNs, "fixed cost (costs_ns.fused_copy_fixed: the gate, the probes, the read taken back, the "
                         "buffer refilled)"};
  return {ProbeNs, "probes"};
}

unsigned long Calibration::breakEvenBlocks(uint64_t Bytes) const {
  double S = savingPerBlock(Bytes).Ns;
  if (!(S > 0))
    return 0;
  return (unsigned long)std::ceil((copyFirstContext().Ns + copyFixed().Ns) / S);
}

std::pair<unsigned, std::string> Calibration::fewestCalls(StringRef Rule) const {
  std::pair<unsigned, std::string> Best{0, ""};
  for (const auto &[Key, N] : MinRun)
    if (StringRef(Key).starts_with((Rule + ".").str()) && (!Best.first || N < Best.first))
      Best = {N, StringRef(Key).drop_front(Rule.size() + 1).str()};
  return Best;
}

static std::optional<double> median(const json::Array &A, size_t From) {
  std::vector<double> V;
  for (size_t I = From; I < A.size(); ++I)
    if (auto N = A[I].getAsNumber())
      V.push_back(*N);
  if (V.empty())
    return std::nullopt;
  std::sort(V.begin(), V.end());
  size_t H = V.size() / 2;
  return V.size() % 2 ? V[H] : (V[H - 1] + V[H]) / 2;
}

/// copy-block.file: block_bytes (whole numbers, ascending) and direct_ns,
/// fusion_ns aligned with them (ns per block; null where not measured,
/// then that size is left out).
static Error readBlocks(StringRef Path, const json::Object &M, std::vector<Calibration::BlockPoint> &Out) {
  const json::Array *Sizes = M.getArray("block_bytes"), *D = M.getArray("direct_ns"), *F = M.getArray("fusion_ns");
  if (!Sizes || !D || !F || Sizes->empty() || D->size() != Sizes->size() || F->size() != Sizes->size())
    return bad(Path, "copy-block.file needs block_bytes, direct_ns and fusion_ns of the same length");
  uint64_t Prev = 0;
  for (size_t I = 0; I < Sizes->size(); ++I) {
    std::optional<int64_t> N = (*Sizes)[I].getAsInteger();
    if (!N || *N <= (int64_t)Prev || *N > (1 << 30))
      return bad(Path, "copy-block.file's block_bytes are not whole numbers of bytes in ascending order");
    Prev = (uint64_t)*N;
    std::optional<double> Dn = (*D)[I].getAsNumber(), Fn = (*F)[I].getAsNumber();
    if ((*D)[I].kind() == json::Value::Null || (*F)[I].kind() == json::Value::Null)
      continue;
    if (!Dn || !Fn || !(*Dn > 0) || !(*Fn > 0))
      return bad(Path, "copy-block.file's direct_ns and fusion_ns are not positive numbers or null");
    Out.push_back({Prev, *Dn, *Fn});
  }
  if (Out.empty())
    return bad(Path, "copy-block.file was not measured (null)");
  return Error::success();
}

Expected<Calibration> loadCalibration(StringRef Path) {
  auto Parsed = readJsonObject("calibration", Path);
  if (!Parsed)
    return Parsed.takeError();
  const json::Object *Top = Parsed->getAsObject();
  const json::Object *Costs = Top->getObject("costs_ns");
  const json::Array *Meas = Top->getArray("measurements");
  if (!Costs || !Meas)
    return bad(Path, "no costs_ns or measurements (not written by mc-calibrate)");
  Calibration C;
  C.Path = Path.str();
  auto Num = [&](StringRef Key) { return Costs->getNumber(Key); };
  auto First = Num("first_context");
  if (!First)
    return bad(Path, "no costs_ns.first_context (made by an older mc-calibrate): run "
                     "`syscluster calibrate --recalibrate` again");
  auto Crossing = Num("crossing"), Statx = Num("statx"), Fstatfs = Num("fstatfs");
  if (!Crossing || !Statx || !Fstatfs)
    return bad(Path, "costs_ns lacks crossing, statx or fstatfs");
  C.FirstContextNs = *First;
  // Written by mc-calibrate since 2026-11; an older file prices a copy
  // loop's first context as an auto one (copyFirstContext).
  if (auto Fusion = Num("first_fusion_context")) {
    if (!(*Fusion > 0))
      return bad(Path, "costs_ns.first_fusion_context is not a positive number");
    C.FirstFusionNs = *Fusion;
  }
  // Written by mc-calibrate since 2026-11-25; an older file charges the
  // probes' calls only (copyFixed).
  if (auto Fixed = Num("fused_copy_fixed")) {
    if (!(*Fixed >= 0))
      return bad(Path, "costs_ns.fused_copy_fixed is not a number of nanoseconds (0 or more)");
    C.CopyFixedNs = *Fixed;
  }
  C.CrossingNs = *Crossing;
  // The gate: fstat + lseek; libmulticall's probe: statx of both ends,
  // fstatfs, an lseek back, a pread restoring the buffer at the end.
  C.ProbeNs = 3 * *Statx + *Fstatfs + 3 * *Crossing;
  // The fusion rules' thresholds (decisions.min_run: "rule.class" ->
  // [unregistered, registered]): a straight-line region gains only where
  // one applies.
  if (const json::Object *Dec = Top->getObject("decisions"))
    if (const json::Object *Min = Dec->getObject("min_run"))
      for (const auto &[Key, V] : *Min)
        if (const json::Array *A = V.getAsArray(); A && !A->empty())
          if (auto N = (*A)[0].getAsInteger(); N && *N > 0)
            C.MinRun[Key.str()] = static_cast<unsigned>(*N);
  bool Loop = false;
  for (const json::Value &V : *Meas) {
    const json::Object *M = V.getAsObject();
    std::optional<StringRef> Kind = M ? M->getString("kind") : std::nullopt;
    if (Kind == "copy-block.file") {
      if (auto E = readBlocks(Path, *M, C.Blocks))
        return std::move(E);
      continue;
    }
    if (Kind != "copy-loop.file")
      continue;
    const json::Array *D = M->getArray("direct_ns"), *F = M->getArray("fusion_ns");
    if (!D || !F || D->empty() || D->size() != F->size())
      return bad(Path, "copy-loop.file has no direct_ns/fusion_ns pair");
    // A direct block costs the same at any length: the median over all
    // (as mc-calibrate decides); a fused one, what a further block of a
    // long copy costs: the median of the three longest batches.  One
    // figure disturbed by load does not decide either way.
    auto Dn = median(*D, 0), Fn = median(*F, F->size() > 3 ? F->size() - 3 : 0);
    if (!Dn || !Fn)
      return bad(Path, "copy-loop.file was not measured (null)");
    C.DirectNs = *Dn;
    C.FusedNs = *Fn;
    Loop = true;
  }
  if (!Loop)
    return bad(Path, "no copy-loop.file measurement");
  return C;
}

} // namespace syscluster
