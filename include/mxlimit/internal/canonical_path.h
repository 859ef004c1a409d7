// -----------------------------------------------------------------------------
// File: internal/canonical_path.h
// -----------------------------------------------------------------------------
//
// The canonical form in which policy patterns and raw query-free paths are
// compared (docs/policies.md, "Canonical paths"). A client chooses how it
// spells a path; the canonical form takes that choice away:
//
//   * A percent-escape `%XX` (hex digits in either case) is decoded, unless it
//     encodes '/', '?', '#' or '%': decoding those would change where segments
//     end or what the escape means, so they stay escapes, with upper-case hex
//     (`%2f` and `%2F` are both `%2F`, one opaque in-segment sequence). A '%'
//     not followed by two hex digits is an ordinary byte.
//   * The API version segment is folded the way the route normalizer folds
//     aliases: `/_matrix/client/{r0,unstable,api/v1}` -> `/_matrix/client/v3`
//     and `/_matrix/media/{r0,v1}` -> `/_matrix/media/v3`, for every path
//     under them, known to the normalizer or not. The fold applies to the
//     decoded path and only to a whole segment (`/_matrix/client/r0x` stays).
//
// `CanonicalCursor` produces the canonical bytes of a path one at a time
// without copying it: the policy trie walk and the '*' glob read it directly,
// so the request path stays allocation-free and O(path length).
// `CanonicalPath` builds the same bytes as a string (compiling patterns,
// `mxlimit explain`). Both read any bytes; nothing is rejected.
//
// Example:
//   CanonicalCursor c("/_matrix/client/r0/rooms/%21a%3Ab/send/x");
//   uint8_t b;
//   while (c.Next(b)) Use(b);  // "/_matrix/client/v3/rooms/!a:b/send/x"

#ifndef MXLIMIT_INTERNAL_CANONICAL_PATH_H_
#define MXLIMIT_INTERNAL_CANONICAL_PATH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "mxlimit/internal/hex.h"

namespace mxlimit::internal {

// HexDigitValue for every byte, as a table: the cursor decodes escapes
// without a branch per digit range.
struct HexTable {
  int8_t value[256];
  constexpr HexTable() : value() {
    for (int c = 0; c < 256; ++c) {
      value[c] = static_cast<int8_t>(HexDigitValue(static_cast<char>(c)));
    }
  }
};
inline constexpr HexTable kHexTable;

// Bytes whose escapes stay escaped in the canonical form.
constexpr bool StaysEscaped(uint8_t decoded) {
  return decoded == '/' || decoded == '?' || decoded == '#' || decoded == '%';
}

// One version alias folded by the canonical form: `from` (a whole segment
// sequence) is read as `to`.
struct VersionFold {
  std::string_view from;
  std::string_view to;
};

// The folds, longest `from` first within each API.
inline constexpr VersionFold kVersionFolds[] = {
    {"/_matrix/client/unstable", "/_matrix/client/v3"},
    {"/_matrix/client/api/v1", "/_matrix/client/v3"},
    {"/_matrix/client/r0", "/_matrix/client/v3"},
    {"/_matrix/media/r0", "/_matrix/media/v3"},
    {"/_matrix/media/v1", "/_matrix/media/v3"},
};
// The longest `from`, plus the byte after it.
inline constexpr size_t kFoldWindow = 25;

class CanonicalCursor {
 public:
  explicit CanonicalCursor(std::string_view raw)
      : p_(raw.data()), end_(raw.data() + raw.size()) {
    FoldVersion();
    FindEscape();
  }

  // The next canonical byte; false at the end of the path.
  bool Next(uint8_t& out) {
    if (__builtin_expect(head_pos_ < head_len_ || pending_ != 0, 0)) {
      return NextQueued(out);
    }
    if (p_ == end_) return false;
    const auto c = static_cast<uint8_t>(*p_);
    if (c != '%') {
      ++p_;
      out = c;
      return true;
    }
    out = DecodeEscape();
    return true;
  }

  // True when the path is its own canonical form (no version alias, no '%'
  // within the first bytes scanned): callers may then read it directly.
  bool IsRaw() const { return head_len_ == 0 && escape_ == end_; }

  // Reads `n` canonical bytes and compares them with `bytes`; false on the
  // first difference or when the path ends first (the cursor's position is
  // then unspecified). A run of raw bytes without '%' is compared whole.
  bool Consume(const char* bytes, size_t n) {
    while (n != 0) {
      if (head_pos_ == head_len_ && pending_ == 0) {
        // Raw bytes up to the next '%' are canonical as they are.
        if (p_ > escape_) FindEscape();
        size_t run = static_cast<size_t>(escape_ - p_);
        if (run > n) run = n;
        if (run != 0) {
          if (!SameBytes(p_, bytes, run)) return false;
          p_ += run;
          bytes += run;
          n -= run;
          continue;
        }
      }
      uint8_t b;
      if (!Next(b) || b != static_cast<uint8_t>(*bytes)) return false;
      ++bytes;
      --n;
    }
    return true;
  }

 private:
  // memcmp(a, b, n) == 0 without a library call for the short labels of
  // the policy trie.
  static bool SameBytes(const char* a, const char* b, size_t n) {
    while (n >= 8) {
      uint64_t x, y;
      std::memcpy(&x, a, 8);
      std::memcpy(&y, b, 8);
      if (x != y) return false;
      a += 8;
      b += 8;
      n -= 8;
    }
    while (n != 0) {
      if (*a++ != *b++) return false;
      --n;
    }
    return true;
  }

  // Points `escape_` at the first '%' at or after p_, looking a bounded
  // window ahead (so a long path is never scanned ahead of the walk): the raw
  // bytes before `escape_` are canonical as they are.
  void FindEscape() {
    const size_t left = static_cast<size_t>(end_ - p_);
    const size_t window = left < 256 ? left : 256;
    // An empty target may be a view with no data at all (nullptr), which
    // memchr must not see even for zero bytes.
    const void* pct = window != 0 ? std::memchr(p_, '%', window) : nullptr;
    escape_ = pct != nullptr ? static_cast<const char*>(pct) : p_ + window;
  }

  // The folded head's bytes, then a kept escape's hex digits.
  bool NextQueued(uint8_t& out) {
    if (head_pos_ < head_len_) {
      out = static_cast<uint8_t>(head_[head_pos_++]);
      return true;
    }
    out = pending_digits_[2 - pending_];
    --pending_;
    return true;
  }

  // At p_ == '%': the byte the escape stands for, advancing past it; an
  // escape that stays escaped yields '%' and queues its two hex digits.
  uint8_t DecodeEscape() {
    if (end_ - p_ >= 3) {
      const int hi = kHexTable.value[static_cast<uint8_t>(p_[1])];
      const int lo = kHexTable.value[static_cast<uint8_t>(p_[2])];
      if ((hi | lo) >= 0) {
        const auto decoded = static_cast<uint8_t>(hi * 16 + lo);
        p_ += 3;
        if (!StaysEscaped(decoded)) return decoded;
        static constexpr char kUpper[] = "0123456789ABCDEF";
        pending_digits_[0] = static_cast<uint8_t>(kUpper[hi]);
        pending_digits_[1] = static_cast<uint8_t>(kUpper[lo]);
        pending_ = 2;
        return '%';
      }
    }
    ++p_;
    return '%';
  }

  // Replaces a leading version alias with its canonical spelling. The
  // common case (no '%' in the first bytes) compares the raw bytes; else the
  // head is decoded into a small buffer first.
  void FoldVersion() {
    const size_t size = static_cast<size_t>(end_ - p_);
    const size_t window = size < kFoldWindow ? size : kFoldWindow;
    if (window == 0) return;
    if (std::memchr(p_, '%', window) == nullptr) {
      // Constant-size compares, which the compiler inlines.
      if (size < 17 || std::memcmp(p_, "/_matrix/", 9) != 0) return;
      const char* q = p_ + 9;
      auto segment = [&](const char* text, size_t n) {
        return static_cast<size_t>(end_ - q) >= n &&
               std::memcmp(q, text, n) == 0 &&
               (static_cast<size_t>(end_ - q) == n || q[n] == '/');
      };
      if (std::memcmp(q, "client/", 7) == 0) {
        q += 7;
        if (segment("r0", 2)) return Fold(kVersionFolds[2], q + 2);
        if (segment("unstable", 8)) return Fold(kVersionFolds[0], q + 8);
        if (segment("api/v1", 6)) return Fold(kVersionFolds[1], q + 6);
      } else if (std::memcmp(q, "media/", 6) == 0) {
        q += 6;
        if (segment("r0", 2)) return Fold(kVersionFolds[3], q + 2);
        if (segment("v1", 2)) return Fold(kVersionFolds[4], q + 2);
      }
      return;
    }
    // Decode the head, remembering where each canonical byte ends in the raw
    // path, then fold as above.
    char decoded[kFoldWindow];
    const char* raw_end[kFoldWindow];
    size_t n = 0;
    CanonicalCursor scan(*this);
    uint8_t b;
    while (n < kFoldWindow && scan.Next(b)) {
      decoded[n] = static_cast<char>(b);
      // A kept escape's three bytes end together; only its '%' can matter
      // to a fold (never a '/'), so its position is that of the escape.
      raw_end[n] = scan.pending_ != 0 ? nullptr : scan.p_;
      ++n;
    }
    for (const VersionFold& f : kVersionFolds) {
      if (n < f.from.size() ||
          std::memcmp(decoded, f.from.data(), f.from.size()) != 0) {
        continue;
      }
      if (n > f.from.size() && decoded[f.from.size()] != '/') continue;
      const char* after = raw_end[f.from.size() - 1];
      if (after == nullptr) continue;
      Fold(f, after);
      return;
    }
  }

  void Fold(const VersionFold& f, const char* raw_after) {
    head_ = f.to.data();
    head_len_ = f.to.size();
    head_pos_ = 0;
    p_ = raw_after;
  }

  const char* head_ = nullptr;
  size_t head_len_ = 0;
  size_t head_pos_ = 0;
  const char* p_;
  const char* end_;
  const char* escape_ = nullptr;  // See FindEscape.
  uint8_t pending_digits_[2] = {0, 0};
  uint8_t pending_ = 0;  // Hex digits of a kept escape still to emit.
};

// The canonical form of `raw` as a string.
inline std::string CanonicalPath(std::string_view raw) {
  CanonicalCursor c(raw);
  if (c.IsRaw()) return std::string(raw);
  std::string out;
  out.reserve(raw.size());
  uint8_t b;
  while (c.Next(b)) out.push_back(static_cast<char>(b));
  return out;
}

// True if `pattern` matches all of the canonical text `text` yields (see
// GlobMatch in policy_match.h: each '*' matches zero or more bytes, greedy
// with one backtrack point). `pattern` must itself be canonical. No
// allocation; O(|pattern| * |text|) in the worst case.
inline bool GlobMatchCanonical(std::string_view pattern, CanonicalCursor text) {
  size_t p = 0;
  size_t star = std::string_view::npos;
  CanonicalCursor mark = text;
  while (true) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = text;
      continue;
    }
    uint8_t c;
    if (!text.Next(c)) break;
    if (p < pattern.size() && static_cast<uint8_t>(pattern[p]) == c) {
      ++p;
      continue;
    }
    if (star == std::string_view::npos) return false;
    p = star + 1;
    uint8_t skipped;
    if (!mark.Next(skipped)) return false;
    text = mark;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

}  // namespace mxlimit::internal

#endif  // MXLIMIT_INTERNAL_CANONICAL_PATH_H_
