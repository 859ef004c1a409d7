// Deterministic extra route templates of mixed shapes, for the tests and
// benches of `routes.extra` (bench/route_bench.cc, tests/route/).
//
// Entry i lies under one of five prefixes (client v3, whose version
// spellings the prefix aliases add; client unstable; federation; a server's
// own admin API; /_synapse/client), then a segment unique to it ("e<i>"),
// then 0 to 5 more segments, each a placeholder or a literal by the bits of
// a hash of i: 4 to 10 segments in all. Every tenth entry is instead an
// alias (`alias_of`) of the entry before it, spelled with "e<i-1>.v2".

#ifndef MXLIMIT_TESTS_TESTING_EXTRA_ROUTES_H_
#define MXLIMIT_TESTS_TESTING_EXTRA_ROUTES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "mxlimit/route_options.h"

namespace mxlimit::testing {

inline std::vector<ExtraRoute> GenerateExtraRoutes(size_t count) {
  static constexpr const char* kNames[] = {"roomId", "eventId", "userId",
                                           "thingId"};
  std::vector<ExtraRoute> routes;
  routes.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (i % 10 == 9) {
      const ExtraRoute& previous = routes.back();
      const std::string own = absl::StrCat("/e", i - 1, "/");
      std::string text =
          absl::StrReplaceAll(absl::StrCat(previous.route_template, "/"),
                              {{own, absl::StrCat("/e", i - 1, ".v2/")}});
      text.pop_back();
      routes.push_back({text, previous.route_template});
      continue;
    }
    std::string text;
    switch (i % 5) {
      case 0:
        text = absl::StrCat("/_matrix/client/v3/org.example.ext", i % 37);
        break;
      case 1:
        text = absl::StrCat("/_matrix/client/unstable/org.example.msc",
                            9000 + i % 101);
        break;
      case 2:
        text = absl::StrCat("/_matrix/federation/v1/org.example.f", i % 23);
        break;
      case 3:
        text = absl::StrCat("/_example/admin/v", i % 5);
        break;
      default:
        text = absl::StrCat("/_synapse/client/org.example.s", i % 11);
        break;
    }
    absl::StrAppend(&text, "/e", i);
    const uint64_t h = (i + 1) * 0x9E3779B97F4A7C15ULL;
    const size_t more = (i / 5) % 6;
    for (size_t j = 0; j < more; ++j) {
      if ((h >> (j + 7)) & 1) {
        absl::StrAppend(&text, "/{", kNames[(h >> (2 * j + 20)) % 4], j, "}");
      } else {
        absl::StrAppend(&text, "/s", j);
      }
    }
    routes.push_back({text, ""});
  }
  return routes;
}

// A request target for `route_template`: each placeholder filled with a
// plausible identifier.
inline std::string TargetFor(std::string_view route_template) {
  std::string target;
  size_t i = 0;
  while (i < route_template.size()) {
    if (route_template[i] == '{') {
      const size_t close = route_template.find('}', i);
      target.append("!Abc123:example.org");
      i = close + 1;
    } else {
      target.push_back(route_template[i++]);
    }
  }
  return target;
}

}  // namespace mxlimit::testing

#endif  // MXLIMIT_TESTS_TESTING_EXTRA_ROUTES_H_
