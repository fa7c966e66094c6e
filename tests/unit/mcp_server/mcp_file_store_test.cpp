// McpFileStore: files per caller, readable by their caller only, bounded by count, bytes per
// caller and in all (oldest first), gone after their time to live.
#include "mcp_server/mcp_file_store.hpp"

#include <gtest/gtest.h>

#include <string>

namespace codeact::internal {
namespace {

using Clock = McpFileStore::Clock;
using std::chrono::milliseconds;

TEST(McpFileStoreTest, AKeptFileIsReadAndListedByItsCallerOnly) {
  McpFileStore store;
  const Clock::time_point t0 = Clock::now();
  auto uri = store.Keep("alice", "/out/a b.csv", "text/csv", "a,b\n", t0);
  ASSERT_TRUE(uri.has_value());
  EXPECT_EQ(uri->rfind("codeact://files/", 0), 0u) << *uri;
  EXPECT_TRUE(uri->ends_with("/a%20b.csv")) << *uri;
  auto read = store.Read("alice", *uri, t0);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(*read->data, "a,b\n");
  EXPECT_EQ(read->name, "/out/a b.csv");
  EXPECT_EQ(read->media_type, "text/csv");
  EXPECT_FALSE(store.Read("bob", *uri, t0).has_value());
  EXPECT_FALSE(store.Read("alice", "codeact://files/0/a.csv", t0).has_value());
  EXPECT_EQ(store.List("alice", t0).size(), 1u);
  EXPECT_TRUE(store.List("bob", t0).empty());
}

TEST(McpFileStoreTest, TwoKeepsOfOnePathAreTwoFiles) {
  McpFileStore store;
  const auto t0 = Clock::now();
  auto first = store.Keep("c", "/out/x.txt", "text/plain", "1", t0);
  auto second = store.Keep("c", "/out/x.txt", "text/plain", "2", t0);
  ASSERT_TRUE(first && second);
  EXPECT_NE(*first, *second);
  EXPECT_EQ(*store.Read("c", *first, t0)->data, "1");
  EXPECT_EQ(*store.Read("c", *second, t0)->data, "2");
}

TEST(McpFileStoreTest, AFileExpiresAfterItsTimeToLive) {
  McpFileStoreLimits limits;
  limits.ttl = milliseconds(1000);
  McpFileStore store(limits);
  const auto t0 = Clock::now();
  auto uri = store.Keep("c", "/out/x.txt", "text/plain", "data", t0);
  ASSERT_TRUE(uri);
  EXPECT_TRUE(store.Read("c", *uri, t0 + milliseconds(999)).has_value());
  EXPECT_FALSE(store.Read("c", *uri, t0 + milliseconds(1000)).has_value());
  EXPECT_TRUE(store.List("c", t0 + milliseconds(1000)).empty());
  EXPECT_EQ(store.total_bytes(), 0u);
}

TEST(McpFileStoreTest, TheCountCapEvictsTheCallersOldestFirst) {
  McpFileStoreLimits limits;
  limits.max_files_per_caller = 2;
  McpFileStore store(limits);
  const auto t0 = Clock::now();
  auto a = store.Keep("c", "/out/a", "text/plain", "a", t0);
  auto other = store.Keep("d", "/out/o", "text/plain", "o", t0);
  auto b = store.Keep("c", "/out/b", "text/plain", "b", t0);
  auto c = store.Keep("c", "/out/c", "text/plain", "c", t0);
  EXPECT_FALSE(store.Read("c", *a, t0).has_value());  // the oldest went
  EXPECT_TRUE(store.Read("c", *b, t0).has_value());
  EXPECT_TRUE(store.Read("c", *c, t0).has_value());
  EXPECT_TRUE(store.Read("d", *other, t0).has_value());  // another caller's file stays
  const auto listed = store.List("c", t0);
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].uri, *b);  // oldest first
  EXPECT_EQ(listed[1].uri, *c);
}

TEST(McpFileStoreTest, TheByteCapsEvictOldestFirstAndRefuseAFileOverThem) {
  McpFileStoreLimits limits;
  limits.max_bytes_per_caller = 10;
  limits.max_total_bytes = 16;
  McpFileStore store(limits);
  const auto t0 = Clock::now();
  auto a = store.Keep("c", "/out/a", "text/plain", std::string(6, 'a'), t0);
  auto b = store.Keep("c", "/out/b", "text/plain", std::string(4, 'b'), t0);
  ASSERT_TRUE(a && b);
  auto c = store.Keep("c", "/out/c", "text/plain", std::string(3, 'c'), t0);  // 13 > 10
  ASSERT_TRUE(c);
  EXPECT_FALSE(store.Read("c", *a, t0).has_value());
  EXPECT_TRUE(store.Read("c", *b, t0).has_value());
  EXPECT_EQ(store.total_bytes(), 7u);
  // The server-wide cap takes the oldest of anyone: c's b (4) goes for d's 10.
  auto d = store.Keep("d", "/out/d", "text/plain", std::string(10, 'd'), t0);
  ASSERT_TRUE(d);
  EXPECT_FALSE(store.Read("c", *b, t0).has_value());
  EXPECT_TRUE(store.Read("c", *c, t0).has_value());
  EXPECT_EQ(store.total_bytes(), 13u);
  // A file over the per-caller cap is not kept, and nothing is evicted for it.
  EXPECT_FALSE(store.Keep("c", "/out/big", "text/plain", std::string(11, 'x'), t0).has_value());
  EXPECT_TRUE(store.Read("c", *c, t0).has_value());
}

}  // namespace
}  // namespace codeact::internal
