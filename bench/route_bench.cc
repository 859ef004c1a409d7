// RouteNormalizer throughput on a realistic homeserver request mix and on
// hostile targets, against a std::regex-per-template baseline and a plain
// one-pass scan of the same bytes.
//
// Every iteration normalizes one target, cycling through a fixed, seeded set,
// so items/s is paths per second and `time_per_path` is its inverse.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>
#include <random>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "mxlimit/route.h"
#include "src/route/route_table_builder.h"
#include "src/route/route_trie.h"
#include "tests/testing/extra_routes.h"

namespace mxlimit {
namespace {

std::string RandomHex(std::mt19937_64& rng, size_t length) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < length; ++i) s.push_back(kHex[rng() % 16]);
  return s;
}

// Client and federation traffic as a busy homeserver sees it: sync-heavy,
// then sends, receipts, keys, media, state and federation transactions.
std::vector<std::string> MixTargets() {
  std::mt19937_64 rng(7);
  auto room = [&] { return "%21" + RandomHex(rng, 18) + "%3Aexample.org"; };
  auto event = [&] { return "%24" + RandomHex(rng, 43); };
  auto user = [&] { return "%40u" + RandomHex(rng, 6) + "%3Aexample.org"; };
  struct Kind {
    int weight;
    std::function<std::string()> make;
  };
  const std::vector<Kind> kinds = {
      {30,
       [&] {
         return "/_matrix/client/v3/sync?since=s" + RandomHex(rng, 12) +
                "&timeout=30000&filter=0";
       }},
      {4,
       [&] { return "/_matrix/client/r0/sync?since=s" + RandomHex(rng, 12); }},
      {3,
       [&] {
         return std::string(
             "/_matrix/client/unstable/org.matrix.simplified_msc3575/"
             "sync?pos=1");
       }},
      {10,
       [&] {
         return "/_matrix/client/v3/rooms/" + room() +
                "/send/m.room.message/m" + RandomHex(rng, 10);
       }},
      {5,
       [&] {
         return "/_matrix/client/v3/rooms/" + room() + "/receipt/m.read/" +
                event();
       }},
      {3,
       [&] { return "/_matrix/client/v3/rooms/" + room() + "/read_markers"; }},
      {3,
       [&] {
         return "/_matrix/client/v3/rooms/" + room() + "/typing/" + user();
       }},
      {3,
       [&] {
         return "/_matrix/client/v3/rooms/" + room() +
                "/messages?dir=b&limit=20";
       }},
      {3,
       [&] {
         return "/_matrix/client/v3/rooms/" + room() + "/state/m.room.member/" +
                user();
       }},
      {1, [&] { return "/_matrix/client/v3/rooms/" + room() + "/state"; }},
      {3, [&] { return std::string("/_matrix/client/v3/keys/query"); }},
      {2, [&] { return std::string("/_matrix/client/v3/keys/upload"); }},
      {1, [&] { return std::string("/_matrix/client/v3/keys/claim"); }},
      {2,
       [&] {
         return "/_matrix/client/v3/sendToDevice/m.room.encrypted/" +
                RandomHex(rng, 12);
       }},
      {5,
       [&] {
         return "/_matrix/client/v1/media/thumbnail/example.org/" +
                RandomHex(rng, 24) + "?width=96&height=96&method=crop";
       }},
      {3,
       [&] {
         return "/_matrix/client/v1/media/download/example.org/" +
                RandomHex(rng, 24);
       }},
      {2,
       [&] {
         return "/_matrix/media/v3/download/matrix.org/" + RandomHex(rng, 24) +
                "/image.png";
       }},
      {1,
       [&] { return std::string("/_matrix/media/v3/upload?filename=a.png"); }},
      {6, [&] { return "/_matrix/federation/v1/send/" + RandomHex(rng, 13); }},
      {2, [&] { return "/_matrix/federation/v1/event/" + event(); }},
      {1,
       [&] {
         return "/_matrix/federation/v1/state_ids/" + room() +
                "?event_id=" + event();
       }},
      {1,
       [&] {
         return "/_matrix/federation/v1/make_join/" + room() + "/" + user() +
                "?ver=10";
       }},
      {1,
       [&] {
         return "/_matrix/federation/v1/query/profile?user_id=" + user();
       }},
      {1, [&] { return "/_matrix/federation/v1/user/devices/" + user(); }},
      {1, [&] { return std::string("/_matrix/key/v2/server"); }},
      {1,
       [&] { return "/_matrix/client/v3/profile/" + user() + "/displayname"; }},
      {1,
       [&] {
         return "/_matrix/client/v3/pushrules/global/override/" +
                RandomHex(rng, 8) + "/enabled";
       }},
      {1, [&] { return std::string("/_matrix/client/versions"); }},
      {1, [&] { return std::string("/_matrix/client/v3/capabilities"); }},
      {1, [&] { return "/robots" + RandomHex(rng, 4) + ".txt"; }},
  };
  int total = 0;
  for (const Kind& k : kinds) total += k.weight;
  std::vector<std::string> targets;
  for (int i = 0; i < 4096; ++i) {
    int pick = static_cast<int>(rng() % total);
    for (const Kind& k : kinds) {
      if ((pick -= k.weight) < 0) {
        targets.push_back(k.make());
        break;
      }
    }
  }
  return targets;
}

// What a scanner or an abusive client sends: encoded and raw delimiters,
// dot segments, doubled slashes, controls, unknown suffixes, random bytes,
// long identifiers and a few 64 KiB paths.
std::vector<std::string> HostileTargets() {
  std::mt19937_64 rng(11);
  std::vector<std::string> targets;
  for (int i = 0; i < 1024; ++i) {
    std::string id = "%21" + RandomHex(rng, 10) + "%2F..%2F%3F%23%25";
    switch (i % 12) {
      case 0:
        targets.push_back("/_matrix/client/v3/rooms/" + id +
                          "/send/m.room.message/" + id);
        break;
      case 1:
        targets.push_back("/_matrix/client/v3/rooms/!a/b:c/send/m/" + id);
        break;
      case 2:
        targets.push_back("/_matrix/client/v3/../v3/./sync");
        break;
      case 3:
        targets.push_back("//_matrix//client/v3//rooms//" + id);
        break;
      case 4:
        targets.push_back("/_matrix/client/v3/rooms/" + id + "/state/m.x/");
        break;
      case 5:
        targets.push_back("/_matrix/client/v3/presence/" + id + "/status/" +
                          RandomHex(rng, 30));
        break;
      case 6: {
        std::string t = "/_matrix/client/v3/sync";
        t[10] = '\0';
        targets.push_back(t);
        break;
      }
      case 7: {
        std::string t = "/";
        for (int j = 0; j < 60; ++j)
          t.push_back(static_cast<char>(rng() % 256));
        targets.push_back(t);
        break;
      }
      case 8:
        targets.push_back("/_matrix/client/v3/rooms/" + std::string(2000, 'x') +
                          "/messages");
        break;
      case 9:
        targets.push_back("/_matrix/client/v3/rooms/caf\xC3\xA9+%zz%4/event/" +
                          id);
        break;
      case 10:
        targets.push_back("/wp-admin/" + RandomHex(rng, 8) + "/" +
                          RandomHex(rng, 8) + "/x.php?" + id);
        break;
      default:
        if (i % 96 == 11) {
          targets.push_back("/_matrix/client/v3/rooms/" +
                            std::string(64 * 1024, 'a') + "/messages");
        } else {
          std::string t;
          for (int j = 0; j < 40; ++j) t += "/a";
          targets.push_back(t);
        }
        break;
    }
  }
  return targets;
}

size_t TotalBytes(const std::vector<std::string>& targets) {
  size_t bytes = 0;
  for (const std::string& t : targets) bytes += t.size();
  return bytes;
}

// Items, bytes and ns/path for a run that cycled through `targets`.
void Report(benchmark::State& state, const std::vector<std::string>& targets) {
  const double per_path = static_cast<double>(TotalBytes(targets)) /
                          static_cast<double>(targets.size());
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(
      static_cast<int64_t>(per_path * static_cast<double>(state.iterations())));
  // Seconds per path, printed with an SI prefix (e.g. "95n" = 95 ns/path).
  state.counters["time_per_path"] = benchmark::Counter(
      static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["bytes_per_path"] = per_path;
}

void RunNormalize(benchmark::State& state,
                  const std::vector<std::string>& targets,
                  const RouteNormalizer& normalizer = RouteNormalizer()) {
  size_t i = 0;
  for (auto _ : state) {
    Route r = normalizer.Normalize("GET", targets[i]);
    benchmark::DoNotOptimize(r);
    if (++i == targets.size()) i = 0;
  }
  Report(state, targets);
}

void BM_Normalize_Mix(benchmark::State& state) {
  static const auto* targets = new std::vector<std::string>(MixTargets());
  RunNormalize(state, *targets);
}
BENCHMARK(BM_Normalize_Mix);

// The same mix on a table with `extra` operator templates of mixed shapes
// (tests/testing/extra_routes.h: five prefixes, 4 to 10 segments,
// placeholders anywhere after the prefix, every tenth an alias), and one
// target in ten replaced by a request for one of those templates, round
// robin. The default-pack targets walk a trie that now also holds the
// extras' nodes; the extra targets walk the new branches.
void NormalizeMixWithExtra(benchmark::State& state, size_t extra) {
  RouteOptions routes;
  routes.extra = testing::GenerateExtraRoutes(extra);
  const RouteNormalizer normalizer(routes);
  std::vector<std::string> targets = MixTargets();
  for (size_t i = 9, e = 0; i < targets.size(); i += 10, ++e) {
    targets[i] =
        testing::TargetFor(routes.extra[(e * 7) % extra].route_template);
    if (!normalizer.Normalize("GET", targets[i]).known) {
      state.SkipWithError(("extra target unknown: " + targets[i]).c_str());
      return;
    }
  }
  RunNormalize(state, targets, normalizer);
  state.counters["routes"] = static_cast<double>(normalizer.size());
}
const auto* const kMixExtra1000 = benchmark::RegisterBenchmark(
    "BM_Normalize_Mix/extra:1000",
    [](benchmark::State& state) { NormalizeMixWithExtra(state, 1000); });

void BM_Normalize_Hostile(benchmark::State& state) {
  static const auto* targets = new std::vector<std::string>(HostileTargets());
  RunNormalize(state, *targets);
}
BENCHMARK(BM_Normalize_Hostile);

// The floor: one branchy pass over the same path bytes (stop at '?', count
// '/'), which any matcher has to do at least once.
void BM_OnePass_Mix(benchmark::State& state) {
  static const auto* targets = new std::vector<std::string>(MixTargets());
  size_t i = 0;
  for (auto _ : state) {
    const std::string& t = (*targets)[i];
    size_t slashes = 0;
    for (char c : t) {
      if (c == '?' || c == '#') break;
      slashes += c == '/';
    }
    benchmark::DoNotOptimize(slashes);
    if (++i == targets->size()) i = 0;
  }
  Report(state, *targets);
}
BENCHMARK(BM_OnePass_Mix);

// The naive design: one std::regex per expanded template, tried in order of
// literal-first precedence, first match wins.
class RegexRouter {
 public:
  RegexRouter() {
    const internal::RouteTableSpec& table =
        internal::DefaultRouteTable().spec();
    auto expanded = internal::ExpandRouteTable(table);
    if (!expanded.ok()) return;
    struct Entry {
      std::string kinds;  // 'L' or 'P' per segment, for precedence
      std::string regex;
      RouteId id;
    };
    std::vector<Entry> entries;
    for (const internal::ExpandedPattern& p : *expanded) {
      Entry e{"", "", p.id};
      std::string_view text = p.pattern;
      for (size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '/') {
          e.regex += '/';
          e.kinds += (i + 1 < text.size() && text[i + 1] == '{') ? 'P' : 'L';
        } else if (c == '{') {
          size_t close = text.find('}', i);
          std::string_view name = text.substr(i + 1, close - i - 1);
          bool empty_ok =
              std::find(table.may_be_empty.begin(), table.may_be_empty.end(),
                        name) != table.may_be_empty.end();
          e.regex += empty_ok ? "[^/]*" : "[^/]+";
          i = close;
        } else {
          if (std::string_view(".^$|()[]{}*+?\\").find(c) !=
              std::string_view::npos) {
            e.regex += '\\';
          }
          e.regex += c;
        }
      }
      entries.push_back(std::move(e));
    }
    // 'L' > 'P' at the first difference: literal templates first.
    std::stable_sort(entries.begin(), entries.end(),
                     [](const Entry& a, const Entry& b) {
                       for (size_t i = 0;
                            i < std::min(a.kinds.size(), b.kinds.size()); ++i) {
                         if (a.kinds[i] != b.kinds[i]) return a.kinds[i] == 'L';
                       }
                       return false;
                     });
    for (const Entry& e : entries) {
      routes_.push_back(
          {std::regex(e.regex, std::regex::ECMAScript | std::regex::optimize),
           e.id});
    }
  }

  RouteId Match(std::string_view target) const {
    std::string_view path = QueryFreePath(target);
    for (const auto& [regex, id] : routes_) {
      if (std::regex_match(path.begin(), path.end(), regex)) return id;
    }
    return kFallbackRouteId;
  }

  size_t size() const { return routes_.size(); }

 private:
  std::vector<std::pair<std::regex, RouteId>> routes_;
};

void BM_NormalizeRegex_Mix(benchmark::State& state) {
  static const auto* targets = new std::vector<std::string>(MixTargets());
  static const auto* router = new RegexRouter();
  const RouteNormalizer normalizer;
  // The baseline must give the same answers, or the ratio means nothing.
  for (const std::string& t : *targets) {
    if (router->Match(t) != normalizer.Normalize("GET", t).id) {
      state.SkipWithError(("regex baseline disagrees on " + t).c_str());
      return;
    }
  }
  size_t i = 0;
  for (auto _ : state) {
    RouteId id = router->Match((*targets)[i]);
    benchmark::DoNotOptimize(id);
    if (++i == targets->size()) i = 0;
  }
  Report(state, *targets);
  state.counters["regexes"] = static_cast<double>(router->size());
}
BENCHMARK(BM_NormalizeRegex_Mix);

// Construction: the cost of one RouteNormalizer per Limiter.
void BM_RouteNormalizer_Build(benchmark::State& state) {
  size_t nodes = 0;
  for (auto _ : state) {
    auto trie =
        internal::RouteTrie::Build(internal::DefaultRouteTable().spec());
    nodes = trie->node_count();
    benchmark::DoNotOptimize(trie);
  }
  state.counters["trie_nodes"] = static_cast<double>(nodes);
}
BENCHMARK(BM_RouteNormalizer_Build)->Unit(benchmark::kMicrosecond);

// Start-up: merging the packs (and `extra` operator templates, with every
// check on them) into one table and building its trie, as RouteNormalizer
// (const RouteOptions&) does. Arg 0 is the default packs alone.
void BM_RouteTable_Build(benchmark::State& state) {
  RouteOptions routes;
  routes.extra =
      testing::GenerateExtraRoutes(static_cast<size_t>(state.range(0)));
  size_t nodes = 0;
  size_t keys = 0;
  for (auto _ : state) {
    auto table = internal::MergeRouteTable(routes);
    if (!table.ok()) {
      state.SkipWithError(std::string(table.status().message()).c_str());
      return;
    }
    nodes = (*table)->trie().node_count();
    keys = (*table)->trie().keys().size();
    benchmark::DoNotOptimize(table);
  }
  state.counters["trie_nodes"] = static_cast<double>(nodes);
  state.counters["routes"] = static_cast<double>(keys);
}
BENCHMARK(BM_RouteTable_Build)
    ->ArgName("extra")
    ->Arg(0)
    ->Arg(4096)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace mxlimit
