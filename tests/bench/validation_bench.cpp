// Validation through the embedded interpreter (target for the 50-line program: p50 <= 300 us).
// Run: ./build/tests/codeact_bench --benchmark_filter=Validate --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <string>

#include "bench/programs.hpp"
#include "codeact/validator.hpp"

namespace {

// Validates `code` in the benchmark loop; a rejection or a missing validator fails the run.
void ValidateLoop(benchmark::State& state, const std::string& code) {
  auto validator = codeact::Validator::Embedded();
  if (!validator.ok()) {
    state.SkipWithError(validator.status().ToString().c_str());
    return;
  }
  const codeact::ValidationPolicy policy;
  for (auto _ : state) {
    auto report = (*validator)->Validate(code, policy);
    if (!report.ok) state.SkipWithError("the benchmark program was rejected");
    benchmark::DoNotOptimize(report);
  }
}

void BM_ValidateFiftyLines(benchmark::State& state) {
  const auto program = codeact::bench::ReadProgram(codeact::bench::kFiftyLineProgram);
  if (!program.ok()) {
    state.SkipWithError(program.status().ToString().c_str());
    return;
  }
  ValidateLoop(state, *program);
}
BENCHMARK(BM_ValidateFiftyLines)->Unit(benchmark::kMicrosecond);

// The fixed cost of one call through the embedding (GIL, policy and report conversion).
void BM_ValidateOneLine(benchmark::State& state) { ValidateLoop(state, "x = 1\n"); }
BENCHMARK(BM_ValidateOneLine)->Unit(benchmark::kMicrosecond);

}  // namespace
