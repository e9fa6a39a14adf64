//===- Calibration.h - what a multi-call gains on the host ----------------===//
//
// The part of libmulticall's calibration (mc-calibrate, written by
// `syscluster calibrate` as multicall-calibration.json) the pass needs to
// decide whether a region gains on the host it compiles for (issue 12,
// "never a slower program"): the cost of a program's first context, of the
// calls that classify a copy's descriptors, and the saving per block of the
// fused copy loop.  Found where libmulticall finds it, so that the pass and
// the rebuilt program read the same file.
//
//===----------------------------------------------------------------------===//
#ifndef SYSCLUSTER_CALIBRATION_H
#define SYSCLUSTER_CALIBRATION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <map>
#include <string>

namespace syscluster {

struct Calibration {
  std::string Path;
  double FirstContextNs = 0; // costs_ns.first_context
  double ProbeNs = 0;        // the gate's fstat+lseek, the library's statx x2, fstatfs, lseek, pread
  double DirectNs = 0;       // copy-loop.file: a block copied by read+write, median of all batches
  double FusedNs = 0;        // the same block in the looped multi-call, median of the 3 longest batches
  double CrossingNs = 0;      // costs_ns.crossing
  /// decisions.min_run: the fewest calls from which a fusion rule pays on
  /// an unregistered descriptor of a class ("writev.file" -> 2).
  std::map<std::string, unsigned> MinRun;
  /// The fewest calls from which the fusion rule Rule ("writev") pays on
  /// some descriptor class, with that class; 0 when no class is measured.
  std::pair<unsigned, std::string> fewestCalls(llvm::StringRef Rule) const;
  /// What the fused loop saves per block of Bytes: the measured saving for
  /// mc-calibrate's 4096-byte blocks; for a smaller block, its two
  /// crossings and the share of the rest (moving the bytes twice through
  /// the program) its size has; for a larger one, its two crossings.
  double savingPerBlock(uint64_t Bytes) const;
  /// Blocks of Bytes a copy needs for the multi-call to pay for its first
  /// context and probes; 0 when no number of blocks does.
  unsigned long breakEvenBlocks(uint64_t Bytes) const;
};

/// The file libmulticall reads: $MULTICALL_CALIBRATION, else
/// $XDG_CACHE_HOME/syscluster/multicall-calibration.json, else
/// $HOME/.cache/syscluster/...; empty when none is named ("none").
std::string defaultCalibrationPath();

/// Reads Path; the error names the file and what is missing.
llvm::Expected<Calibration> loadCalibration(llvm::StringRef Path);

} // namespace syscluster

#endif
