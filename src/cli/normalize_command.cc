// `mxlimit normalize`: print the route key of request targets.
//
//   mxlimit normalize TARGET...   one key per argument, in order
//   mxlimit normalize < FILE      one key per input line, in order
//   mxlimit normalize --list      every known key, one per line, in id order
//   mxlimit normalize --list --packs   the same, each `KEY<TAB>PACK`
//
// `--config FILE` uses that file's route table (`routes:`); without it, the
// default packs.
//
// An input line is `METHOD TARGET` or `TARGET`, fields separated by spaces or
// tabs; a third field and beyond are ignored, so raw HTTP request lines
// (`GET /x HTTP/1.1`) work too. A trailing '\r' is dropped. An empty or
// garbage line prints the fallback key: output line N always answers input
// line N. Lines longer than 1 MiB (no homeserver accepts such a request line)
// print the fallback key without being buffered whole, so memory stays
// bounded whatever the input.
//
// Streaming reads with replay's `LineReader` (the same line rules as
// `mxlimit replay`, with a 1 MiB line cap) and writes through `Output` in
// 1 MiB blocks, not a stream operation per line, so a file normalizes at
// millions of lines per second.

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/config.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/route.h"
#include "src/cli/commands.h"
#include "src/cli/load_limiter.h"
#include "src/cli/output.h"
#include "src/replay/line_reader.h"

namespace mxlimit::cli {

struct NormalizeOptions {
  // Targets given as arguments; empty means read stdin.
  std::vector<std::string> targets;
  // Print every known key instead of normalizing.
  bool list = false;
  // With `list`: each key's pack ("extra" for the config's templates).
  bool packs = false;
  // The config file whose `routes:` builds the table; empty: default packs.
  std::string config_path;
};

namespace {

constexpr std::string_view kNormalize = "normalize";

constexpr size_t kBlockSize = Output::kBlockBytes;
constexpr size_t kMaxLine = size_t{1} << 20;

bool IsBlank(char c) {
  return absl::ascii_isblank(static_cast<unsigned char>(c));
}

// The target of one input line (without its line ending, which LineReader
// drops): the second field when there are two or more, else the first.
// Empty when the line is blank.
std::string_view TargetOfLine(std::string_view line) {
  std::string_view fields[2];
  size_t count = 0;
  size_t i = 0;
  while (count < 2) {
    while (i < line.size() && IsBlank(line[i])) ++i;
    if (i == line.size()) break;
    size_t start = i;
    while (i < line.size() && !IsBlank(line[i])) ++i;
    fields[count++] = line.substr(start, i - start);
  }
  return count == 2 ? fields[1] : fields[0];
}

int NormalizeStream(const RouteNormalizer& normalizer, std::FILE* in,
                    Output& out) {
  replay::LineReader reader(in, kMaxLine, kBlockSize);
  replay::Line line;
  while (out.ok() && reader.Next(&line)) {
    out.Line(line.too_long
                 ? kFallbackRouteKey
                 : normalizer.Normalize("", TargetOfLine(line.text)).key);
  }
  if (!reader.status().ok()) {
    PrintError(kNormalize,
               absl::StrCat("standard input: ", reader.status().message()));
    return kExitFinding;
  }
  return kExitOk;
}

// The table of `config_path`'s `routes:` (the default packs without a
// file); null after printing the errors.
std::unique_ptr<const RouteNormalizer> LoadNormalizer(
    const std::string& config_path) {
  if (config_path.empty()) return std::make_unique<const RouteNormalizer>();
  absl::StatusOr<LimiterConfig> config = LoadConfigFile(config_path);
  if (!config.ok()) {
    PrintErrors(kNormalize, config_path,
                internal::FromAbsl(config.status().message()));
    return nullptr;
  }
  // The loader has checked `routes:`; Create reports anything left.
  absl::StatusOr<std::unique_ptr<RouteNormalizer>> normalizer =
      RouteNormalizer::Create(config->routes);
  if (!normalizer.ok()) {
    PrintErrors(kNormalize, config_path,
                internal::FromAbsl(normalizer.status().message()));
    return nullptr;
  }
  return *std::move(normalizer);
}

}  // namespace

int RunNormalize(const NormalizeOptions& options) {
  const std::unique_ptr<const RouteNormalizer> loaded =
      LoadNormalizer(options.config_path);
  if (loaded == nullptr) return kExitFinding;
  const RouteNormalizer& normalizer = *loaded;
  Output out(kNormalize);
  int code = kExitOk;
  if (options.list) {
    std::span<const std::string_view> keys = normalizer.keys();
    for (size_t id = 1; id < keys.size(); ++id) {
      if (options.packs) {
        out.Line(absl::StrCat(
            internal::ToAbsl(keys[id]), "\t",
            internal::ToAbsl(normalizer.pack(static_cast<RouteId>(id)))));
      } else {
        out.Line(keys[id]);
      }
    }
  } else if (!options.targets.empty()) {
    for (const std::string& target : options.targets) {
      out.Line(normalizer.Normalize("", target).key);
    }
  } else {
    code = NormalizeStream(normalizer, stdin, out);
  }
  return out.Finish() ? code : kExitFinding;
}

void RegisterNormalize(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<NormalizeOptions>();
  CLI::App* command = app.add_subcommand(
      std::string(kNormalize), "Print the route key of request targets");
  command->footer(
      "Without TARGETs, reads one 'METHOD TARGET' or 'TARGET' per line of "
      "standard input. One key per line, in order; unknown or garbage lines "
      "get <fallback>. Details and examples: docs/cli.md, section "
      "\"mxlimit normalize\".");
  CLI::Option* targets = command->add_option(
      "targets", options->targets,
      "Raw request targets, e.g. '/_matrix/client/v3/sync?since=s1'");
  CLI::Option* list =
      command
          ->add_flag(
              "--list", options->list,
              "Print every known route key, one per line, in RouteId order")
          ->excludes(targets);
  command
      ->add_flag("--packs", options->packs,
                 "With --list: print 'KEY<TAB>PACK', the pack each key comes "
                 "from ('extra' for the config's own templates)")
      ->needs(list);
  command->add_option("--config", options->config_path,
                      "Use this config file's route table (its `routes:` "
                      "section) instead of the default packs");
  command->callback(
      [options, &exit_code] { exit_code = RunNormalize(*options); });
}

}  // namespace mxlimit::cli
