#include "src/util/query.h"

#include <bit>
#include <cstdint>
#include <span>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "mxlimit/appservice.h"
#include "mxlimit/internal/hex.h"

namespace mxlimit {
namespace {

// Whether `raw` (one parameter name as sent) decodes to `name`.
bool NameDecodesTo(std::string_view raw, std::string_view name) {
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c == '%' && i + 2 < raw.size()) {
      const int hi = internal::HexDigitValue(raw[i + 1]);
      const int lo = internal::HexDigitValue(raw[i + 2]);
      if (hi >= 0 && lo >= 0) {
        c = static_cast<char>(hi << 4 | lo);
        i += 2;
      }
    } else if (c == '+') {
      c = ' ';
    }
    if (n == name.size() || name[n] != c) return false;
    ++n;
  }
  return n == name.size();
}

// The first pair of `target`'s query (after its first '?', up to any '#')
// whose name decodes to `name`, with its raw value (empty without '=').
// One pass over the names; each value is skipped by one search for '&'.
bool FindPair(std::string_view target, std::string_view name,
              std::string_view& raw_value) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return false;
  // A '#' before the '?' starts a fragment: there is no query.
  if (q > 0 && target.substr(0, q).find('#') != std::string_view::npos) {
    return false;
  }
  std::string_view query = target.substr(q + 1);
  query = query.substr(0, query.find('#'));
  size_t at = 0;
  while (true) {
    // The pair's name ends at '=' or '&'; only '%' or '+' need decoding.
    size_t end = at;
    bool escaped = false;
    for (; end < query.size() && query[end] != '=' && query[end] != '&';
         ++end) {
      escaped |= query[end] == '%' || query[end] == '+';
    }
    const std::string_view raw = query.substr(at, end - at);
    const size_t next = query.find('&', end);
    if (escaped ? NameDecodesTo(raw, name) : raw == name) {
      raw_value = end < query.size() && query[end] == '='
                      ? query.substr(end + 1, next == std::string_view::npos
                                                  ? std::string_view::npos
                                                  : next - end - 1)
                      : std::string_view();
      return true;
    }
    if (next == std::string_view::npos) return false;
    at = next + 1;
  }
}

}  // namespace

bool internal::QueryParameter(std::string_view target, std::string_view name,
                              std::span<char> buffer, std::string_view& value,
                              bool& found) {
  std::string_view raw;
  found = FindPair(target, name, raw);
  if (!found) return true;
  value = raw;  // what a caller gets when the value cannot be decoded
  size_t n = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (n == buffer.size()) return false;
    char c = raw[i];
    if (c == '%') {
      if (i + 2 >= raw.size()) return false;
      const int hi = internal::HexDigitValue(raw[i + 1]);
      const int lo = internal::HexDigitValue(raw[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<char>(hi << 4 | lo);
      i += 2;
    } else if (c == '+') {
      c = ' ';
    }
    buffer[n++] = c;
  }
  value = std::string_view(buffer.data(), n);
  return true;  // the first occurrence counts, as in Synapse
}

namespace {

#if defined(__SSE2__)
// The (up to) 16 bytes of `query` from `at`, for byte masks.
class Block {
 public:
  Block(std::string_view query, size_t at) {
    const size_t n = query.size() - at;
    if (n >= 16) {
      bytes_ = Load(query.data() + at);
    } else if (query.size() >= 16) {
      // The query's last 16 bytes; the masks drop those before `at`.
      bytes_ = Load(query.data() + query.size() - 16);
      shift_ = static_cast<unsigned>(16 - n);
    } else {
      // A short query, zero padded (never read past its end).
      alignas(16) char tail[16] = {};
      for (size_t i = 0; i < n; ++i) tail[i] = query[at + i];
      bytes_ = Load(tail);
      valid_ = (1u << n) - 1u;
    }
  }
  // Bit i set where byte at + i is `c`.
  uint32_t Mask(char c) const {
    const auto bits = static_cast<uint32_t>(
        _mm_movemask_epi8(_mm_cmpeq_epi8(bytes_, _mm_set1_epi8(c))));
    return (bits >> shift_) & valid_;
  }

 private:
  static __m128i Load(const char* p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  }

  __m128i bytes_;
  unsigned shift_ = 0;
  uint32_t valid_ = 0xFFFF;
};

// QueryHasParameter for a query (after its '?'), 16 bytes a step, with no
// call per pair: 1 found, 0 not found, -1 when decoding could change the
// answer (an escape before the fragment). A pair whose name is
// `name` byte for byte is a match whatever follows it.
// REQUIRES: IsPlainQueryName(name), `name` not empty.
int FindPlainName(std::string_view query, std::string_view name) {
  auto matches_at = [&](size_t p) {
    const size_t stop = p + name.size();
    return stop <= query.size() && query[p] == name[0] &&
           query.substr(p, name.size()) == name &&
           (stop == query.size() || query[stop] == '=' || query[stop] == '&' ||
            query[stop] == '#');
  };
  if (matches_at(0)) return 1;
  bool escaped = false;
  for (size_t at = 0; at < query.size(); at += 16) {
    const Block block(query, at);
    // Only what comes before the first '#' is the query.
    const uint32_t hash = block.Mask('#');
    const uint32_t before = hash != 0 ? (hash & (0u - hash)) - 1u : ~0u;
    escaped = escaped || ((block.Mask('%') | block.Mask('+')) & before) != 0;
    for (uint32_t amp = block.Mask('&') & before; amp != 0; amp &= amp - 1) {
      if (matches_at(at + static_cast<size_t>(std::countr_zero(amp)) + 1)) {
        return 1;
      }
    }
    if (hash != 0) break;
  }
  return escaped ? -1 : 0;
}
#endif

}  // namespace

bool internal::IsPlainQueryName(std::string_view name) {
  for (const char c : name) {
    if (c == '%' || c == '+' || c == '#') return false;
  }
  return true;
}

bool internal::QueryHasParameter(std::string_view target,
                                 std::string_view name) {
  return QueryHasParameter(target, name, IsPlainQueryName(name));
}

bool internal::QueryHasParameter(std::string_view target, std::string_view name,
                                 bool plain_name) {
#if defined(__SSE2__)
  // The usual query has nothing to decode: found without a call per pair.
  if (plain_name && !name.empty()) {
    // A query alone (as PolicySet::Resolve passes it) needs no search.
    const size_t q =
        !target.empty() && target.front() == '?' ? 0 : target.find('?');
    if (q == std::string_view::npos) return false;
    // A '#' before the '?' starts a fragment: there is no query.
    if (q > 0 && target.substr(0, q).find('#') != std::string_view::npos) {
      return false;
    }
    const int found = FindPlainName(target.substr(q + 1), name);
    if (found >= 0) return found == 1;
  }
#else
  (void)plain_name;
#endif
  std::string_view raw_value;
  return FindPair(target, name, raw_value);
}

std::string_view AppserviceUserId(std::string_view target,
                                  std::span<char> buffer) {
  std::string_view value;
  bool found = false;
  internal::QueryParameter(target, "user_id", buffer, value, found);
  return value;
}

}  // namespace mxlimit
