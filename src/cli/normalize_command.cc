// `mxlimit normalize`: print the route key of request targets.
//
//   mxlimit normalize TARGET...   one key per argument, in order
//   mxlimit normalize < FILE      one key per input line, in order
//   mxlimit normalize --list      every known key, one per line, in id order
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
// `mxlimit replay`, with a 1 MiB line cap) and writes in 1 MiB blocks, not a
// stream operation per line, so a file normalizes at millions of lines per
// second.

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "mxlimit/route.h"
#include "src/cli/commands.h"
#include "src/replay/line_reader.h"

namespace mxlimit::cli {

struct NormalizeOptions {
  // Targets given as arguments; empty means read stdin.
  std::vector<std::string> targets;
  // Print every known key instead of normalizing.
  bool list = false;
};

namespace {

constexpr size_t kBlockSize = size_t{1} << 20;
constexpr size_t kMaxLine = size_t{1} << 20;

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

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

// Collects output and writes it in large blocks.
class BlockWriter {
 public:
  explicit BlockWriter(std::FILE* out) : out_(out) {
    buffer_.reserve(kBlockSize + 4096);
  }
  void Line(std::string_view text) {
    buffer_.append(text);
    buffer_.push_back('\n');
    if (buffer_.size() >= kBlockSize) Flush();
  }
  // False when any write failed (closed pipe, full disk).
  bool Finish() {
    Flush();
    return std::fflush(out_) == 0 && ok_;
  }

 private:
  void Flush() {
    if (!buffer_.empty() && std::fwrite(buffer_.data(), 1, buffer_.size(),
                                        out_) != buffer_.size()) {
      ok_ = false;
    }
    buffer_.clear();
  }
  std::FILE* out_;
  std::string buffer_;
  bool ok_ = true;
};

int NormalizeStream(const RouteNormalizer& normalizer, std::FILE* in,
                    BlockWriter& writer) {
  replay::LineReader reader(in, kMaxLine, kBlockSize);
  replay::Line line;
  while (reader.Next(&line)) {
    writer.Line(line.too_long
                    ? kFallbackRouteKey
                    : normalizer.Normalize("", TargetOfLine(line.text)).key);
  }
  if (!reader.status().ok()) {
    std::fprintf(stderr, "mxlimit normalize: standard input: %s\n",
                 std::string(reader.status().message()).c_str());
    return kExitFinding;
  }
  return kExitOk;
}

}  // namespace

int RunNormalize(const NormalizeOptions& options) {
  const RouteNormalizer normalizer;
  BlockWriter writer(stdout);
  int code = kExitOk;
  if (options.list) {
    std::span<const std::string_view> keys = normalizer.keys();
    for (size_t id = 1; id < keys.size(); ++id) writer.Line(keys[id]);
  } else if (!options.targets.empty()) {
    for (const std::string& target : options.targets) {
      writer.Line(normalizer.Normalize("", target).key);
    }
  } else {
    code = NormalizeStream(normalizer, stdin, writer);
  }
  if (!writer.Finish()) {
    std::fprintf(stderr, "mxlimit normalize: error writing standard output\n");
    return kExitFinding;
  }
  return code;
}

void RegisterNormalize(CLI::App& app, int& exit_code) {
  auto options = std::make_shared<NormalizeOptions>();
  CLI::App* command = app.add_subcommand(
      "normalize",
      "Print the route key of each request target: the arguments, or one "
      "'METHOD TARGET' or 'TARGET' per line of standard input (one key per "
      "line, in order; unknown or garbage lines get <fallback>).");
  CLI::Option* targets = command->add_option(
      "targets", options->targets,
      "Raw request targets, e.g. '/_matrix/client/v3/sync?since=s1'");
  command
      ->add_flag("--list", options->list,
                 "Print every known route key, one per line, in RouteId order")
      ->excludes(targets);
  command->callback(
      [options, &exit_code] { exit_code = RunNormalize(*options); });
}

}  // namespace mxlimit::cli
