// json_check: a strict JSON validator and field extractor for the CLI tests,
// so they can check `mxlimit replay --json` without python3 or jq.
//
//   json_check FILE [PATH...]
//
// Exits 1 with the byte offset of the first error unless FILE holds exactly
// one JSON value (RFC 8259: no trailing commas, no control characters or
// invalid UTF-8 in strings, no leading zeros, no NaN), optionally followed by
// whitespace. Then prints the values each PATH selects, one per line:
//   - PATH is dot-separated object keys; "[]" after a key selects every
//     element of that array: `requests`, `tables.ip.size`,
//     `top_limited_clients[].key`, `policies[].name`.
//   - Strings print decoded (escapes resolved), numbers and literals as
//     written, objects and arrays as <object> / <array>.
// A PATH that selects nothing (missing key, not an object) exits 1.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

// A member is its own struct, not a std::pair: a pair may not hold the
// still-incomplete Value, a vector may.
struct Member;

struct Value {
  enum Kind { kObject, kArray, kString, kNumber, kLiteral } kind = kLiteral;
  std::string text;  // string (decoded), number or literal as written
  std::vector<Member> members;
  std::vector<Value> items;
};

struct Member {
  std::string key;
  Value value;
};

class Parser {
 public:
  explicit Parser(std::string_view in) : in_(in) {}

  bool ParseDocument(Value* out) {
    SkipSpace();
    if (!ParseValue(out, 0)) return false;
    SkipSpace();
    if (pos_ != in_.size()) return Fail("text after the JSON value");
    return true;
  }
  const std::string& error() const { return error_; }
  size_t pos() const { return pos_; }

 private:
  static constexpr int kMaxDepth = 64;

  bool Fail(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  void SkipSpace() {
    while (pos_ < in_.size() && (in_[pos_] == ' ' || in_[pos_] == '\t' ||
                                 in_[pos_] == '\n' || in_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(char c) {
    if (pos_ < in_.size() && in_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool ParseValue(Value* out, int depth) {
    if (depth > kMaxDepth) return Fail("nested too deep");
    if (pos_ >= in_.size()) return Fail("unexpected end");
    const char c = in_[pos_];
    if (c == '{') return ParseObject(out, depth);
    if (c == '[') return ParseArray(out, depth);
    if (c == '"') {
      out->kind = Value::kString;
      return ParseString(&out->text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber(out);
    for (const char* lit : {"true", "false", "null"}) {
      const std::string_view l(lit);
      if (in_.substr(pos_, l.size()) == l) {
        pos_ += l.size();
        out->kind = Value::kLiteral;
        out->text = lit;
        return true;
      }
    }
    return Fail("not a JSON value");
  }
  bool ParseObject(Value* out, int depth) {
    out->kind = Value::kObject;
    ++pos_;
    SkipSpace();
    if (Eat('}')) return true;
    while (true) {
      SkipSpace();
      std::string key;
      if (pos_ >= in_.size() || in_[pos_] != '"') return Fail("expected a key");
      if (!ParseString(&key)) return false;
      SkipSpace();
      if (!Eat(':')) return Fail("expected ':'");
      SkipSpace();
      Value v;
      if (!ParseValue(&v, depth + 1)) return false;
      out->members.push_back(Member{std::move(key), std::move(v)});
      SkipSpace();
      if (Eat('}')) return true;
      if (!Eat(',')) return Fail("expected ',' or '}'");
    }
  }
  bool ParseArray(Value* out, int depth) {
    out->kind = Value::kArray;
    ++pos_;
    SkipSpace();
    if (Eat(']')) return true;
    while (true) {
      SkipSpace();
      Value v;
      if (!ParseValue(&v, depth + 1)) return false;
      out->items.push_back(std::move(v));
      SkipSpace();
      if (Eat(']')) return true;
      if (!Eat(',')) return Fail("expected ',' or ']'");
    }
  }
  bool Digits() {
    const size_t start = pos_;
    while (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9') ++pos_;
    return pos_ > start;
  }
  bool ParseNumber(Value* out) {
    const size_t start = pos_;
    Eat('-');
    if (Eat('0')) {
      if (pos_ < in_.size() && in_[pos_] >= '0' && in_[pos_] <= '9') {
        return Fail("leading zero");
      }
    } else if (!Digits()) {
      return Fail("bad number");
    }
    if (Eat('.') && !Digits()) return Fail("bad fraction");
    if (Eat('e') || Eat('E')) {
      if (!Eat('+')) Eat('-');
      if (!Digits()) return Fail("bad exponent");
    }
    out->kind = Value::kNumber;
    out->text = std::string(in_.substr(start, pos_ - start));
    return true;
  }
  static void AppendUtf8(std::string* s, unsigned cp) {
    if (cp < 0x80) {
      s->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      s->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      s->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      s->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      s->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  bool Hex4(unsigned* out) {
    if (in_.size() - pos_ < 4) return Fail("short \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = in_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        v |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        v |= c - 'A' + 10;
      } else {
        return Fail("bad \\u escape");
      }
    }
    *out = v;
    return true;
  }
  // Length of the valid UTF-8 sequence at pos_, or 0.
  size_t Utf8Length() const {
    const auto b = [&](size_t k) {
      return static_cast<unsigned char>(in_[pos_ + k]);
    };
    const unsigned char c = b(0);
    const size_t n = c < 0x80             ? 1
                     : (c & 0xE0) == 0xC0 ? 2
                     : (c & 0xF0) == 0xE0 ? 3
                     : (c & 0xF8) == 0xF0 ? 4
                                          : 0;
    if (n == 0 || pos_ + n > in_.size()) return 0;
    if (n == 2 && c < 0xC2) return 0;  // overlong
    for (size_t k = 1; k < n; ++k) {
      if ((b(k) & 0xC0) != 0x80) return 0;
    }
    return n;
  }
  bool ParseString(std::string* out) {
    ++pos_;  // the opening quote
    while (true) {
      if (pos_ >= in_.size()) return Fail("unterminated string");
      const unsigned char c = static_cast<unsigned char>(in_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20) return Fail("control character in string");
      if (c == '\\') {
        ++pos_;
        if (pos_ >= in_.size()) return Fail("unterminated escape");
        const char e = in_[pos_++];
        switch (e) {
          case '"':
            out->push_back('"');
            break;
          case '\\':
            out->push_back('\\');
            break;
          case '/':
            out->push_back('/');
            break;
          case 'b':
            out->push_back('\b');
            break;
          case 'f':
            out->push_back('\f');
            break;
          case 'n':
            out->push_back('\n');
            break;
          case 'r':
            out->push_back('\r');
            break;
          case 't':
            out->push_back('\t');
            break;
          case 'u': {
            unsigned cp;
            if (!Hex4(&cp)) return false;
            if (cp >= 0xD800 && cp < 0xDC00) {
              unsigned low;
              if (!Eat('\\') || !Eat('u') || !Hex4(&low) || low < 0xDC00 ||
                  low >= 0xE000) {
                return Fail("unpaired surrogate");
              }
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp < 0xE000) {
              return Fail("unpaired surrogate");
            }
            AppendUtf8(out, cp);
            break;
          }
          default:
            return Fail("bad escape");
        }
        continue;
      }
      const size_t n = Utf8Length();
      if (n == 0) return Fail("invalid UTF-8 in string");
      out->append(in_.substr(pos_, n));
      pos_ += n;
    }
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

// Appends the values `path` selects under `v` to `out`.
void Select(const Value& v, std::string_view path,
            std::vector<const Value*>* out) {
  if (path.empty()) {
    out->push_back(&v);
    return;
  }
  const size_t dot = path.find('.');
  std::string_view step = path.substr(0, dot);
  const std::string_view rest =
      dot == std::string_view::npos ? std::string_view() : path.substr(dot + 1);
  bool each = false;
  if (step.size() >= 2 && step.substr(step.size() - 2) == "[]") {
    each = true;
    step.remove_suffix(2);
  }
  const Value* target = &v;
  if (!step.empty()) {
    target = nullptr;
    if (v.kind != Value::kObject) return;
    for (const auto& [key, member] : v.members) {
      if (key == step) target = &member;
    }
    if (target == nullptr) return;
  }
  if (!each) {
    Select(*target, rest, out);
    return;
  }
  if (target->kind != Value::kArray) return;
  for (const Value& item : target->items) Select(item, rest, out);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: json_check FILE [PATH...]\n");
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  if (!file) {
    std::fprintf(stderr, "json_check: cannot open %s\n", argv[1]);
    return 2;
  }
  const std::string text((std::istreambuf_iterator<char>(file)),
                         std::istreambuf_iterator<char>());
  Parser parser(text);
  Value root;
  if (!parser.ParseDocument(&root)) {
    std::fprintf(stderr, "json_check: %s: invalid JSON at byte %zu: %s\n",
                 argv[1], parser.pos(), parser.error().c_str());
    return 1;
  }
  int status = 0;
  for (int i = 2; i < argc; ++i) {
    std::vector<const Value*> found;
    Select(root, argv[i], &found);
    // A "[]" path over an empty array legitimately selects nothing.
    if (found.empty() &&
        std::string_view(argv[i]).find("[]") == std::string_view::npos) {
      std::fprintf(stderr, "json_check: %s: no value at %s\n", argv[1],
                   argv[i]);
      status = 1;
    }
    for (const Value* v : found) {
      if (v->kind == Value::kObject) {
        std::cout << "<object>\n";
      } else if (v->kind == Value::kArray) {
        std::cout << "<array>\n";
      } else {
        std::cout << v->text << "\n";
      }
    }
  }
  return status;
}
