// -----------------------------------------------------------------------------
// File: replay/json_scan.h
// -----------------------------------------------------------------------------
//
// Internal to the JSON log parsers (synapse-json, caddy): a strict,
// allocation-free reader of the members of one JSON object. Values are
// handed out as raw views into the line (strings without their quotes and
// with their escapes still in place); nested objects and arrays are checked
// and skipped, to a bounded depth, so a hostile line costs time linear in
// its length and a fixed amount of stack.
//
// Only what RFC 8259 allows is accepted (no comments, no trailing commas, no
// single quotes, no control characters in strings, no leading zeros), so
// garbage and truncated lines are rejected instead of half-read.
//
// Example:
//   JsonObjectReader reader(line);
//   JsonMember m;
//   while (reader.Next(&m)) {
//     if (m.key == "time" && m.type == JsonType::kNumber) ...
//   }
//   if (!reader.ok()) return ParseResult::kMalformed;

#ifndef MXLIMIT_REPLAY_JSON_SCAN_H_
#define MXLIMIT_REPLAY_JSON_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "absl/strings/ascii.h"
#include "src/replay/text_scan.h"

namespace mxlimit::replay::internal {

enum class JsonType : uint8_t {
  kString,
  kNumber,
  kTrue,
  kFalse,
  kNull,
  kObject,
  kArray
};

struct JsonMember {
  // The key as written (escapes kept); keys we look for never need escapes.
  std::string_view key;
  JsonType type = JsonType::kNull;
  // kString: the text between the quotes, escapes kept. Others: the value's
  // whole text ("12.5", "true", "{...}").
  std::string_view value;
  // kString only: whether `value` holds a backslash escape.
  bool escaped = false;
};

// Nesting below the object being read: deeper values are malformed. Synapse
// and Caddy records nest two levels at most (Caddy's request.headers).
inline constexpr int kMaxJsonDepth = 8;

class JsonObjectReader {
 public:
  // `text` is the whole object, optionally with blanks around it.
  explicit JsonObjectReader(std::string_view text) : text_(text) {
    SkipSpace();
    if (!Eat('{')) state_ = State::kError;
  }

  // The next member, or false at the end of the object or on a syntax
  // error (`ok()` tells which).
  bool Next(JsonMember* m) {
    if (state_ == State::kEnd || state_ == State::kError) return false;
    SkipSpace();
    if (state_ == State::kFirst && Eat('}')) return Finish();
    if (state_ == State::kMore) {
      if (Eat('}')) return Finish();
      if (!Eat(',')) return Fail();
      SkipSpace();
    }
    bool key_escaped = false;
    JsonMember out;
    if (!ScanString(&out.key, &key_escaped)) return Fail();
    SkipSpace();
    if (!Eat(':')) return Fail();
    SkipSpace();
    if (!ScanValue(0, &out)) return Fail();
    state_ = State::kMore;
    *m = out;
    return true;
  }

  // No syntax error so far; once `Next` returned false, that the object
  // closed and nothing but blanks follows it.
  bool ok() const { return state_ != State::kError; }

 private:
  enum class State : uint8_t { kFirst, kMore, kEnd, kError };

  bool Fail() {
    state_ = State::kError;
    return false;
  }
  bool Finish() {
    SkipSpace();
    state_ = pos_ == text_.size() ? State::kEnd : State::kError;
    return false;
  }

  bool Eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
            text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool EatDigits() {
    const size_t start = pos_;
    while (absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
    return pos_ > start;
  }

  // One escape after its backslash: \" \\ \/ \b \f \n \r \t or \uXXXX.
  bool ScanEscape() {
    const char c = Peek();
    ++pos_;
    switch (c) {
      case '"':
      case '\\':
      case '/':
      case 'b':
      case 'f':
      case 'n':
      case 'r':
      case 't':
        return true;
      case 'u':
        for (int i = 0; i < 4; ++i) {
          if (!absl::ascii_isxdigit(static_cast<unsigned char>(Peek()))) {
            return false;
          }
          ++pos_;
        }
        return true;
      default:
        return false;
    }
  }

  bool ScanString(std::string_view* content, bool* escaped) {
    if (!Eat('"')) return false;
    const size_t start = pos_;
    *escaped = false;
    while (pos_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        *content = text_.substr(start, pos_ - start);
        ++pos_;
        return true;
      }
      if (c < 0x20) return false;  // raw control characters are not JSON
      ++pos_;
      if (c == '\\') {
        *escaped = true;
        if (!ScanEscape()) return false;
      }
    }
    return false;  // unterminated
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  bool ScanNumber() {
    Eat('-');
    if (Peek() == '0') {
      ++pos_;
    } else if (!EatDigits()) {
      return false;
    }
    if (Eat('.') && !EatDigits()) return false;
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (!Eat('+')) Eat('-');
      if (!EatDigits()) return false;
    }
    return true;
  }

  bool ScanLiteral(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  // Members or elements of a nested object ('{' seen) or array ('[').
  bool ScanContainer(int depth, bool object) {
    const char close = object ? '}' : ']';
    SkipSpace();
    if (Eat(close)) return true;
    for (;;) {
      JsonMember inner;
      if (object) {
        bool ignored = false;
        if (!ScanString(&inner.key, &ignored)) return false;
        SkipSpace();
        if (!Eat(':')) return false;
        SkipSpace();
      }
      if (!ScanValue(depth + 1, &inner)) return false;
      SkipSpace();
      if (Eat(close)) return true;
      if (!Eat(',')) return false;
      SkipSpace();
    }
  }

  bool ScanValue(int depth, JsonMember* m) {
    const size_t start = pos_;
    const char c = Peek();
    bool good = false;
    if (c == '"') {
      m->type = JsonType::kString;
      return ScanString(&m->value, &m->escaped);
    }
    if (c == '{' || c == '[') {
      if (depth >= kMaxJsonDepth) return false;
      ++pos_;
      m->type = c == '{' ? JsonType::kObject : JsonType::kArray;
      good = ScanContainer(depth, c == '{');
    } else if (c == 't') {
      m->type = JsonType::kTrue;
      good = ScanLiteral("true");
    } else if (c == 'f') {
      m->type = JsonType::kFalse;
      good = ScanLiteral("false");
    } else if (c == 'n') {
      m->type = JsonType::kNull;
      good = ScanLiteral("null");
    } else {
      m->type = JsonType::kNumber;
      good = ScanNumber();
    }
    m->value = text_.substr(start, pos_ - start);
    return good;
  }

  std::string_view text_;
  size_t pos_ = 0;
  State state_ = State::kFirst;
};

// A JSON number of Unix seconds (or a duration in seconds) as rounded
// milliseconds: "1796032800.25" -> 1796032800250. Plain decimals only, at
// most 12 integer digits, no sign or exponent (neither Synapse nor Caddy
// writes them for these fields); false otherwise.
inline bool JsonSecondsToMs(std::string_view number, int64_t* ms) {
  size_t i = 0;
  int64_t whole = 0;
  while (i < number.size() &&
         absl::ascii_isdigit(static_cast<unsigned char>(number[i]))) {
    if (i == 12) return false;
    whole = whole * 10 + (number[i] - '0');
    ++i;
  }
  if (i == 0) return false;
  int64_t frac = 0;
  int digits = 0;
  bool round_up = false;
  if (i < number.size() && number[i] == '.') {
    ++i;
    const size_t first = i;
    for (; i < number.size(); ++i) {
      const char c = number[i];
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
      if (digits < 3) {
        frac = frac * 10 + (c - '0');
        ++digits;
      } else if (i == first + 3) {
        round_up = c >= '5';
      }
    }
    if (i == first) return false;
  }
  if (i != number.size()) return false;
  for (; digits < 3; ++digits) frac *= 10;
  *ms = whole * 1000 + frac + (round_up ? 1 : 0);
  return true;
}

// One member a parser wants: `key` and where to store it.
struct JsonSlot {
  std::string_view key;
  JsonMember* member;
};

// Reads the members of `object` that `slots` name into their slots (the last
// of duplicates wins, as in Python's json module; other members are skipped).
// False on a syntax error.
inline bool CollectMembers(std::string_view object,
                           std::span<const JsonSlot> slots) {
  JsonObjectReader reader(object);
  JsonMember m;
  while (reader.Next(&m)) {
    for (const JsonSlot& slot : slots) {
      if (m.key == slot.key) {
        *slot.member = m;
        break;
      }
    }
  }
  return reader.ok();
}

// A string member the parsers can view as is: present, a string, and free
// of escapes.
inline bool IsPlainString(const JsonMember& m) {
  return !m.key.empty() && m.type == JsonType::kString && !m.escaped;
}

// The request line of a JSON access-log entry: method, target and protocol
// each a plain string that a request line could hold.
inline bool IsPlainRequestLine(const JsonMember& method,
                               const JsonMember& target,
                               const JsonMember& protocol) {
  return IsPlainString(method) && IsPlainString(target) &&
         IsPlainString(protocol) && IsHttpMethod(method.value) &&
         IsRequestTarget(target.value) && IsHttpProtocol(protocol.value);
}

}  // namespace mxlimit::replay::internal

#endif  // MXLIMIT_REPLAY_JSON_SCAN_H_
