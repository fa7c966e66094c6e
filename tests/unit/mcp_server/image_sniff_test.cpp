// SniffImageMediaType: images by their bytes, whatever they are called.
#include "mcp_server/image_sniff.hpp"

#include <gtest/gtest.h>

#include <string>

namespace codeact::internal {
namespace {

TEST(ImageSniffTest, SignaturesNameTheirType) {
  EXPECT_EQ(SniffImageMediaType(std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16)), "image/png");
  EXPECT_EQ(SniffImageMediaType("\xFF\xD8\xFF\xE0\0\x10JFIF"), "image/jpeg");
  EXPECT_EQ(SniffImageMediaType("GIF89a\x01\0\x01\0"), "image/gif");
  EXPECT_EQ(SniffImageMediaType("GIF87a"), "image/gif");
  EXPECT_EQ(SniffImageMediaType(std::string("RIFF\x24\0\0\0WEBPVP8 ", 16)), "image/webp");
}

TEST(ImageSniffTest, SvgIsTextWhoseFirstElementIsSvg) {
  EXPECT_EQ(SniffImageMediaType("<svg xmlns=\"http://www.w3.org/2000/svg\"/>"), "image/svg+xml");
  EXPECT_EQ(SniffImageMediaType("\xEF\xBB\xBF<?xml version=\"1.0\"?>\n<!-- made by code -->\n"
                                "<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" \"x\">\n<svg>"
                                "</svg>"),
            "image/svg+xml");
  EXPECT_FALSE(SniffImageMediaType("<html><svg></svg></html>").has_value());
  EXPECT_FALSE(SniffImageMediaType("<svgx/>").has_value());
  EXPECT_FALSE(SniffImageMediaType("<svg>\xFF\xFE</svg>").has_value());  // not UTF-8
  EXPECT_FALSE(SniffImageMediaType("<!-- never closed <svg>").has_value());
}

TEST(ImageSniffTest, TheNameOrAPartialSignatureDoesNotMakeAnImage) {
  EXPECT_FALSE(SniffImageMediaType("a,b\n1,2\n").has_value());
  EXPECT_FALSE(SniffImageMediaType("\x89PNG").has_value());
  EXPECT_FALSE(SniffImageMediaType(std::string("RIFF\x24\0\0\0WAVEfmt ", 16)).has_value());
  EXPECT_FALSE(SniffImageMediaType("").has_value());
}

}  // namespace
}  // namespace codeact::internal
