#include "src/util/flat_json.h"

#include <charconv>

#include "absl/strings/str_cat.h"
#include "mxlimit/internal/absl_compat.h"
#include "src/util/json_string.h"

namespace mxlimit::internal {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  absl::Status Object(std::vector<std::pair<std::string, JsonValue>>& members) {
    SkipSpace();
    if (!Take('{')) return Error("expected a JSON object");
    SkipSpace();
    if (!Take('}')) {
      while (true) {
        SkipSpace();
        std::string name;
        if (absl::Status s = String(name); !s.ok()) return s;
        for (const auto& m : members) {
          if (m.first == name) {
            return Error(absl::StrCat("\"", name, "\" is given twice"));
          }
        }
        SkipSpace();
        if (!Take(':')) return Error("expected ':'");
        SkipSpace();
        JsonValue value;
        if (absl::Status s = Value(value); !s.ok()) return s;
        members.emplace_back(std::move(name), std::move(value));
        SkipSpace();
        if (Take(',')) continue;
        if (Take('}')) break;
        return Error("expected ',' or '}'");
      }
    }
    SkipSpace();
    if (at_ != text_.size()) return Error("expected the end after the object");
    return absl::OkStatus();
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("body: ", ToAbsl(what), " at byte ", at_));
  }
  bool Take(char c) {
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  void SkipSpace() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' ||
                                  text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  bool Word(std::string_view w) {
    if (text_.substr(at_, w.size()) != w) return false;
    at_ += w.size();
    return true;
  }

  absl::Status Value(JsonValue& v) {
    if (at_ >= text_.size()) return Error("expected a value");
    const char c = text_[at_];
    if (c == '"') {
      v.kind = JsonValue::kString;
      return String(v.text);
    }
    if (c == '{' || c == '[') {
      return Error("expected a string, an integer, true, false or null");
    }
    if (Word("true") || Word("false")) {
      v.kind = JsonValue::kBool;
      v.boolean = c == 't';
      return absl::OkStatus();
    }
    if (Word("null")) {
      v.kind = JsonValue::kNull;
      return absl::OkStatus();
    }
    size_t end = at_;
    if (end < text_.size() && text_[end] == '-') ++end;
    while (end < text_.size() && text_[end] >= '0' && text_[end] <= '9') ++end;
    const std::string_view digits = text_.substr(at_, end - at_);
    if (end < text_.size() &&
        (text_[end] == '.' || text_[end] == 'e' || text_[end] == 'E')) {
      return Error("expected an integer (no fraction or exponent)");
    }
    auto [ptr, ec] = std::from_chars(digits.data(),
                                     digits.data() + digits.size(), v.integer);
    const std::string_view magnitude =
        !digits.empty() && digits[0] == '-' ? digits.substr(1) : digits;
    const bool leading_zero = magnitude.size() > 1 && magnitude[0] == '0';
    if (digits.empty() || ec != std::errc() ||
        ptr != digits.data() + digits.size() || leading_zero) {
      return Error(
          "expected a string, an integer within 64 bits, true, "
          "false or null");
    }
    v.kind = JsonValue::kInteger;
    at_ = end;
    return absl::OkStatus();
  }

  static void AppendUtf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  bool Hex4(uint32_t& out) {
    if (text_.size() - at_ < 4) return false;
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[at_++];
      out <<= 4;
      if (h >= '0' && h <= '9') {
        out |= static_cast<uint32_t>(h - '0');
      } else if (h >= 'a' && h <= 'f') {
        out |= static_cast<uint32_t>(h - 'a' + 10);
      } else if (h >= 'A' && h <= 'F') {
        out |= static_cast<uint32_t>(h - 'A' + 10);
      } else {
        return false;
      }
    }
    return true;
  }

  absl::Status String(std::string& out) {
    if (!Take('"')) return Error("expected a string");
    while (at_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[at_++]);
      if (c == '"') return absl::OkStatus();
      if (c < 0x20) return Error("a control byte inside a string");
      if (c != '\\') {
        out.push_back(static_cast<char>(c));
        continue;
      }
      if (at_ >= text_.size()) break;
      const char e = text_[at_++];
      switch (e) {
        case '"':
          out.push_back('"');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '/':
          out.push_back('/');
          break;
        case 'b':
          out.push_back('\b');
          break;
        case 'f':
          out.push_back('\f');
          break;
        case 'n':
          out.push_back('\n');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(cp)) return Error("a bad \\u escape");
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (!Word("\\u") || !Hex4(low) || low < 0xDC00 || low > 0xDFFF) {
              return Error("a lone surrogate in a \\u escape");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return Error("a lone surrogate in a \\u escape");
          }
          AppendUtf8(out, cp);
          break;
        }
        default:
          return Error("a bad escape in a string");
      }
    }
    return Error("a string that does not end");
  }

  std::string_view text_;
  size_t at_ = 0;
};

}  // namespace

const JsonValue* FlatJson::Find(std::string_view name) const {
  for (const auto& m : members_) {
    if (m.first == name) return &m.second;
  }
  return nullptr;
}

absl::StatusOr<FlatJson> ParseFlatJson(std::string_view text) {
  FlatJson out;
  Reader reader(text);
  if (absl::Status s = reader.Object(out.members_); !s.ok()) return s;
  return out;
}

std::string JsonString(std::string_view s) {
  std::string out;
  AppendJsonString(out, s);
  return out;
}

}  // namespace mxlimit::internal
