// The launcher's command line (sandbox/sandbox_config.hpp): what the host encodes is what the
// launcher decodes, and a zygote's uid range is refused unless it holds the zygote's own uid.
#include "sandbox/sandbox_config.hpp"

#include <gtest/gtest.h>

namespace codeact::internal {
namespace {

SandboxConfig Zygote() {
  SandboxConfig c;
  c.scratch_dir = "/tmp/s";
  c.run_as_uid = 1005;
  c.zygote_uids_first = 1000;
  c.zygote_uids_count = 64;
  c.command = {"/usr/bin/python3", "-I"};
  return c;
}

TEST(SandboxConfigTest, AZygotesUidRangeRoundTrips) {
  auto decoded = DecodeSandboxArgs(EncodeSandboxArgs(Zygote()));
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();
  EXPECT_TRUE(IsZygote(*decoded));
  EXPECT_EQ(decoded->zygote_uids_first, 1000);
  EXPECT_EQ(decoded->zygote_uids_count, 64);
  EXPECT_EQ(decoded->run_as_uid, 1005);
  SandboxConfig plain = Zygote();
  plain.zygote_uids_first = -1;
  auto cold = DecodeSandboxArgs(EncodeSandboxArgs(plain));
  ASSERT_TRUE(cold.ok());
  EXPECT_FALSE(IsZygote(*cold));
}

TEST(SandboxConfigTest, AZygoteRangeWithoutItsOwnUidIsRefused) {
  SandboxConfig c = Zygote();
  c.run_as_uid = 2000;
  EXPECT_EQ(DecodeSandboxArgs(EncodeSandboxArgs(c)).status().message(),
            "--zygote-uids needs --run-as, a uid of the range");
  c.run_as_uid = -1;
  EXPECT_EQ(DecodeSandboxArgs(EncodeSandboxArgs(c)).status().message(),
            "--zygote-uids needs --run-as, a uid of the range");
  EXPECT_EQ(DecodeSandboxArgs({"--scratch", "/s", "--zygote-uids", "0", "5", "--", "/x"})
                .status()
                .message(),
            "--zygote-uids needs positive numbers: 0");
  EXPECT_EQ(DecodeSandboxArgs({"--scratch", "/s", "--zygote-uids", "4294967295", "5", "--", "/x"})
                .status()
                .message(),
            "--zygote-uids needs positive numbers: 4294967295");
  EXPECT_EQ(DecodeSandboxArgs({"--scratch", "/s", "--zygote-uids", "5"}).status().message(),
            "--zygote-uids needs a first uid and a count");
}

}  // namespace
}  // namespace codeact::internal
