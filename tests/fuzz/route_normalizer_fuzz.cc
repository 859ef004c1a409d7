// Fuzz target: the route normalizer (mxlimit/route.h).
//
// Input, first byte even: METHOD '\n' TARGET, both raw bytes. Invariants:
//   * the route is (id, keys()[id], id != 0) with id < size(), and its key
//     points into the normalizer's own key table, so no request byte can end
//     up in a key;
//   * the method and anything after '?' or '#' do not change the route;
//   * the trie agrees with the naive reference matcher over the expanded
//     table (tests/testing/route_test_support.h);
//   * a query-free path holding a control byte, space or DEL is the fallback.
//
// The table is the default packs plus 64 generated extra templates.
//
// Input, first byte odd: a known request shape (an expanded pattern of the
// table, chosen by the next two bytes) whose placeholders are filled
// with fuzzer-chosen bytes. When every value is a plausible identifier (no
// '/', '?', '#', not empty unless the placeholder may be, not a literal
// segment of any pattern), the key must be exactly that pattern's key; a value
// that is "." or ".." or holds a control byte must give the fallback.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "mxlimit/internal/absl_compat.h"
#include "mxlimit/route.h"
#include "src/route/route_table_builder.h"
#include "src/route/route_trie.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/testing/extra_routes.h"
#include "tests/testing/route_test_support.h"

namespace mxlimit::fuzz {
namespace {

// The default packs plus 64 extra templates of mixed shapes (with aliases,
// tests/testing/extra_routes.h), so that every input also runs against
// operator templates: the same matcher rules must hold for them.
RouteOptions FuzzRouteOptions() {
  RouteOptions routes;
  routes.extra = testing::GenerateExtraRoutes(64);
  return routes;
}

struct Table {
  std::unique_ptr<const internal::MergedRouteTable> merged =
      *internal::MergeRouteTable(FuzzRouteOptions());
  RouteNormalizer normalizer{FuzzRouteOptions()};
  testing::ReferenceMatcher reference{merged->spec()};
  std::vector<internal::ExpandedPattern> patterns;
  absl::flat_hash_set<std::string> literal_segments;
  absl::flat_hash_set<std::string> may_be_empty;

  Table() {
    const internal::RouteTableSpec& spec = merged->spec();
    absl::StatusOr<std::vector<internal::ExpandedPattern>> expanded =
        internal::ExpandRouteTable(spec);
    MXLIMIT_FUZZ_CHECK(expanded.ok());
    patterns = *std::move(expanded);
    for (const internal::ExpandedPattern& p : patterns) {
      for (std::string_view segment : SplitPath(p.pattern)) {
        if (!IsPlaceholder(segment)) literal_segments.emplace(segment);
      }
    }
    for (std::string_view name : spec.may_be_empty) {
      may_be_empty.emplace(name);
    }
  }

  static bool IsPlaceholder(std::string_view segment) {
    return !segment.empty() && segment.front() == '{';
  }

  // "/a/{b}/c" -> {"a", "{b}", "c"}.
  static std::vector<std::string_view> SplitPath(std::string_view path) {
    std::vector<std::string_view> out;
    size_t start = 1;
    while (true) {
      size_t end = path.find('/', start);
      out.push_back(path.substr(start, end == std::string_view::npos
                                           ? std::string_view::npos
                                           : end - start));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
    return out;
  }
};

const Table& GetTable() {
  static const Table* table = new Table;
  return *table;
}

bool HasForbiddenByte(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7F) return true;
  }
  return false;
}

void CheckWellFormed(const Table& t, const Route& r) {
  const RouteNormalizer& n = t.normalizer;
  MXLIMIT_FUZZ_CHECK(r.id < n.size());
  MXLIMIT_FUZZ_CHECK(r.known == (r.id != kFallbackRouteId));
  // Same storage, not merely equal text: the key is the table's own string.
  MXLIMIT_FUZZ_CHECK(r.key.data() == n.keys()[r.id].data());
  MXLIMIT_FUZZ_CHECK(r.key.size() == n.keys()[r.id].size());
  MXLIMIT_FUZZ_CHECK(r.key == n.key(r.id));
}

void CheckTarget(const Table& t, std::string_view method,
                 std::string_view target) {
  const RouteNormalizer& n = t.normalizer;
  const Route r = n.Normalize(method, target);
  CheckWellFormed(t, r);
  MXLIMIT_FUZZ_CHECK(n.Normalize("GET", target).id == r.id);
  MXLIMIT_FUZZ_CHECK(n.Normalize("PUT", target).id == r.id);
  const std::string_view path = QueryFreePath(target);
  MXLIMIT_FUZZ_CHECK(n.Normalize(method, path).id == r.id);
  if (HasForbiddenByte(path)) MXLIMIT_FUZZ_CHECK(r.id == kFallbackRouteId);
  MXLIMIT_FUZZ_CHECK(t.reference.Match(target) == r.id);
}

void RunTemplate(const Table& t, FuzzInput& in) {
  const internal::ExpandedPattern& pattern =
      t.patterns[in.Int<uint16_t>() % t.patterns.size()];
  std::string target;
  bool plausible = true;  // Every value is an ordinary identifier.
  bool must_fall_back = false;
  for (std::string_view segment : Table::SplitPath(pattern.pattern)) {
    target.push_back('/');
    if (!Table::IsPlaceholder(segment)) {
      target.append(segment);
      continue;
    }
    const std::string_view value = in.ShortString(80);
    target.append(value);
    const std::string_view name = segment.substr(1, segment.size() - 2);
    if (value.find_first_of("/?#") != std::string_view::npos) {
      plausible = false;  // Changes the segment structure or the path's end.
    } else if (HasForbiddenByte(value) || value == "." || value == "..") {
      must_fall_back = true;
    } else if (value.empty()
                   ? !t.may_be_empty.contains(internal::ToAbsl(name))
                   : t.literal_segments.contains(internal::ToAbsl(value))) {
      plausible = false;  // Another pattern's literal (or empty) may win.
    }
  }
  if (in.Byte() & 1) {
    target.push_back((in.Byte() & 1) ? '?' : '#');
    target.append(in.Rest());
  }
  CheckTarget(t, "GET", target);
  const Route r = t.normalizer.Normalize("GET", target);
  if (!plausible) return;
  if (must_fall_back) {
    MXLIMIT_FUZZ_CHECK(r.id == kFallbackRouteId);
  } else {
    MXLIMIT_FUZZ_CHECK(r.id == pattern.id);
    MXLIMIT_FUZZ_CHECK(r.key == t.normalizer.key(pattern.id));
  }
}

}  // namespace
}  // namespace mxlimit::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mxlimit::fuzz;
  const Table& table = GetTable();
  FuzzInput in(data, size);
  if (in.Byte() & 1) {
    RunTemplate(table, in);
  } else {
    std::string_view method = in.Until('\n');
    CheckTarget(table, method, in.Rest());
  }
  return 0;
}
