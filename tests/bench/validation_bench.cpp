// Validation of a 50-line program through the embedded interpreter (target p50 <= 300 us).
// Run: ./build/tests/codeact_bench --benchmark_filter=Validate --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <cstring>

#include "codeact/validator.hpp"
#include "bench/programs.hpp"

namespace {

void BM_ValidateFiftyLines(benchmark::State& state) {
  auto validator = codeact::Validator::Embedded();
  if (!validator.ok()) {
    state.SkipWithError(validator.status().ToString().c_str());
    return;
  }
  const codeact::ValidationPolicy policy;
  for (auto _ : state) {
    auto report = (*validator)->Validate(codeact::bench::kFiftyLineProgram, policy);
    if (!report.ok) state.SkipWithError("the benchmark program was rejected");
    benchmark::DoNotOptimize(report);
  }
}
BENCHMARK(BM_ValidateFiftyLines)->Unit(benchmark::kMicrosecond);

}  // namespace

namespace {

// The fixed cost of one call through the embedding (GIL, policy and report conversion).
void BM_ValidateOneLine(benchmark::State& state) {
  auto validator = codeact::Validator::Embedded();
  if (!validator.ok()) {
    state.SkipWithError(validator.status().ToString().c_str());
    return;
  }
  const codeact::ValidationPolicy policy;
  for (auto _ : state) benchmark::DoNotOptimize((*validator)->Validate("x = 1\n", policy));
}
BENCHMARK(BM_ValidateOneLine)->Unit(benchmark::kMicrosecond);

}  // namespace
