// Source files as CPython reads them (PEP 263), and the UTF-8 check for code that arrives as text.
#include "validation/source_decoding.hpp"

#include <gtest/gtest.h>

#include "codeact/validator.hpp"
#include "common/utf8.hpp"

namespace codeact::internal {
namespace {

TEST(SourceDecodingTest, TheCookieIsFoundWhereCPythonLooks) {
  EXPECT_EQ(CodingCookie("# -*- coding: latin-1 -*-\nx = 1\n").value_or("-"), "iso-8859-1");
  EXPECT_EQ(CodingCookie("#!/usr/bin/env python\n# vim: set fileencoding=cp1252 :\n").value_or("-"),
            "cp1252");
  EXPECT_EQ(CodingCookie("\n  # coding=UTF_8\n").value_or("-"), "utf-8");
  EXPECT_EQ(CodingCookie("# coding: utf-8-sig\n").value_or("-"), "utf-8");
  // Not a comment alone on its line, or not within the first two lines, or after code: no cookie.
  EXPECT_FALSE(CodingCookie("x = 1  # coding: latin-1\n").has_value());
  EXPECT_FALSE(CodingCookie("x = 1\n# coding: latin-1\n").has_value());
  EXPECT_FALSE(CodingCookie("#\n#\n# coding: latin-1\n").has_value());
  EXPECT_FALSE(CodingCookie("# coding latin-1\n").has_value());
}

TEST(SourceDecodingTest, UndeclaredBytesMustBeUtf8AndTheBadByteIsNamed) {
  const DecodedSource bad = DecodeSourceFile("x = 1\ny = '\xff'\n");
  ASSERT_TRUE(bad.problem.has_value());
  EXPECT_EQ(bad.problem->rule, "source-encoding");
  EXPECT_EQ(bad.problem->line, 2);
  EXPECT_EQ(bad.problem->col, 5);
  EXPECT_EQ(
      bad.problem->message,
      "byte 0xFF at offset 11 (line 2, column 5) is not valid UTF-8, and no encoding is declared");
  const DecodedSource good =
      DecodeSourceFile("\xEF\xBB\xBFprint('\xC3\xA9')\n");  // a BOM, then UTF-8
  EXPECT_FALSE(good.problem.has_value());
  EXPECT_EQ(good.text, "print('\xC3\xA9')\n");
}

TEST(SourceDecodingTest, ADeclaredCodecDecodesTheFile) {
  ASSERT_TRUE(Validator::Embedded().ok()) << Validator::Embedded().status().ToString();
  const DecodedSource latin = DecodeSourceFile("# -*- coding: latin-1 -*-\nprint('\xE9')\n");
  ASSERT_FALSE(latin.problem.has_value()) << latin.problem->message;
  EXPECT_EQ(latin.text, "# -*- coding: latin-1 -*-\nprint('\xC3\xA9')\n");

  const DecodedSource ascii = DecodeSourceFile("# coding: ascii\nprint('\xE9')\n");
  ASSERT_TRUE(ascii.problem.has_value());
  EXPECT_EQ(ascii.problem->line, 2);
  EXPECT_NE(ascii.problem->message.find(
                "byte 0xE9 at offset 23 (line 2, column 7) cannot be decoded as ascii"),
            std::string::npos)
      << ascii.problem->message;

  const DecodedSource unknown = DecodeSourceFile("# coding: no-such-codec\nprint(1)\n");
  ASSERT_TRUE(unknown.problem.has_value());
  EXPECT_NE(unknown.problem->message.find("unknown encoding: no-such-codec"), std::string::npos);

  const DecodedSource bom = DecodeSourceFile("\xEF\xBB\xBF# coding: latin-1\nprint(1)\n");
  ASSERT_TRUE(bom.problem.has_value());
  EXPECT_NE(bom.problem->message.find("byte-order mark"), std::string::npos);
}

TEST(SourceDecodingTest, TheValidatorNamesTheOffsetOfBytesThatAreNotText) {
  auto validator = Validator::Embedded();
  ASSERT_TRUE(validator.ok());
  const ValidationReport report =
      (*validator)->Validate("print(1)\nx = '\x80'\n", ValidationPolicy{});
  ASSERT_FALSE(report.ok);
  ASSERT_EQ(report.violations.size(), 1u);
  EXPECT_EQ(report.violations[0].rule, "source-encoding");
  EXPECT_NE(report.violations[0].message.find("offset 14"), std::string::npos)
      << report.violations[0].message;
  EXPECT_FALSE(Utf8Violation("plain ascii and \xC3\xA9").has_value());
}

}  // namespace
}  // namespace codeact::internal
