// mxlimit/config.h: the top level of the file, `tables:`, `exempt:`, and
// reading files. Policies are in policies_section.cc, routes in
// routes_section.cc.

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "mxlimit/config.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/ip.h"
#include "mxlimit/user_id.h"
#include "src/config/config_warnings.h"
#include "src/config/sections.h"
#include "src/config/yaml_fields.h"
#include "src/util/quote.h"

namespace mxlimit {
namespace config_internal {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

void ReadCapacity(const MapFields& map, size_t shards, size_t& capacity,
                  ConfigErrors& errors, ConfigErrors& warnings) {
  if (const Field* f = map.Find("capacity")) {
    std::optional<int64_t> v = ReadIntegerInRange(
        *f, 1, static_cast<int64_t>(TableOptions::kMaxCapacity), errors);
    if (!v.has_value()) return;
    capacity = static_cast<size_t>(*v);
    WarnCapacity(*f, capacity, shards, warnings);
  }
}

void ReadPrefix(const MapFields& map, std::string_view key, int max,
                int& prefix, ConfigErrors& errors) {
  if (const Field* f = map.Find(key)) {
    std::optional<int64_t> v = ReadIntegerInRange(*f, 0, max, errors);
    if (v.has_value()) prefix = static_cast<int>(*v);
  }
}

// `response_headers: none | ratelimit`. Only these two words: a header
// field the embedder would not send should not load silently.
void ReadResponseHeaders(const Field& field, ResponseHeaders& headers,
                         ConfigErrors& errors) {
  static constexpr std::string_view kChoices[] = {"none", "ratelimit"};
  static constexpr std::string_view kExpected = "none or ratelimit";
  std::optional<std::string> name = ReadString(field, kExpected, errors);
  if (!name.has_value()) return;
  if (*name == kChoices[0]) {
    headers = ResponseHeaders::kNone;
    return;
  }
  if (*name == kChoices[1]) {
    headers = ResponseHeaders::kRateLimit;
    return;
  }
  std::string message =
      absl::StrCat(field.path, ": got ", DescribeValue(field.value),
                   ", expected ", ToAbsl(kExpected));
  if (std::optional<std::string_view> near = NearestWord(*name, kChoices)) {
    absl::StrAppend(&message, " (did you mean \"", ToAbsl(*near), "\"?)");
  }
  errors.Add(field.mark(), std::move(message));
}

void ReadTopLevel(const YAML::Node& root, std::string_view file_name,
                  size_t shards, bool want_warnings, LimiterConfig& config,
                  ConfigErrors& errors, ConfigErrors& warnings) {
  static constexpr std::string_view kKeys[] = {
      "builtin_policies", "shadow_mode",      "tables",
      "routes",           "exempt",           "tiers",
      "policies",         "response_headers", "store"};
  MapFields top(root, "", kKeys, /*null_is_empty=*/true, errors);
  if (const Field* f = top.Find("builtin_policies")) {
    std::optional<bool> v = ReadBool(*f, errors);
    if (v.has_value()) config.builtin_policies = *v;
  }
  if (const Field* f = top.Find("shadow_mode")) {
    std::optional<bool> v = ReadBool(*f, errors);
    if (v.has_value()) config.shadow_mode = *v;
  }
  if (const Field* f = top.Find("tables")) {
    ReadTables(*f, shards, config.tables, errors, warnings);
  }
  // Before `policies:`, whose patterns are checked against the table (the
  // default one when `routes:` is left out or invalid).
  std::shared_ptr<const internal::MergedRouteTable> route_table;
  if (const Field* f = top.Find("routes")) {
    route_table = ReadRoutes(*f, config.routes, errors, warnings);
  }
  if (const Field* f = top.Find("exempt")) {
    ReadExempt(*f, config.exempt, errors, warnings);
  }
  if (const Field* f = top.Find("policies")) {
    // `builtin_policies` and `shadow_mode` are read: the set is known.
    const PolicySetShape set{config.builtin_policies, config.shadow_mode,
                             want_warnings};
    ReadPolicies(*f, config.tables, route_table.get(), set, config.policies,
                 errors, warnings);
  }
  if (const Field* f = top.Find("tiers")) {
    // After `policies:`: a tier may replace the rate of any of them.
    ReadTiers(*f, config.policies, config.builtin_policies, config.tiers,
              errors);
  }
  if (const Field* f = top.Find("response_headers")) {
    ReadResponseHeaders(*f, config.response_headers, errors);
  }
  if (const Field* f = top.Find("store")) {
    ReadStore(*f, file_name, config.store, errors, warnings);
  }
}

// Records where each document starts and ignores everything else.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { last = mark; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t,
                const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                  YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  YAML::Mark last = YAML::Mark::null_mark();
};

// yaml-cpp 0.7 can get stuck on a stray ',' outside any flow collection
// (e.g. the text ","): it then returns empty documents forever without
// consuming input, so `YAML::LoadAll` never returns and allocates until the
// process runs out of memory. Walk the documents once with a parser that
// builds nothing and stop at a document starting where the previous one did.
// Returns the position the parser is stuck at, if it is. May throw what
// yaml-cpp throws.
std::optional<YAML::Mark> FindStuckParser(const std::string& text) {
  std::istringstream stream(text);
  YAML::Parser parser(stream);
  DocumentStarts starts;
  std::optional<int> previous;
  while (parser.HandleNextDocument(starts)) {
    if (previous == starts.last.pos) return starts.last;
    previous = starts.last.pos;
  }
  return std::nullopt;
}

// The position of the first NUL byte in `text`, with the count of all of
// them. YAML text cannot hold one (only a double-quoted "\0" stands for it),
// and yaml-cpp takes it for the end of the input, so a file with one got a
// misleading "unknown escape character" or lost the rest of its text. UTF-16
// and UTF-32 text, which yaml-cpp decodes, is made of NUL bytes: like
// yaml-cpp (and the YAML spec), a byte order mark or a NUL among the first
// two bytes says the text is one of those, and it is not checked here.
std::optional<std::pair<YAML::Mark, size_t>> FindNulByte(
    std::string_view text) {
  if (text.size() >= 2) {
    const auto b0 = static_cast<unsigned char>(text[0]);
    const auto b1 = static_cast<unsigned char>(text[1]);
    if (b0 == 0 || b1 == 0 || (b0 == 0xFE && b1 == 0xFF) ||
        (b0 == 0xFF && b1 == 0xFE)) {
      return std::nullopt;
    }
  }
  const size_t at = text.find('\0');
  if (at == std::string_view::npos) return std::nullopt;
  const std::string_view before = text.substr(0, at);
  const size_t line_start = before.rfind('\n');
  YAML::Mark mark;
  mark.pos = static_cast<int>(at);
  mark.line = static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  mark.column = static_cast<int>(
      line_start == std::string_view::npos ? at : at - line_start - 1);
  return std::pair(
      mark, static_cast<size_t>(std::count(text.begin(), text.end(), '\0')));
}

// Parses the text and reads it into `config`; every problem goes to `errors`.
// Catches everything yaml-cpp throws.
void ParseInto(std::string_view text, std::string_view file_name, size_t shards,
               bool want_warnings, LimiterConfig& config, ConfigErrors& errors,
               ConfigErrors& warnings) {
  if (std::optional<std::pair<YAML::Mark, size_t>> nul = FindNulByte(text)) {
    errors.Add(nul->first,
               absl::StrCat("a NUL byte (\\0): YAML text cannot hold one",
                            nul->second > 1
                                ? absl::StrCat(" (the file holds ", nul->second,
                                               "; this is the first)")
                                : "",
                            "; is this the right file, or is it corrupted? (a "
                            "NUL character in a value is \"\\0\" in double "
                            "quotes)"));
    return;
  }
  try {
    const std::string owned(text);
    if (std::optional<YAML::Mark> stuck = FindStuckParser(owned)) {
      errors.Add(*stuck,
                 "YAML syntax error: unexpected text, e.g. a ',' outside "
                 "[...] or {...}");
      return;
    }
    std::vector<YAML::Node> documents = YAML::LoadAll(owned);
    if (documents.empty()) return;  // Empty, or only comments: the defaults.
    // A second document would be silently ignored by a reader that takes the
    // first; an empty trailing one ("---" at the end) is harmless.
    for (size_t i = 1; i < documents.size(); ++i) {
      if (!documents[i].IsNull() || documents[0].IsNull()) {
        errors.Add(documents[i].Mark(),
                   "a config file holds one YAML document; another one starts "
                   "here (remove the '---' separator)");
        return;
      }
    }
    ReadTopLevel(documents[0], file_name, shards, want_warnings, config, errors,
                 warnings);
  } catch (const YAML::Exception& e) {
    // ParserException (syntax) carries the position yaml-cpp stopped at.
    // yaml-cpp's message may quote raw input bytes; escape them so each
    // error stays on its line.
    errors.Add(e.mark,
               absl::StrCat("YAML syntax error: ", absl::CHexEscape(e.msg)));
  } catch (const std::bad_alloc&) {
    errors.Add(YAML::Mark::null_mark(), "out of memory while parsing");
  } catch (const std::exception& e) {
    errors.Add(YAML::Mark::null_mark(),
               absl::StrCat("cannot parse: ", absl::CHexEscape(e.what())));
  }
}

}  // namespace

void ReadTables(const Field& field, size_t shards, TableOptions& tables,
                ConfigErrors& errors, ConfigErrors& warnings) {
  static constexpr std::string_view kKeys[] = {"ip",   "user",   "origin",
                                               "room", "target", "leases"};
  static constexpr std::string_view kIpKeys[] = {"capacity", "ipv4_prefix",
                                                 "ipv6_prefix"};
  static constexpr std::string_view kUserKeys[] = {"capacity"};
  MapFields map(field, kKeys, /*null_is_empty=*/true, errors);
  if (const Field* f = map.Find("ip")) {
    MapFields ip(*f, kIpKeys, /*null_is_empty=*/true, errors);
    ReadCapacity(ip, shards, tables.ip_capacity, errors, warnings);
    ReadPrefix(ip, "ipv4_prefix", 32, tables.ipv4_prefix, errors);
    ReadPrefix(ip, "ipv6_prefix", 128, tables.ipv6_prefix, errors);
  }
  if (const Field* f = map.Find("user")) {
    MapFields user(*f, kUserKeys, /*null_is_empty=*/true, errors);
    ReadCapacity(user, shards, tables.user_capacity, errors, warnings);
  }
  // One table of each for every shard together: no per-shard minimum.
  for (auto [name, capacity] :
       {std::pair<std::string_view, size_t*>{"origin", &tables.origin_capacity},
        {"room", &tables.room_capacity},
        {"target", &tables.target_capacity},
        {"leases", &tables.lease_capacity}}) {
    if (const Field* f = map.Find(name)) {
      MapFields table(*f, kUserKeys, /*null_is_empty=*/true, errors);
      ReadCapacity(table, /*shards=*/1, *capacity, errors, warnings);
    }
  }
}

void ReadExempt(const Field& field, ExemptOptions& exempt, ConfigErrors& errors,
                ConfigErrors& warnings) {
  static constexpr std::string_view kKeys[] = {"ips", "users"};
  MapFields map(field, kKeys, /*null_is_empty=*/true, errors);
  if (const Field* f = map.Find("ips")) {
    for (ListString& item : ReadStringList(
             *f, "a list of networks, e.g. [\"10.0.0.0/8\", \"::1\"]",
             "a network such as \"10.0.0.0/8\"", errors)) {
      absl::StatusOr<Cidr> cidr = ParseCidr(item.text);
      if (!cidr.ok()) {
        errors.Add(item.mark,
                   absl::StrCat(item.path, ": ", cidr.status().message()));
        continue;
      }
      WarnExemptNetwork(item.path, item.mark, *cidr, warnings);
      exempt.ips.push_back(*cidr);
    }
  }
  if (const Field* f = map.Find("users")) {
    for (ListString& item : ReadStringList(
             *f, "a list of user IDs, e.g. [\"@bridge:example.org\"]",
             "a user ID such as \"@bridge:example.org\"", errors)) {
      if (std::string problem = UserIdProblem(item.text); !problem.empty()) {
        errors.Add(item.mark,
                   absl::StrCat(item.path, ": got ", QuoteForError(item.text),
                                ", expected a Matrix user ID such as "
                                "\"@bridge:example.org\" (",
                                problem, ")"));
        continue;
      }
      exempt.users.push_back(std::move(item.text));
    }
  }
}

}  // namespace config_internal

namespace {

// ParseConfigWithWarnings; without `want_warnings` the checks that cost
// more than reading (compiling the policy set to find outranked policies)
// are skipped, since nobody reads their warnings.
absl::StatusOr<CheckedConfig> Parse(std::string_view yaml_text,
                                    std::string_view file_name,
                                    const ConfigCheckOptions& options,
                                    bool want_warnings) {
  if (file_name.empty()) file_name = "<config>";
  if (yaml_text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        internal::ToAbsl(file_name), ": the config is ", yaml_text.size(),
        " bytes, over the limit of ", kMaxConfigBytes,
        " bytes (1 MiB); is this the right file?"));
  }
  // The default shard count adapts to the capacities: nothing to warn of.
  const size_t shards = options.shards != 0 ? options.shards : 1;
  CheckedConfig checked;
  config_internal::ConfigErrors errors;
  config_internal::ConfigErrors warnings("warning: ");
  config_internal::ParseInto(yaml_text, file_name, shards, want_warnings,
                             checked.config, errors, warnings);
  if (!errors.empty()) {
    return absl::InvalidArgumentError(errors.Render(file_name));
  }
  checked.warnings = warnings.Lines(file_name, "warnings");
  return checked;
}

// The text of `path`, at most kMaxConfigBytes.
absl::StatusOr<std::string> ReadConfigText(const std::string& path) {
  auto file_error = [&path](int error_number, std::string_view what) {
    return absl::ErrnoToStatus(
        error_number, absl::StrCat(path, ": ", internal::ToAbsl(what)));
  };
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return file_error(errno, "cannot open");
  // Read at most one byte past the cap: enough to know the file is too big
  // without reading all of it. Works for pipes and /dev/stdin, too.
  std::string text;
  char buffer[64 * 1024];
  int read_errno = 0;
  while (text.size() <= kMaxConfigBytes) {
    size_t want = std::min(sizeof(buffer), kMaxConfigBytes + 1 - text.size());
    size_t got = std::fread(buffer, 1, want, file);
    text.append(buffer, got);
    if (got < want) {
      if (std::ferror(file)) read_errno = errno;
      break;
    }
  }
  std::fclose(file);
  if (read_errno != 0) return file_error(read_errno, "cannot read");
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": the file is over the limit of ", kMaxConfigBytes,
                     " bytes (1 MiB); is this the right file?"));
  }
  return text;
}

}  // namespace

absl::StatusOr<CheckedConfig> ParseConfigWithWarnings(
    std::string_view yaml_text, std::string_view file_name,
    const ConfigCheckOptions& options) {
  return Parse(yaml_text, file_name, options, /*want_warnings=*/true);
}

absl::StatusOr<LimiterConfig> ParseConfig(std::string_view yaml_text,
                                          std::string_view file_name) {
  absl::StatusOr<CheckedConfig> checked =
      Parse(yaml_text, file_name, {}, /*want_warnings=*/false);
  if (!checked.ok()) return checked.status();
  return std::move(checked->config);
}

absl::StatusOr<CheckedConfig> LoadConfigFileWithWarnings(
    const std::string& path, const ConfigCheckOptions& options) {
  absl::StatusOr<std::string> text = ReadConfigText(path);
  if (!text.ok()) return text.status();
  return Parse(*text, path, options, /*want_warnings=*/true);
}

absl::StatusOr<LimiterConfig> LoadConfigFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadConfigText(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<CheckedConfig> checked =
      Parse(*text, path, {}, /*want_warnings=*/false);
  if (!checked.ok()) return checked.status();
  return std::move(checked->config);
}

}  // namespace mxlimit
