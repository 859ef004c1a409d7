// A strict parser of the Structured Field Lists (RFC 9651 section 4.2) the
// RateLimit-Policy and RateLimit fields are, for the bare items they may
// hold: Integers, Strings and Tokens. Anything else, and any deviation from
// the grammar (stray spaces, a trailing comma, 16-digit integers, bad
// escapes), fails. Shared by the tests of the values as written
// (tests/engine/ratelimit_headers_format_test.cc) and as the limiter's
// decisions make them (ratelimit_headers_limiter_test.cc).
#ifndef MXLIMIT_TESTS_TESTING_RATELIMIT_FIELD_PARSER_H_
#define MXLIMIT_TESTS_TESTING_RATELIMIT_FIELD_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "mxlimit/ratelimit_headers.h"

namespace mxlimit::testing {

struct SfToken {
  std::string text;
};
using SfBareItem = std::variant<int64_t, std::string, SfToken>;
struct SfItem {
  SfBareItem value;
  std::vector<std::pair<std::string, SfBareItem>> params;
};

class SfParser {
 public:
  explicit SfParser(std::string_view text) : s_(text) {}

  std::optional<std::vector<SfItem>> List() {
    std::vector<SfItem> items;
    SkipSpaces();  // Leading SP is discarded before parsing (4.2).
    while (i_ < s_.size()) {
      std::optional<SfItem> item = Item();
      if (!item.has_value()) return std::nullopt;
      items.push_back(*std::move(item));
      SkipOws();
      if (i_ == s_.size()) return items;
      if (s_[i_++] != ',') return std::nullopt;
      SkipOws();
      if (i_ == s_.size()) return std::nullopt;  // trailing comma
    }
    return items;
  }

 private:
  std::optional<SfItem> Item() {
    std::optional<SfBareItem> value = BareItem();
    if (!value.has_value()) return std::nullopt;
    SfItem item{*std::move(value), {}};
    while (i_ < s_.size() && s_[i_] == ';') {
      ++i_;
      SkipSpaces();
      std::optional<std::string> key = Key();
      if (!key.has_value()) return std::nullopt;
      SfBareItem v = int64_t{1};  // `true` stands in for a bare key
      if (i_ < s_.size() && s_[i_] == '=') {
        ++i_;
        std::optional<SfBareItem> parsed = BareItem();
        if (!parsed.has_value()) return std::nullopt;
        v = *std::move(parsed);
      }
      for (const auto& [k, unused] : item.params) {
        if (k == *key) return std::nullopt;  // we never repeat a key
      }
      item.params.emplace_back(*std::move(key), std::move(v));
    }
    return item;
  }

  std::optional<SfBareItem> BareItem() {
    if (i_ == s_.size()) return std::nullopt;
    const char c = s_[i_];
    if (c == '-' || IsDigit(c)) return Integer();
    if (c == '"') return String();
    if (IsAlpha(c) || c == '*') return Token();
    return std::nullopt;
  }

  std::optional<SfBareItem> Integer() {
    int64_t sign = 1;
    if (s_[i_] == '-') {
      sign = -1;
      ++i_;
    }
    int64_t v = 0;
    size_t digits = 0;
    while (i_ < s_.size() && IsDigit(s_[i_])) {
      if (++digits > 15) return std::nullopt;
      v = v * 10 + (s_[i_++] - '0');
    }
    if (digits == 0) return std::nullopt;
    if (i_ < s_.size() && s_[i_] == '.') return std::nullopt;  // a Decimal
    return SfBareItem(sign * v);
  }

  std::optional<SfBareItem> String() {
    ++i_;  // '"'
    std::string out;
    while (i_ < s_.size()) {
      const char c = s_[i_++];
      if (c == '\\') {
        if (i_ == s_.size()) return std::nullopt;
        const char e = s_[i_++];
        if (e != '"' && e != '\\') return std::nullopt;
        out.push_back(e);
      } else if (c == '"') {
        return SfBareItem(std::move(out));
      } else if (c < 0x20 || c > 0x7E) {
        return std::nullopt;
      } else {
        out.push_back(c);
      }
    }
    return std::nullopt;  // unterminated
  }

  std::optional<SfBareItem> Token() {
    const size_t start = i_++;
    while (i_ < s_.size() && IsTokenChar(s_[i_])) ++i_;
    return SfBareItem(SfToken{std::string(s_.substr(start, i_ - start))});
  }

  std::optional<std::string> Key() {
    if (i_ == s_.size() || !(IsLcAlpha(s_[i_]) || s_[i_] == '*')) {
      return std::nullopt;
    }
    const size_t start = i_++;
    while (i_ < s_.size() &&
           (IsLcAlpha(s_[i_]) || IsDigit(s_[i_]) || s_[i_] == '_' ||
            s_[i_] == '-' || s_[i_] == '.' || s_[i_] == '*')) {
      ++i_;
    }
    return std::string(s_.substr(start, i_ - start));
  }

  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }
  static bool IsLcAlpha(char c) { return c >= 'a' && c <= 'z'; }
  static bool IsAlpha(char c) { return IsLcAlpha(c) || (c >= 'A' && c <= 'Z'); }
  static bool IsTokenChar(char c) {
    return IsAlpha(c) || IsDigit(c) ||
           std::string_view("!#$%&'*+-.^_`|~:/").find(c) !=
               std::string_view::npos;
  }
  void SkipSpaces() {
    while (i_ < s_.size() && s_[i_] == ' ') ++i_;
  }
  void SkipOws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }

  std::string_view s_;
  size_t i_ = 0;
};

// The one Item of a field value, or nothing when the value does not parse or
// holds another number of Items.
inline std::optional<SfItem> OneItem(std::string_view value) {
  std::optional<std::vector<SfItem>> list = SfParser(value).List();
  if (!list.has_value() || list->size() != 1) return std::nullopt;
  return (*list)[0];
}

inline std::optional<int64_t> IntParam(const SfItem& item,
                                       std::string_view key) {
  for (const auto& [k, v] : item.params) {
    if (k == key && std::holds_alternative<int64_t>(v)) {
      return std::get<int64_t>(v);
    }
  }
  return std::nullopt;
}

inline std::optional<std::string> StringParam(const SfItem& item,
                                              std::string_view key) {
  for (const auto& [k, v] : item.params) {
    if (k == key && std::holds_alternative<std::string>(v)) {
      return std::get<std::string>(v);
    }
  }
  return std::nullopt;
}

// What the draft (-10) requires of the pair: one String-valued Item each,
// naming the same policy; `q` and `r` present; every parameter of the
// right type and range.
struct ParsedFields {
  std::string policy;
  int64_t q = 0;
  std::optional<int64_t> w;
  std::optional<std::string> qu;
  int64_t r = 0;
  int64_t t = 0;
};

inline std::optional<ParsedFields> ParseFields(const RateLimitHeaderValues& v) {
  std::optional<SfItem> policy = OneItem(v.policy);
  std::optional<SfItem> limit = OneItem(v.ratelimit);
  if (!policy.has_value() || !limit.has_value()) return std::nullopt;
  if (!std::holds_alternative<std::string>(policy->value) ||
      !std::holds_alternative<std::string>(limit->value) ||
      std::get<std::string>(policy->value) !=
          std::get<std::string>(limit->value)) {
    return std::nullopt;
  }
  ParsedFields f;
  f.policy = std::get<std::string>(policy->value);
  std::optional<int64_t> q = IntParam(*policy, "q");
  std::optional<int64_t> r = IntParam(*limit, "r");
  std::optional<int64_t> t = IntParam(*limit, "t");
  if (!q.has_value() || *q < 0 || !r.has_value() || *r < 0 || !t.has_value() ||
      *t < 0) {
    return std::nullopt;
  }
  f.q = *q;
  f.r = *r;
  f.t = *t;
  for (const auto& [k, unused] : policy->params) {
    if (k != "q" && k != "w" && k != "qu") return std::nullopt;
  }
  for (const auto& [k, unused] : limit->params) {
    if (k != "r" && k != "t") return std::nullopt;
  }
  f.w = IntParam(*policy, "w");
  if (f.w.has_value() && *f.w <= 0) return std::nullopt;  // non-zero
  f.qu = StringParam(*policy, "qu");
  if (f.qu.has_value() && *f.qu != "content-bytes" &&
      *f.qu != "concurrent-requests") {
    return std::nullopt;
  }
  return f;
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_RATELIMIT_FIELD_PARSER_H_
