// The bridge's check of one tool call's arguments against its schema (src/json/schema_check.hpp),
// beside the round trip it is part of (`codeact bench`, "tool-call round trips").
// Run: ./build/tests/codeact_bench --benchmark_filter=CheckArguments --benchmark_repetitions=5
#include <benchmark/benchmark.h>

#include <boost/json.hpp>

#include "json/schema_check.hpp"

namespace {

void CheckLoop(benchmark::State& state, const char* schema, const char* arguments) {
  const boost::json::value args = boost::json::parse(arguments);
  for (auto _ : state) {
    auto problem = codeact::internal::CheckArguments(schema, args);
    if (problem) state.SkipWithError(problem->message.c_str());
    benchmark::DoNotOptimize(problem);
  }
}

// `codeact bench`'s noop tool.
void BM_CheckArgumentsOneInteger(benchmark::State& state) {
  CheckLoop(
      state,
      R"({"type":"object","properties":{"i":{"type":"integer","minimum":0}},"required":["i"]})",
      R"({"i":42})");
}
BENCHMARK(BM_CheckArgumentsOneInteger)->Unit(benchmark::kMicrosecond);

// A tool with a handful of typed, nested and enumerated fields.
void BM_CheckArgumentsTypicalTool(benchmark::State& state) {
  CheckLoop(state,
            R"({"type":"object","properties":{"query":{"type":"string","minLength":1},)"
            R"("limit":{"type":"integer","minimum":1,"maximum":100},)"
            R"("order":{"type":"string","enum":["asc","desc"]},)"
            R"("filters":{"type":"array","items":{"type":"object","properties":)"
            R"({"field":{"type":"string"},"value":{"type":["string","number"]}},)"
            R"("required":["field","value"]}}},"required":["query"],"additionalProperties":false})",
            R"({"query":"orders late","limit":20,"order":"desc",)"
            R"("filters":[{"field":"region","value":"EU"},{"field":"amount","value":12.5}]})");
}
BENCHMARK(BM_CheckArgumentsTypicalTool)->Unit(benchmark::kMicrosecond);

}  // namespace
