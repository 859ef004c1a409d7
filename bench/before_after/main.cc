// The two trees' checks (driver.cc, compiled once per tree), registered side
// by side; run with --benchmark_enable_random_interleaving=true
// (bench/before_after/run does) so their repetitions alternate in one
// process.
#include <benchmark/benchmark.h>

void BM_Before_Check(benchmark::State& state);
void BM_After_Check(benchmark::State& state);

BENCHMARK(BM_Before_Check)->Arg(1'000)->Arg(1'000'000)->ArgName("keys");
BENCHMARK(BM_After_Check)->Arg(1'000)->Arg(1'000'000)->ArgName("keys");

BENCHMARK_MAIN();
