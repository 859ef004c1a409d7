// What a policy charges and how its denials read: the `charge`, `status`
// and `cost` rules, and the Matrix error a denial names (`errcode`, with
// MSC4335's `info_uri` and `can_upgrade`).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/policy.h"
#include "src/util/quote.h"

namespace mxlimit {
namespace {

using internal::QuoteForError;
using internal::ToAbsl;

bool IsErrcodeChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

// An http(s) URI of printable ASCII that a JSON string holds unescaped.
bool IsPlainUri(std::string_view uri) {
  if (!uri.starts_with("https://") && !uri.starts_with("http://")) {
    return false;
  }
  for (const char c : uri) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f || c == '"' || c == '\\') return false;
  }
  return true;
}

std::string RateText(const Policy& p) {
  if (p.concurrency.has_value()) return "an in-flight limit";
  return p.rate.ToString();
}

void AddChargeProblems(const Policy& p, std::vector<FieldProblem>& out) {
  for (const StatusRange& r : p.status) {
    if (r.first < 100 || r.last > 599 || r.first > r.last) {
      out.push_back({"status", absl::StrCat("got ", r.first, "-", r.last,
                                            ", expected status codes from "
                                            "100 to 599, the lower first")});
      break;
    }
  }
  if (!p.status.empty() && !ChargedOnResponse(p)) {
    out.push_back({"status",
                   "only a policy charged on the response reads the status; "
                   "add charge: response, or remove status"});
  }
  const bool weighed = p.cost != CostKind::kRequests;
  if ((weighed || ChargedOnResponse(p)) &&
      p.rate.kind() != Rate::Kind::kLimited) {
    out.push_back(
        {weighed ? "cost" : "charge",
         absl::StrCat("got ",
                      weighed ? ToAbsl(CostKindName(p.cost))
                              : ToAbsl(ChargeOnName(p.charge)),
                      ", which needs a limited rate to charge; the policy "
                      "has ",
                      RateText(p))});
  }
  if (ChargedOnResponse(p) && p.on_limit == OnLimit::kDelay) {
    out.push_back({"charge",
                   "a policy charged on the response cannot delay "
                   "(on_limit: delay charges ahead of time); use on_limit: "
                   "deny"});
  }
}

void AddErrorBodyProblems(const Policy& p, std::vector<FieldProblem>& out) {
  const bool user_limit = p.errcode == kUserLimitExceededErrcode;
  if (!p.errcode.empty()) {
    bool ok = p.errcode.size() <= kMaxErrcodeBytes;
    for (const char c : p.errcode) ok = ok && IsErrcodeChar(c);
    if (!ok) {
      out.push_back(
          {"errcode", absl::StrCat("got ", QuoteForError(p.errcode),
                                   ", expected 1 to ", kMaxErrcodeBytes,
                                   " of A-Z, 0-9, '_' and '.', e.g. "
                                   "M_USER_LIMIT_EXCEEDED")});
    }
  }
  if (user_limit && p.info_uri.empty()) {
    out.push_back({"errcode",
                   "M_USER_LIMIT_EXCEEDED needs info_uri (MSC4335): where "
                   "the user reads about the limit"});
  }
  if (!p.info_uri.empty()) {
    if (!user_limit) {
      out.push_back({"info_uri",
                     "only errcode: M_USER_LIMIT_EXCEEDED takes info_uri "
                     "(MSC4335)"});
    } else if (p.info_uri.size() > kMaxInfoUriBytes ||
               !IsPlainUri(p.info_uri)) {
      out.push_back({"info_uri", absl::StrCat("got ", QuoteForError(p.info_uri),
                                              ", expected an http(s) URI of "
                                              "at most ",
                                              kMaxInfoUriBytes,
                                              " bytes, without spaces, "
                                              "quotes or backslashes")});
    }
  }
  if (p.can_upgrade.has_value() && !user_limit) {
    out.push_back({"can_upgrade",
                   "only errcode: M_USER_LIMIT_EXCEEDED takes can_upgrade "
                   "(MSC4335)"});
  }
}

}  // namespace

std::string_view ChargeOnName(ChargeOn charge) {
  return charge == ChargeOn::kResponse ? "response" : "request";
}

std::optional<ChargeOn> ParseChargeOn(std::string_view name) {
  if (name == "request") return ChargeOn::kRequest;
  if (name == "response") return ChargeOn::kResponse;
  return std::nullopt;
}

std::string_view CostKindName(CostKind cost) {
  switch (cost) {
    case CostKind::kRequestBytes:
      return "request_bytes";
    case CostKind::kResponseBytes:
      return "response_bytes";
    case CostKind::kRequests:
      break;
  }
  return "requests";
}

std::optional<CostKind> ParseCostKind(std::string_view name) {
  for (const CostKind c : {CostKind::kRequests, CostKind::kRequestBytes,
                           CostKind::kResponseBytes}) {
    if (name == CostKindName(c)) return c;
  }
  return std::nullopt;
}

bool StatusCharges(const Policy& policy, int status) {
  if (!ChargedOnResponse(policy)) return false;
  if (policy.status.empty()) return true;
  for (const StatusRange& r : policy.status) {
    if (status >= r.first && status <= r.last) return true;
  }
  return false;
}

std::vector<FieldProblem> OutcomeProblems(const Policy& policy) {
  std::vector<FieldProblem> out;
  AddChargeProblems(policy, out);
  AddErrorBodyProblems(policy, out);
  return out;
}

}  // namespace mxlimit
