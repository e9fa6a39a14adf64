//===- Plan.h - the plan written by `syscluster advise --plan-out` --------===//
//
// The part of a plan (docs/PLAN_FORMAT.md, plan_version 1) the compiler
// plugin uses: clusters, their calls and the code locations that issue
// them.  Everything else in the file is checked only for its version.
//
//===----------------------------------------------------------------------===//
#ifndef SYSCLUSTER_PLAN_H
#define SYSCLUSTER_PLAN_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace syscluster {

struct PlanLocation {
  std::string Syscall;
  std::string Module;
  uint64_t Offset = 0;
  std::string Function; // empty: unknown
  std::string File;     // empty: the recorded binary had no line table
  unsigned Line = 0;
  uint64_t Count = 0;
  std::optional<std::string> SourceHash; // FNV-1a of the trimmed source line
  std::optional<std::string> FunctionHash; // FNV-1a of the function holding it (plan_version 2)
  std::optional<std::string> MacroHash;    // FNV-1a of the file's macros that function uses (later plan_version 2)
};

struct PlanCall {
  std::string Syscall;
  long Nr = -1;
  /// The value profile: scalar arguments with one value in most calls
  /// (`args`, docs/PLAN_FORMAT.md), by argument name ("count").
  std::vector<std::pair<std::string, int64_t>> Args;
};

struct PlanCluster {
  unsigned Id = 0;
  std::string Rule, Mechanism, Shape;
  std::vector<PlanCall> Calls;
  std::vector<PlanLocation> Locations;
};

struct Plan {
  std::vector<PlanCluster> Clusters;
};

/// Reads a JSON file whose top level is an object (a plan, a
/// calibration); the error starts with Kind and the path.
llvm::Expected<llvm::json::Value> readJsonObject(llvm::StringRef Kind, llvm::StringRef Path);

/// Reads and checks a plan file; the error names the file and the problem.
llvm::Expected<Plan> loadPlan(llvm::StringRef Path);

/// How well a plan's source path names the file the debug info calls
/// DebugFile (as given to the compiler, often relative to the build
/// directory) in directory DebugDir: the number of trailing path components
/// they share, 0 when they are not the same file.  A relative DebugFile
/// must match whole; an absolute one at least by its last component, so
/// that a plan recorded in one checkout applies to another.
unsigned sourceMatch(llvm::StringRef PlanPath, llvm::StringRef DebugFile);

/// FNV-1a (64 bits, 16 hex digits) of line Line of File without its leading
/// and trailing blanks; std::nullopt when the file or line cannot be read.
std::optional<std::string> sourceLineHash(llvm::StringRef File, unsigned Line);

/// The first and last lines of the function holding line Line of the C
/// source Text: the top-level brace block whose lines hold it, from the
/// first token of its header to its closing brace, braces in comments,
/// literals and preprocessor lines not counted (docs/PLAN_FORMAT.md,
/// `function_hash`; the same scan as crates/model/src/plan.rs,
/// `function_span`).  std::nullopt when the line is in no function body.
std::optional<std::pair<unsigned, unsigned>> functionSpan(llvm::StringRef Text, unsigned Line);

/// FNV-1a (64 bits, 16 hex digits) of the lines of functionSpan, each
/// without its leading and trailing blanks, joined by newlines: the plan's
/// `function_hash`.  Also gives the span; std::nullopt when the file cannot
/// be read or the line is in no function body.
std::optional<std::string> functionHash(llvm::StringRef File, unsigned Line,
                                        std::pair<unsigned, unsigned> *Span = nullptr);

/// FNV-1a of the definitions, in file order, of the macros defined in
/// Text (`#define`, continued lines included, each line trimmed, joined by
/// newlines) that the lines of functionSpan name, directly or through
/// another of those definitions: the plan's `macro_hash`
/// (docs/PLAN_FORMAT.md; the same as crates/model/src/plan.rs,
/// `macro_hash`).  std::nullopt when the line is in no function body.
std::optional<std::string> macroHashOfText(llvm::StringRef Text, unsigned Line);
/// The same of a file; std::nullopt when it cannot be read either.
std::optional<std::string> macroHash(llvm::StringRef File, unsigned Line);

} // namespace syscluster

#endif
