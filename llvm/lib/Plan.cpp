//===- Plan.cpp - reading the plan ----------------------------------------===//
#include "SysCluster/Plan.h"

#include "formats.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace syscluster {

static Error bad(StringRef Path, const Twine &What) {
  return createStringError(inconvertibleErrorCode(), "plan " + Path + ": " + What);
}

static std::string str(const json::Object &O, StringRef Key) {
  if (auto S = O.getString(Key))
    return S->str();
  return {};
}

Expected<json::Value> readJsonObject(StringRef Kind, StringRef Path) {
  auto Fail = [&](const Twine &What) {
    return createStringError(inconvertibleErrorCode(), Kind + " " + Path + ": " + What);
  };
  auto Buf = MemoryBuffer::getFile(Path);
  if (!Buf)
    return Fail("cannot read: " + Buf.getError().message());
  auto Parsed = json::parse((*Buf)->getBuffer());
  if (!Parsed)
    return Fail("not JSON: " + toString(Parsed.takeError()));
  if (!Parsed->getAsObject())
    return Fail("not a JSON object");
  return Parsed;
}

Expected<Plan> loadPlan(StringRef Path) {
  auto Parsed = readJsonObject("plan", Path);
  if (!Parsed)
    return Parsed.takeError();
  const json::Object *Top = Parsed->getAsObject();
  auto Version = Top->getInteger("plan_version");
  if (!Version)
    return bad(Path, "no plan_version");
  if (*Version < SCL_PLAN_OLDEST || *Version > SCL_PLAN_VERSION)
    return bad(Path, "plan_version " + Twine(*Version) + " (this plugin reads " + Twine(SCL_PLAN_VERSION) + ")");
  const json::Array *Clusters = Top->getArray("clusters");
  if (!Clusters)
    return bad(Path, "no clusters");
  Plan P;
  for (const json::Value &CV : *Clusters) {
    const json::Object *C = CV.getAsObject();
    if (!C)
      return bad(Path, "a cluster is not an object");
    PlanCluster PC;
    PC.Id = C->getInteger("id").value_or(0);
    PC.Rule = str(*C, "rule");
    PC.Mechanism = str(*C, "mechanism");
    PC.Shape = str(*C, "shape");
    if (const json::Array *Calls = C->getArray("calls"))
      for (const json::Value &V : *Calls)
        if (const json::Object *O = V.getAsObject()) {
          PlanCall Call{str(*O, "syscall"), (long)O->getInteger("nr").value_or(-1), {}};
          if (const json::Object *A = O->getObject("args"))
            for (const auto &[K, Val] : *A)
              if (auto I = Val.getAsInteger())
                Call.Args.emplace_back(K.str(), *I);
          PC.Calls.push_back(std::move(Call));
        }
    if (PC.Calls.empty())
      return bad(Path, "cluster " + Twine(PC.Id) + " has no calls");
    if (const json::Array *Locs = C->getArray("locations"))
      for (const json::Value &V : *Locs) {
        const json::Object *O = V.getAsObject();
        if (!O)
          return bad(Path, "cluster " + Twine(PC.Id) + ": a location is not an object");
        PlanLocation L;
        L.Syscall = str(*O, "syscall");
        L.Module = str(*O, "module");
        L.Offset = O->getInteger("offset").value_or(0);
        L.Function = str(*O, "function");
        L.File = str(*O, "file");
        L.Line = O->getInteger("line").value_or(0);
        L.Count = O->getInteger("count").value_or(0);
        if (auto H = O->getString("source_hash"))
          L.SourceHash = H->str();
        if (auto H = O->getString("function_hash"))
          L.FunctionHash = H->str();
        if (auto H = O->getString("macro_hash"))
          L.MacroHash = H->str();
        PC.Locations.push_back(std::move(L));
      }
    P.Clusters.push_back(std::move(PC));
  }
  return P;
}

unsigned sourceMatch(StringRef PlanPath, StringRef DebugFile) {
  SmallVector<StringRef, 16> A, B;
  PlanPath.split(A, '/', -1, false);
  DebugFile.split(B, '/', -1, false);
  auto Drop = [](SmallVectorImpl<StringRef> &V) {
    V.erase(std::remove(V.begin(), V.end(), StringRef(".")), V.end());
  };
  Drop(A);
  Drop(B);
  unsigned N = 0;
  while (N < A.size() && N < B.size() && A[A.size() - 1 - N] == B[B.size() - 1 - N])
    ++N;
  if (!DebugFile.starts_with("/") && N < B.size())
    return 0;
  return N;
}

static const char *const Blanks = " \t\r\f\v";

static std::string fnv1a(StringRef Text) {
  uint64_t H = 0xcbf29ce484222325ULL;
  for (unsigned char C : Text) {
    H ^= C;
    H *= 0x100000001b3ULL;
  }
  std::string S;
  raw_string_ostream(S) << format_hex_no_prefix(H, 16);
  return S;
}

std::optional<std::pair<unsigned, unsigned>> functionSpan(StringRef Text, unsigned Line) {
  enum { Code, LineComment, BlockComment, Quote, Directive } St = Code;
  char Q = 0;
  unsigned Depth = 0, N = 1, Start = 0;
  std::optional<unsigned> Header;
  bool Bol = true; // only blanks since the line began
  for (size_t I = 0; I < Text.size(); ++I) {
    char C = Text[I];
    char Next = I + 1 < Text.size() ? Text[I + 1] : 0;
    bool WasBol = Bol;
    if (C == '\\' && Next == '\n' && St != Code) { // a continued line
      ++N;
      ++I;
      continue;
    }
    switch (St) {
    case LineComment:
    case Directive:
      if (C == '\n')
        St = Code;
      break;
    case BlockComment:
      if (C == '*' && Next == '/') {
        St = Code;
        ++I;
      }
      break;
    case Quote:
      if (C == '\\')
        ++I;
      else if (C == Q || C == '\n')
        St = Code;
      break;
    case Code:
      if (C == '/' && Next == '/') {
        St = LineComment;
      } else if (C == '/' && Next == '*') {
        St = BlockComment;
        ++I;
      } else if (C == '#' && WasBol) {
        St = Directive;
        if (Depth == 0)
          Header.reset();
      } else if (!StringRef(" \t\r\n\v\f").contains(C)) {
        if (Depth == 0 && !Header)
          Header = N;
        if (C == '"' || C == '\'') {
          St = Quote;
          Q = C;
        } else if (C == '{') {
          if (Depth == 0)
            Start = Header.value_or(N);
          ++Depth;
        } else if (C == '}' && Depth > 0) {
          if (--Depth == 0) {
            if (Start <= Line && Line <= N)
              return std::make_pair(Start, N);
            Header.reset();
          }
        } else if (C == ';' && Depth == 0) {
          Header.reset();
        }
      }
      break;
    }
    if (I < Text.size() && Text[I] == '\n') {
      ++N;
      Bol = true;
    } else if (C != ' ' && C != '\t') {
      Bol = false;
    }
    if (N > Line && Depth == 0 && (!Header || *Header > Line))
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> functionHash(StringRef File, unsigned Line, std::pair<unsigned, unsigned> *Span) {
  auto Buf = MemoryBuffer::getFile(File);
  if (!Buf)
    return std::nullopt;
  StringRef Text = (*Buf)->getBuffer();
  auto S = functionSpan(Text, Line);
  if (!S)
    return std::nullopt;
  if (Span)
    *Span = *S;
  SmallVector<StringRef, 0> Lines;
  Text.split(Lines, '\n');
  std::string Joined;
  for (unsigned L = S->first; L <= S->second && L <= Lines.size(); ++L) {
    if (L != S->first)
      Joined += '\n';
    Joined += Lines[L - 1].trim(Blanks).str();
  }
  return fnv1a(Joined);
}

/// The words of Text that may name a macro: maximal runs of letters,
/// digits and _ not beginning with a digit.
static void macroNames(StringRef Text, StringSet<> &Out) {
  auto Word = [](char C) { return isAlnum(C) || C == '_'; };
  for (size_t I = 0; I < Text.size();) {
    if (!Word(Text[I])) {
      ++I;
      continue;
    }
    size_t E = I;
    while (E < Text.size() && Word(Text[E]))
      ++E;
    if (!isDigit(Text[I]))
      Out.insert(Text.slice(I, E));
    I = E;
  }
}

/// The name a `#define` line defines (blanks allowed around the `#`, at
/// least one after `define`), or empty.
static StringRef definedName(StringRef Line) {
  StringRef R = Line.ltrim(Blanks);
  if (!R.consume_front("#"))
    return "";
  R = R.ltrim(Blanks);
  if (!R.consume_front("define") || R.empty() || !StringRef(Blanks).contains(R.front()))
    return "";
  R = R.ltrim(Blanks);
  if (R.empty() || !(isAlpha(R.front()) || R.front() == '_'))
    return "";
  return R.take_while([](char C) { return isAlnum(C) || C == '_'; });
}

std::optional<std::string> macroHashOfText(StringRef Text, unsigned Line) {
  auto S = functionSpan(Text, Line);
  if (!S)
    return std::nullopt;
  SmallVector<StringRef, 0> Lines;
  Text.split(Lines, '\n');
  StringSet<> Words;
  for (unsigned L = S->first; L <= S->second && L <= Lines.size(); ++L)
    macroNames(Lines[L - 1], Words);
  std::vector<std::pair<StringRef, std::string>> Defs;
  for (size_t I = 0; I < Lines.size(); ++I) {
    StringRef Name = definedName(Lines[I]);
    if (Name.empty())
      continue;
    std::string Body = Lines[I].trim(Blanks).str();
    StringRef Last = Lines[I].trim(Blanks);
    while (Last.ends_with("\\") && I + 1 < Lines.size()) {
      Last = Lines[++I].trim(Blanks);
      Body += "\n" + Last.str();
    }
    Defs.push_back({Name, std::move(Body)});
  }
  std::vector<bool> Used(Defs.size());
  for (bool Grew = true; Grew;) {
    Grew = false;
    for (size_t K = 0; K < Defs.size(); ++K)
      if (!Used[K] && Words.contains(Defs[K].first)) {
        Used[K] = Grew = true;
        macroNames(Defs[K].second, Words);
      }
  }
  std::string Joined;
  bool First = true;
  for (size_t K = 0; K < Defs.size(); ++K)
    if (Used[K]) {
      Joined += (First ? "" : "\n") + Defs[K].second;
      First = false;
    }
  return fnv1a(Joined);
}

std::optional<std::string> macroHash(StringRef File, unsigned Line) {
  auto Buf = MemoryBuffer::getFile(File);
  if (!Buf)
    return std::nullopt;
  return macroHashOfText((*Buf)->getBuffer(), Line);
}

std::optional<std::string> sourceLineHash(StringRef File, unsigned Line) {
  auto Buf = MemoryBuffer::getFile(File);
  if (!Buf || Line == 0)
    return std::nullopt;
  StringRef Rest = (*Buf)->getBuffer();
  for (unsigned I = 1; I < Line; ++I) {
    size_t NL = Rest.find('\n');
    if (NL == StringRef::npos)
      return std::nullopt;
    Rest = Rest.drop_front(NL + 1);
  }
  return fnv1a(Rest.take_until([](char C) { return C == '\n'; }).trim(Blanks));
}

} // namespace syscluster
