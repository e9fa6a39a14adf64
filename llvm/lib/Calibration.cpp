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
static constexpr double CalibratedBlock = 4096;

double Calibration::savingPerBlock(uint64_t Bytes) const {
  double S = DirectNs - FusedNs;
  if (Bytes == CalibratedBlock || !(S > 2 * CrossingNs))
    return S;
  // A larger block does not save more in proportion (measured here: 16 KiB
  // blocks saved ~1.5 us each against 3.3 us for 4 KiB ones): only the two
  // crossings are claimed.
  if (Bytes > CalibratedBlock)
    return 2 * CrossingNs;
  return 2 * CrossingNs + (S - 2 * CrossingNs) * (double)Bytes / CalibratedBlock;
}

unsigned long Calibration::breakEvenBlocks(uint64_t Bytes) const {
  double S = savingPerBlock(Bytes);
  if (!(S > 0))
    return 0;
  return (unsigned long)std::ceil((FirstContextNs + ProbeNs) / S);
}

std::pair<unsigned, std::string> Calibration::fewestCalls(StringRef Rule) const {
  std::pair<unsigned, std::string> Best{0, ""};
  for (const auto &[Key, N] : MinRun)
    if (StringRef(Key).starts_with((Rule + ".").str()) && (!Best.first || N < Best.first))
      Best = {N, StringRef(Key).drop_front(Rule.size() + 1).str()};
  return Best;
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
  for (const json::Value &V : *Meas) {
    const json::Object *M = V.getAsObject();
    if (!M || M->getString("kind") != "copy-loop.file")
      continue;
    const json::Array *D = M->getArray("direct_ns"), *F = M->getArray("fusion_ns");
    if (!D || !F || D->empty() || D->size() != F->size())
      return bad(Path, "copy-loop.file has no direct_ns/fusion_ns pair");
    // A direct block costs the same at any length: the median over all
    // (as mc-calibrate decides); a fused one, what a further block of a
    // long copy costs: the median of the three longest batches.  One
    // figure disturbed by load does not decide either way.
    auto Median = [](const json::Array &A, size_t From) -> std::optional<double> {
      std::vector<double> V;
      for (size_t I = From; I < A.size(); ++I)
        if (auto N = A[I].getAsNumber())
          V.push_back(*N);
      if (V.empty())
        return std::nullopt;
      std::sort(V.begin(), V.end());
      size_t H = V.size() / 2;
      return V.size() % 2 ? V[H] : (V[H - 1] + V[H]) / 2;
    };
    auto Dn = Median(*D, 0), Fn = Median(*F, F->size() > 3 ? F->size() - 3 : 0);
    if (!Dn || !Fn)
      return bad(Path, "copy-loop.file was not measured (null)");
    C.DirectNs = *Dn;
    C.FusedNs = *Fn;
    return C;
  }
  return bad(Path, "no copy-loop.file measurement");
}

} // namespace syscluster
