// Client address handling on the request path: parsing the address text the
// homeserver hands over, masking it to its bucket prefix, and checking it
// against the exempt networks. glibc's inet_pton is the baseline.

#include <arpa/inet.h>

#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "mxlimit/ip.h"

namespace mxlimit {
namespace {

const char* const kV4 = "203.0.113.195";
const char* const kV6 = "2001:db8:85a3:8d3:1319:8a2e:370:7348";

void BM_Ip_ParseV4(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(ParseIpAddress(kV4));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ip_ParseV4);

void BM_Ip_InetPtonV4Baseline(benchmark::State& state) {
  unsigned char out[4];
  for (auto _ : state) {
    benchmark::DoNotOptimize(inet_pton(AF_INET, kV4, out));
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ip_InetPtonV4Baseline);

void BM_Ip_ParseV6(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(ParseIpAddress(kV6));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ip_ParseV6);

void BM_Ip_InetPtonV6Baseline(benchmark::State& state) {
  unsigned char out[16];
  for (auto _ : state) {
    benchmark::DoNotOptimize(inet_pton(AF_INET6, kV6, out));
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ip_InetPtonV6Baseline);

void BM_Ip_Mask(benchmark::State& state) {
  IpAddress ip = *ParseIpAddress(kV6);
  for (auto _ : state) {
    benchmark::DoNotOptimize(ip);
    benchmark::DoNotOptimize(MaskAddress(ip, 32, 64));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ip_Mask);

// An exempt list of `networks` entries, none of which holds the client:
// the per-request worst case.
void BM_Ip_ExemptListMiss(benchmark::State& state) {
  std::vector<Cidr> exempt;
  for (int i = 0; i < state.range(0); ++i) {
    exempt.push_back(*ParseCidr("10." + std::to_string(i % 256) + ".0.0/16"));
  }
  IpAddress ip = *ParseIpAddress(kV4);
  for (auto _ : state) {
    bool hit = false;
    for (const Cidr& net : exempt) hit |= net.Contains(ip);
    benchmark::DoNotOptimize(hit);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Ip_ExemptListMiss)->Arg(1)->Arg(8)->Arg(64)->ArgName("networks");

}  // namespace
}  // namespace mxlimit
