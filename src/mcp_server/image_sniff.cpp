// SniffImageMediaType (image_sniff.hpp).
#include "mcp_server/image_sniff.hpp"

#include "common/utf8.hpp"

namespace codeact::internal {
namespace {

// How far into a text an SVG's <svg> element may start: past a long comment or doctype it is
// not worth reading further.
constexpr std::size_t kSvgPrologBytes = 4096;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// Skips `s`'s whitespace, XML declaration, processing instructions, comments and doctype;
// whether what follows is an <svg element.
bool StartsWithSvgElement(std::string_view s) {
  if (s.starts_with("\xEF\xBB\xBF")) s.remove_prefix(3);
  for (;;) {
    while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
    std::string_view end;
    if (s.starts_with("<?")) {
      end = "?>";
    } else if (s.starts_with("<!--")) {
      end = "-->";
    } else if (s.starts_with("<!DOCTYPE") || s.starts_with("<!doctype")) {
      end = ">";
    } else {
      break;
    }
    const std::size_t at = s.find(end);
    if (at == std::string_view::npos) return false;
    s.remove_prefix(at + end.size());
  }
  if (!s.starts_with("<svg")) return false;
  return s.size() > 4 && (IsSpace(s[4]) || s[4] == '>' || s[4] == '/');
}

}  // namespace

std::optional<std::string_view> SniffImageMediaType(std::string_view b) {
  if (b.starts_with("\x89PNG\r\n\x1a\n")) return "image/png";
  if (b.starts_with("\xFF\xD8\xFF")) return "image/jpeg";
  if (b.starts_with("GIF87a") || b.starts_with("GIF89a")) return "image/gif";
  if (b.size() >= 12 && b.starts_with("RIFF") && b.substr(8, 4) == "WEBP") return "image/webp";
  const std::string_view head = b.substr(0, kSvgPrologBytes);
  if (StartsWithSvgElement(head) && !Utf8Violation(b)) return "image/svg+xml";
  return std::nullopt;
}

}  // namespace codeact::internal
