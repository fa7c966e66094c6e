#include "protocol/flat_json.hpp"

#include <cstdio>
#include <limits>

namespace codeact::internal {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  std::optional<std::vector<FlatJsonField>> Object(std::string& error) {
    std::vector<FlatJsonField> fields;
    SkipSpace();
    if (!Take('{')) return Fail(error, "not a JSON object");
    SkipSpace();
    if (!Take('}')) {
      while (true) {
        FlatJsonField field;
        SkipSpace();
        if (!String(field.name)) return Fail(error, "a name must be a string");
        for (const FlatJsonField& seen : fields) {
          if (seen.name == field.name) return Fail(error, "\"" + field.name + "\" twice");
        }
        SkipSpace();
        if (!Take(':')) return Fail(error, "':' expected after a name");
        SkipSpace();
        if (Peek() == '"') {
          std::string s;
          if (!String(s)) return Fail(error, "\"" + field.name + "\": a malformed string");
          field.value = std::move(s);
        } else {
          std::int64_t n = 0;
          if (!Integer(n)) {
            return Fail(error, "\"" + field.name + "\" must be a string or an integer");
          }
          field.value = n;
        }
        fields.push_back(std::move(field));
        SkipSpace();
        if (Take('}')) break;
        if (!Take(',')) return Fail(error, "',' or '}' expected");
      }
    }
    SkipSpace();
    if (at_ != text_.size()) return Fail(error, "text after the object");
    return fields;
  }

 private:
  static std::nullopt_t Fail(std::string& error, std::string what) {
    error = std::move(what);
    return std::nullopt;
  }
  char Peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }
  bool Take(char c) {
    if (Peek() != c || at_ >= text_.size()) return false;
    ++at_;
    return true;
  }
  void SkipSpace() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }

  bool Hex4(std::uint32_t& out) {
    if (text_.size() - at_ < 4) return false;
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[at_++];
      out <<= 4;
      if (c >= '0' && c <= '9') {
        out |= static_cast<std::uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        out |= static_cast<std::uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        out |= static_cast<std::uint32_t>(c - 'A' + 10);
      } else {
        return false;
      }
    }
    return true;
  }

  static void AppendUtf8(std::uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  // A string literal (at its opening quote); the bytes between the quotes are kept as they are.
  bool String(std::string& out) {
    if (!Take('"')) return false;
    while (at_ < text_.size()) {
      const unsigned char c = static_cast<unsigned char>(text_[at_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (at_ >= text_.size()) return false;
      const char e = text_[at_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          std::uint32_t cp = 0;
          if (!Hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a lone low surrogate
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t low = 0;
            if (!Take('\\') || !Take('u') || !Hex4(low) || low < 0xDC00 || low > 0xDFFF)
              return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return false;
      }
    }
    return false;
  }

  // -?(0|[1-9][0-9]*) within int64, and no fraction or exponent after it.
  bool Integer(std::int64_t& out) {
    const bool negative = Take('-');
    if (Peek() < '0' || Peek() > '9') return false;
    if (Peek() == '0' && at_ + 1 < text_.size() && text_[at_ + 1] >= '0' && text_[at_ + 1] <= '9')
      return false;
    // Accumulated as a negative number: its range holds int64's minimum.
    std::int64_t value = 0;
    constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
    while (Peek() >= '0' && Peek() <= '9') {
      const int digit = text_[at_++] - '0';
      if (value < (kMin + digit) / 10) return false;
      value = value * 10 - digit;
    }
    if (Peek() == '.' || Peek() == 'e' || Peek() == 'E') return false;
    if (!negative) {
      if (value == kMin) return false;
      value = -value;
    }
    out = value;
    return true;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

std::optional<std::vector<FlatJsonField>> ParseFlatJsonObject(std::string_view text,
                                                              std::string& error) {
  return Reader(text).Object(error);
}

std::string JsonStringLiteral(std::string_view s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += static_cast<char>(ch);
    } else if (ch < 0x20 || ch >= 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += static_cast<char>(ch);
    }
  }
  return out + "\"";
}

}  // namespace codeact::internal
