// Parsing cost per log line, per format, over realistic line mixes; and the
// whole read-and-parse path for tsv (the replay's 500k lines/s target).

#include <cstdio>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "src/replay/line_reader.h"
#include "src/replay/log_parsers.h"
#include "src/replay/top_k.h"

namespace mxlimit::replay {
namespace {

const char* const kTargets[] = {
    "/_matrix/client/v3/sync?filter=0&timeout=30000&since=s123_456_0_7_8_9_1_2",
    "/_matrix/client/v3/rooms/!aBcDeFgHiJkLmNoP%3Aexample.org/send/"
    "m.room.message/m1764496800123.4",
    "/_matrix/client/v3/keys/query",
    "/_matrix/client/v1/media/thumbnail/example.org/AbCdEfGh?width=96&height="
    "96&method=crop",
    "/_matrix/federation/v1/send/1764496800123",
    "/_matrix/client/r0/rooms/!xyz%3Aexample.org/receipt/m.read/"
    "%24AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefg",
};
const char* const kMethods[] = {"GET", "PUT", "POST", "GET", "PUT", "POST"};
const char* const kIps[] = {"203.0.113.9", "2001:db8:1:2::17", "198.51.100.4",
                            "192.0.2.33",  "2001:db8:aa::1",   "203.0.113.200"};
const char* const kUsers[] = {"@alice:example.org",
                              "@bob:example.org",
                              "-",
                              "@carol.long-name:example.org",
                              "-",
                              "@dave:example.org"};

std::vector<std::string> TsvLines() {
  std::vector<std::string> out;
  for (int i = 0; i < 6; ++i) {
    out.push_back(std::to_string(1764496800000 + i * 37) + "\t" + kMethods[i] +
                  "\t" + kTargets[i] + "\t" + kIps[i] + "\t" + kUsers[i]);
  }
  return out;
}

std::vector<std::string> SynapseLines() {
  std::vector<std::string> out;
  for (int i = 0; i < 6; ++i) {
    std::string user = kUsers[i];
    std::string requester =
        user == "-" ? (i == 4 ? "remote.example.net" : "None") : user;
    out.push_back("2026-11-30 10:00:0" + std::to_string(i) +
                  ",250 - synapse.access.http.8008 - 473 - INFO - " +
                  kMethods[i] + "-10" + std::to_string(i) + " - " + kIps[i] +
                  " - 8008 - {" + requester +
                  "} Processed request: 0.250sec/0.000sec (0.010sec, "
                  "0.000sec) (0.001sec/0.004sec/2) 62B 200 \"" +
                  kMethods[i] + " " + kTargets[i] +
                  " HTTP/1.1\" \"Mozilla/5.0 (X11; Linux x86_64) "
                  "Element/1.11.80\" [0 dbevts]");
  }
  return out;
}

std::vector<std::string> NginxLines() {
  std::vector<std::string> out;
  for (int i = 0; i < 6; ++i) {
    out.push_back(std::string(kIps[i]) + " - - [30/Nov/2026:10:00:0" +
                  std::to_string(i) + " +0100] \"" + kMethods[i] + " " +
                  kTargets[i] +
                  " HTTP/1.1\" 200 512 \"-\" \"Mozilla/5.0 "
                  "(X11; Linux x86_64) Element/1.11.80\"");
  }
  return out;
}

void RunParser(benchmark::State& state, const std::vector<std::string>& lines,
               ParseResult (*parse)(std::string_view, LogRecord*)) {
  LogRecord r;
  size_t i = 0, bytes = 0;
  for (auto _ : state) {
    const std::string& line = lines[i];
    ParseResult res = parse(line, &r);
    if (res != ParseResult::kOk) state.SkipWithError("line did not parse");
    benchmark::DoNotOptimize(r);
    bytes += line.size();
    if (++i == lines.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(bytes);
}

void BM_ParseTsvLine(benchmark::State& state) {
  RunParser(state, TsvLines(), ParseTsvLine);
}
BENCHMARK(BM_ParseTsvLine);

void BM_ParseSynapseLine(benchmark::State& state) {
  RunParser(state, SynapseLines(), ParseSynapseLine);
}
BENCHMARK(BM_ParseSynapseLine);

void BM_ParseNginxLine(benchmark::State& state) {
  RunParser(state, NginxLines(), ParseNginxLine);
}
BENCHMARK(BM_ParseNginxLine);

// LineReader + ParseTsvLine over a 1M-line file, as replay reads it.
void BM_ReadAndParseTsv(benchmark::State& state) {
  std::FILE* f = std::tmpfile();
  std::vector<std::string> lines = TsvLines();
  constexpr int kLines = 1'000'000;
  for (int i = 0; i < kLines; ++i) {
    const std::string& l = lines[i % lines.size()];
    std::fwrite(l.data(), 1, l.size(), f);
    std::fputc('\n', f);
  }
  int64_t parsed = 0;
  for (auto _ : state) {
    std::rewind(f);
    LineReader reader(f);
    Line line;
    LogRecord r;
    while (reader.Next(&line)) {
      parsed += ParseTsvLine(line.text, &r) == ParseResult::kOk;
    }
  }
  std::fclose(f);
  if (parsed != kLines * state.iterations()) state.SkipWithError("bad parse");
  state.SetItemsProcessed(parsed);
}
BENCHMARK(BM_ReadAndParseTsv)->Unit(benchmark::kMillisecond);

// The per-line cost the top-routes sketch adds to replay.
void BM_TopK_Add(benchmark::State& state) {
  TopK top(static_cast<size_t>(state.range(0)));
  std::vector<std::string> items;
  for (int i = 0; i < 100000; ++i) {
    // Skewed: most lines hit a few hundred routes/clients.
    int k = (i % 10 < 8) ? i % 300 : i;
    items.push_back("/_matrix/client/v3/route/" + std::to_string(k));
  }
  size_t i = 0;
  for (auto _ : state) {
    top.Add(items[i]);
    if (++i == items.size()) i = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes"] = static_cast<double>(top.memory_bytes());
}
BENCHMARK(BM_TopK_Add)->Arg(64)->Arg(1024)->ArgName("counters");

}  // namespace
}  // namespace mxlimit::replay
