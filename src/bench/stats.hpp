// Latency samples and their percentiles, for `codeact bench` and tests/bench.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

namespace codeact::bench {

class Samples {
 public:
  void Add(std::chrono::nanoseconds d) {
    us_.push_back(std::chrono::duration<double, std::micro>(d).count());
  }
  std::size_t size() const { return us_.size(); }
  // Nearest-rank percentile in microseconds; 0 when empty.
  double PercentileUs(double p) const {
    if (us_.empty()) return 0;
    std::vector<double> sorted = us_;
    std::sort(sorted.begin(), sorted.end());
    const auto rank =
        static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
    return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
  }

 private:
  std::vector<double> us_;
};

// `runs` calls of `body`, each timed.
template <typename F>
Samples Measure(int runs, F&& body) {
  Samples s;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    body();
    s.Add(std::chrono::steady_clock::now() - start);
  }
  return s;
}

}  // namespace codeact::bench
