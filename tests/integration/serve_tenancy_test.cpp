// `codeact serve` with two callers: the zygotes that fork one caller's children serve that
// caller only (RunSnapshot::tenant, docs/warm-pool.md). A zygote's children share its str hash
// seed and its memory layout (id(object())); one caller's runs may learn that of its own runs,
// never of another caller's.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "process/run_cgroup.hpp"
#include "testing/serve_support.hpp"

namespace codeact {
namespace {

namespace bj = boost::json;
namespace fs = std::filesystem;
using testing::Bearer;
using testing::HttpCall;
using testing::ServeProcess;

const std::string kTokenA = "tenant-a-0123456789";
const std::string kTokenB = "tenant-b-9876543210";

struct Layout {
  std::int64_t hash = 0;  // hash() of a fixed str: the interpreter's hash seed
  std::int64_t id = 0;    // id(object()): where the heap puts a new object
};

class ServeTenancyTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "namespaces" &&
        (::geteuid() != 0 || !internal::CgroupSite::ForThisProcess()->any())) {
      GTEST_SKIP() << "the namespaces level forks from a zygote only on a root host with cgroups; "
                      "here every child starts cold and shares nothing with any other";
    }
    dir_ = fs::temp_directory_path() / ("serve-tenancy-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "tmp");
    std::ofstream(dir_ / "tokens") << kTokenA << "\n" << kTokenB << "\n";
    server_ = std::make_unique<ServeProcess>(
        std::vector<std::string>{"--token-file", (dir_ / "tokens").string(), "--isolation",
                                 GetParam(), "--warm-pool", "2"},
        (dir_ / "tmp").string());
    ASSERT_NE(server_->port(), 0) << server_->Stderr();
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }

  Layout Run(const std::string& token) {
    const std::string body =
        bj::serialize(bj::object{{"code", "[hash('codeact-tenant-probe'), id(object())]"}});
    const auto r = HttpCall(server_->port(), "POST", "/v1/execute", body, Bearer(token));
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return {};
    const bj::value v = r.Json();
    EXPECT_EQ(v.at("outcome"), "ok") << r.body;
    if (!v.at("output").is_array()) return {};
    const bj::array& out = v.at("output").as_array();
    return {out.at(0).to_number<std::int64_t>(), out.at(1).to_number<std::int64_t>()};
  }

  fs::path dir_;
  std::unique_ptr<ServeProcess> server_;
};

TEST_P(ServeTenancyTest, TwoCallersNeverShareAZygotesLayoutWhileOneCallersRunsDo) {
  // Runs of both callers, interleaved, until each caller has seen one of its hash seeds twice
  // (two forks of one of its zygotes; the first runs of a caller may start cold).
  std::map<std::int64_t, int> seeds_a, seeds_b;
  std::set<std::int64_t> ids_a, ids_b;
  bool repeated_a = false, repeated_b = false;
  for (int i = 0; i < 40 && !(repeated_a && repeated_b); ++i) {
    const Layout a = Run(kTokenA);
    const Layout b = Run(kTokenB);
    if (::testing::Test::HasFailure()) return;
    repeated_a = ++seeds_a[a.hash] > 1 || repeated_a;
    repeated_b = ++seeds_b[b.hash] > 1 || repeated_b;
    ids_a.insert(a.id);
    ids_b.insert(b.id);
  }
  ASSERT_TRUE(repeated_a) << "caller A's runs never shared a zygote";
  ASSERT_TRUE(repeated_b) << "caller B's runs never shared a zygote";
  for (const auto& [seed, count] : seeds_a) {
    EXPECT_EQ(seeds_b.count(seed), 0u) << "callers A and B ran with the hash seed " << seed;
  }
  for (const std::int64_t id : ids_a) {
    EXPECT_EQ(ids_b.count(id), 0u) << "callers A and B saw the address " << id;
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, ServeTenancyTest, ::testing::Values("process", "namespaces"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace codeact
