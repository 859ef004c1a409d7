// `mxlimit admin list | set SUBJECT TIER [--expires-in D] | clear SUBJECT |
// reset SUBJECT`: an operator's calls to mxlimitd's admin API
// (docs/mxlimitd.md, "Operations"). Each prints one line per result and
// exits 0; an error answer is printed as `mxlimit admin: M_...: message
// (HTTP 4xx)` and exits 1.

#include <charconv>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/cli/admin_client.h"
#include "src/cli/commands.h"
#include "src/cli/output.h"
#include "src/util/flat_json.h"
#include "src/util/secret_file.h"

namespace mxlimit::cli {
namespace {

using internal::FromAbsl;
using internal::ToAbsl;

constexpr std::string_view kAdmin = "admin";
constexpr char kApi[] = "/_mxlimit/admin/v1/";

struct AdminOptions {
  std::string address = "unix:/run/mxlimitd/admin.sock";
  std::string token_file = "/etc/mxlimit/admin-token";
  bool json = false;
  std::string subject;
  std::string tier;
  std::string expires_in;
};

// "90s", "30m", "24h", "7d", "500ms": a count and a unit, in milliseconds.
std::optional<int64_t> ParseExpiry(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    int64_t ms;
  };
  static constexpr Unit kUnits[] = {{"ms", 1},
                                    {"s", 1'000},
                                    {"m", 60'000},
                                    {"h", 3'600'000},
                                    {"d", 86'400'000}};
  for (const Unit& u : kUnits) {
    if (text.size() <= u.suffix.size() ||
        text.substr(text.size() - u.suffix.size()) != u.suffix) {
      continue;
    }
    const std::string_view count =
        text.substr(0, text.size() - u.suffix.size());
    int64_t n = 0;
    auto [end, ec] =
        std::from_chars(count.data(), count.data() + count.size(), n);
    if (ec != std::errc() || end != count.data() + count.size() || n <= 0 ||
        n > INT64_MAX / u.ms) {
      return std::nullopt;
    }
    return n * u.ms;
  }
  return std::nullopt;
}

// A path segment with every byte but unreserved ones %-escaped.
std::string PathEscape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
        (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
        c == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string SubjectPath(std::string_view subject) {
  const bool user = !subject.empty() && subject[0] == '@';
  return absl::StrCat(kApi, user ? "tiers/users/" : "tiers/networks/",
                      PathEscape(subject));
}

std::string Expiry(const internal::JsonValue* ms) {
  if (ms == nullptr || ms->kind != internal::JsonValue::kInteger) {
    return "never";
  }
  return absl::StrCat(ms->integer, "ms");
}

// "user @bot:example.org bridge runtime expires_in=60000ms".
std::string AssignmentLine(const internal::FlatJson& a) {
  auto text = [&](std::string_view name) {
    const internal::JsonValue* v = a.Find(name);
    return v != nullptr && v->kind == internal::JsonValue::kString
               ? v->text
               : std::string("?");
  };
  const internal::JsonValue* runtime = a.Find("runtime");
  const bool is_runtime = runtime != nullptr && runtime->boolean;
  return absl::StrCat(text("kind"), " ", text("subject"), " ", text("tier"),
                      " ", is_runtime ? "runtime" : "file",
                      " expires_in=", Expiry(a.Find("expires_in_ms")), "\n");
}

// The objects of the "assignments" array of a GET tiers answer, one line
// each. The array holds flat objects only, so braces inside strings are
// the one thing to step over.
absl::StatusOr<std::string> ListLines(std::string_view body) {
  constexpr std::string_view kKey = "\"assignments\":[";
  size_t at = body.find(kKey);
  if (at == std::string_view::npos) {
    return absl::DataLossError("the answer has no assignments");
  }
  at += kKey.size();
  std::string out;
  while (at < body.size() && body[at] != ']') {
    if (body[at] == ',') {
      ++at;
      continue;
    }
    size_t end = at;
    bool in_string = false;
    for (; end < body.size(); ++end) {
      const char c = body[end];
      if (in_string) {
        if (c == '\\') {
          ++end;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '}') {
        break;
      }
    }
    absl::StatusOr<internal::FlatJson> a =
        internal::ParseFlatJson(body.substr(at, end + 1 - at));
    if (!a.ok()) return a.status();
    out += AssignmentLine(*a);
    at = end + 1;
  }
  return out;
}

int Fail(std::string_view message) {
  PrintError(kAdmin, message);
  return kExitFinding;
}

int Run(const AdminOptions& o, std::string_view method,
        const std::string& target, const std::string& body,
        absl::StatusOr<std::string> (*format)(std::string_view body,
                                              const AdminOptions& o)) {
  absl::StatusOr<std::string> token = internal::ReadSecretFile(o.token_file);
  if (!token.ok()) {
    return Fail(absl::StrCat("--token-file ", o.token_file, ": ",
                             token.status().message()));
  }
  // Sent in a header: a file that is not a token (several lines, spaces)
  // would break the request, so it is refused here, as mxlimitd refuses it.
  for (const char c : *token) {
    if (c <= ' ' || c > '~') {
      return Fail(absl::StrCat("--token-file ", o.token_file,
                               ": not a token (it holds a space, a line break "
                               "or a byte outside printable ASCII)"));
    }
  }
  absl::StatusOr<AdminAnswer> answer =
      CallAdmin(o.address, *token, method, target, body);
  if (!answer.ok()) return Fail(FromAbsl(answer.status().message()));
  if (answer->status != 200) {
    absl::StatusOr<internal::FlatJson> error =
        internal::ParseFlatJson(answer->body);
    const internal::JsonValue* code =
        error.ok() ? error->Find("errcode") : nullptr;
    const internal::JsonValue* text =
        error.ok() ? error->Find("error") : nullptr;
    return Fail(absl::StrCat(code != nullptr ? code->text : "error", ": ",
                             text != nullptr ? text->text : answer->body,
                             " (HTTP ", answer->status, ")"));
  }
  absl::StatusOr<std::string> lines =
      o.json ? absl::StatusOr<std::string>(answer->body + "\n")
             : format(answer->body, o);
  if (!lines.ok()) return Fail(FromAbsl(lines.status().message()));
  Output out(kAdmin);
  out.Append(*lines);
  return out.Finish() ? kExitOk : kExitFinding;
}

void AddCommon(CLI::App* cmd, AdminOptions& o) {
  cmd->add_option("--address", o.address,
                  "mxlimitd's --admin-listen: unix:PATH or HOST:PORT "
                  "(default unix:/run/mxlimitd/admin.sock)");
  cmd->add_option("--token-file", o.token_file,
                  "the file mxlimitd's --admin-token-file names (default "
                  "/etc/mxlimit/admin-token)");
  cmd->add_flag("--json", o.json, "print the API's JSON answer as it is");
}

}  // namespace

void RegisterAdmin(CLI::App& app, int& exit_code) {
  auto o = std::make_shared<AdminOptions>();
  CLI::App* cmd = app.add_subcommand(
      std::string(kAdmin), "Tiers and bucket resets in a running mxlimitd");
  cmd->footer(
      "Calls mxlimitd's admin API (--admin-listen, --admin-token-file). "
      "SUBJECT is a user ID (@bot:example.org) or a network or address "
      "(10.0.0.0/8, 2001:db8::1). Details: docs/cli.md, section \"mxlimit "
      "admin\"; the API: docs/mxlimitd.md, section \"Operations\".");
  cmd->require_subcommand(1);

  CLI::App* list =
      cmd->add_subcommand("list", "Every tier assignment in force");
  AddCommon(list, *o);
  list->callback([o, &exit_code] {
    exit_code = Run(*o, "GET", absl::StrCat(kApi, "tiers"), "",
                    [](std::string_view body, const AdminOptions&) {
                      return ListLines(body);
                    });
  });

  CLI::App* set = cmd->add_subcommand("set", "Put SUBJECT in TIER");
  AddCommon(set, *o);
  set->add_option("subject", o->subject, "user ID, network or address")
      ->required();
  set->add_option("tier", o->tier, "a tier of the policy file's tiers:")
      ->required();
  set->add_option("--expires-in", o->expires_in,
                  "end it by itself after this long: 90s, 30m, 24h, 7d "
                  "(default: until cleared)");
  set->callback([o, &exit_code] {
    std::string body =
        absl::StrCat("{\"tier\":", internal::JsonString(o->tier));
    if (!o->expires_in.empty()) {
      std::optional<int64_t> ms = ParseExpiry(o->expires_in);
      if (!ms.has_value()) {
        PrintError(kAdmin, absl::StrCat("--expires-in ", o->expires_in,
                                        ": expected a count and a unit (ms, "
                                        "s, m, h, d), e.g. 24h"));
        exit_code = kExitUsage;
        return;
      }
      absl::StrAppend(&body, ",\"expires_in_ms\":", *ms);
    }
    body += "}";
    exit_code = Run(*o, "PUT", SubjectPath(o->subject), body,
                    [](std::string_view answer,
                       const AdminOptions&) -> absl::StatusOr<std::string> {
                      absl::StatusOr<internal::FlatJson> a =
                          internal::ParseFlatJson(answer);
                      if (!a.ok()) return a.status();
                      return AssignmentLine(*a);
                    });
  });

  CLI::App* clear =
      cmd->add_subcommand("clear", "End SUBJECT's runtime assignment");
  AddCommon(clear, *o);
  clear->add_option("subject", o->subject, "user ID, network or address")
      ->required();
  clear->callback([o, &exit_code] {
    exit_code =
        Run(*o, "DELETE", SubjectPath(o->subject), "",
            [](std::string_view,
               const AdminOptions& opts) -> absl::StatusOr<std::string> {
              return absl::StrCat("cleared ", opts.subject, "\n");
            });
  });

  CLI::App* reset = cmd->add_subcommand(
      "reset", "Drop SUBJECT's buckets: its next requests start afresh");
  AddCommon(reset, *o);
  reset->add_option("subject", o->subject, "user ID, network or address")
      ->required();
  reset->callback([o, &exit_code] {
    const bool user = !o->subject.empty() && o->subject[0] == '@';
    const std::string body =
        absl::StrCat("{\"", user ? "user_id" : "address",
                     "\":", internal::JsonString(o->subject), "}");
    exit_code =
        Run(*o, "POST", absl::StrCat(kApi, "reset"), body,
            [](std::string_view answer,
               const AdminOptions& opts) -> absl::StatusOr<std::string> {
              absl::StatusOr<internal::FlatJson> a =
                  internal::ParseFlatJson(answer);
              if (!a.ok()) return a.status();
              const internal::JsonValue* n = a->Find("reset");
              return absl::StrCat("reset ", opts.subject, ": ",
                                  n != nullptr ? n->integer : 0, " buckets\n");
            });
  });
}

}  // namespace mxlimit::cli
