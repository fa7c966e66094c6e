// SessionHandleSigner: a handle opens for its owner only, and one altered in any part, forged
// under another key, or of another form is refused with a message that says which.
#include "provider/session_handles.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace codeact::internal {
namespace {

TEST(SessionHandlesTest, AMintedHandleOpensForItsOwnerToItsId) {
  const SessionHandleSigner signer;
  const SessionHandleSigner::Minted m = signer.Mint("sub:alice");
  EXPECT_EQ(m.handle.size(), SessionHandleSigner::kHandleSize);
  EXPECT_TRUE(SessionHandleSigner::LooksLikeHandle(m.handle));
  EXPECT_EQ(m.handle.find(m.id), 4u);
  auto opened = signer.Open(m.handle, "sub:alice");
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_EQ(*opened, m.id);
  // Handles within 128 bytes: execute_code's "session" argument takes at most that.
  EXPECT_LE(m.handle.size(), 128u);
}

TEST(SessionHandlesTest, EveryMintIsANewId) {
  const SessionHandleSigner signer("0123456789abcdef0123456789abcdef");
  std::set<std::string> ids;
  for (int i = 0; i < 100; ++i) ids.insert(signer.Mint("stdio").id);
  EXPECT_EQ(ids.size(), 100u);
}

TEST(SessionHandlesTest, AnotherCallersHandleIsPermissionDenied) {
  const SessionHandleSigner signer;
  const auto m = signer.Mint("sub:alice");
  auto opened = signer.Open(m.handle, "sub:bob");
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(opened.status().message().find("belongs to another caller"), std::string::npos)
      << opened.status().message();
}

TEST(SessionHandlesTest, AnAlteredIdOrMacIsRefusedAsNotVerifying) {
  const SessionHandleSigner signer;
  const auto m = signer.Mint("sub:alice");
  for (std::size_t at : {std::size_t{4}, std::size_t{20}, m.handle.size() - 1}) {
    std::string altered = m.handle;
    altered[at] = altered[at] == 'a' ? 'b' : 'a';
    auto opened = signer.Open(altered, "sub:alice");
    ASSERT_FALSE(opened.ok()) << "position " << at;
    EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(opened.status().message().find("signature does not verify"), std::string::npos)
        << opened.status().message();
  }
}

TEST(SessionHandlesTest, AHandleForgedUnderAnotherKeyIsRefused) {
  const SessionHandleSigner server("server-key-0123456789abcdef");
  const SessionHandleSigner forger("forger-key-0123456789abcdef");
  const auto forged = forger.Mint("sub:alice");
  auto opened = server.Open(forged.handle, "sub:alice");
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("signature does not verify"), std::string::npos);
}

TEST(SessionHandlesTest, WrongFormsAreRefusedAsNotMinted) {
  const SessionHandleSigner signer;
  const auto m = signer.Mint("o");
  for (const std::string& bad :
       {std::string("cs1.short"), m.handle + "0", std::string("cs1.") + std::string(114, 'x'),
        m.handle.substr(0, 36) + "_" + m.handle.substr(37)}) {
    auto opened = signer.Open(bad, "o");
    ASSERT_FALSE(opened.ok()) << bad;
    EXPECT_EQ(opened.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(opened.status().message().find("not one this server minted"), std::string::npos)
        << opened.status().message();
  }
  EXPECT_FALSE(SessionHandleSigner::LooksLikeHandle("analysis"));
}

}  // namespace
}  // namespace codeact::internal
