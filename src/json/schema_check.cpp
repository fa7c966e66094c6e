// Tool arguments against their JSON Schema with valijson (schema_check.hpp); valijson stays in
// this file.
#define VALIJSON_USE_EXCEPTIONS 1  // a schema valijson cannot read throws instead of aborting

#include "json/schema_check.hpp"

#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <valijson/adapters/boost_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "json/serialize.hpp"

namespace codeact::internal {
namespace json = boost::json;
namespace {

struct Compiled {
  std::unique_ptr<valijson::Schema> schema;  // null when it did not compile
  std::string error;
  bool has_pattern = false;
};

std::shared_ptr<const Compiled> Compile(std::string_view schema_json) {
  auto out = std::make_shared<Compiled>();
  out->has_pattern = schema_json.find("\"pattern") != std::string_view::npos;
  json::error_code ec;
  const json::value document = ParseJson(schema_json, ec);
  if (ec) {
    out->error = "the tool's schema is not valid JSON: " + JsonErrorText(ec);
    return out;
  }
  try {
    auto schema = std::make_unique<valijson::Schema>();
    valijson::SchemaParser parser(valijson::SchemaParser::kDraft7);
    parser.populateSchema(valijson::adapters::BoostJsonAdapter(document), *schema);
    out->schema = std::move(schema);
  } catch (const std::exception& e) {
    out->error = std::string("the tool's schema cannot be used: ") + e.what();
  }
  return out;
}

std::shared_ptr<const Compiled> Cached(std::string_view schema_json) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const Compiled>, std::less<>> cache;
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find(schema_json); it != cache.end()) return it->second;
  }
  auto compiled = Compile(schema_json);  // outside the lock: compiling takes a while
  std::lock_guard lock(mu);
  if (cache.size() >= kSchemaCacheEntries) cache.clear();
  cache.emplace(std::string(schema_json), compiled);
  return compiled;
}

// Whether a string (value or key) in `v` is longer than `limit` bytes.
bool HasLongString(const json::value& v, std::size_t limit, int depth = 0) {
  if (depth > static_cast<int>(kMaxJsonDepth)) return true;
  if (v.is_string()) return v.as_string().size() > limit;
  if (v.is_array()) {
    for (const auto& item : v.as_array()) {
      if (HasLongString(item, limit, depth + 1)) return true;
    }
  }
  if (v.is_object()) {
    for (const auto& [key, item] : v.as_object()) {
      if (key.size() > limit || HasLongString(item, limit, depth + 1)) return true;
    }
  }
  return false;
}

// Draft 6 and later count a number with a zero fractional part (1.0) as an integer; valijson
// checks the JSON type alone. Such doubles become integers in the copy that is checked (the
// handler still gets the arguments as sent).
bool HasIntegralDouble(const json::value& v, int depth = 0) {
  if (depth > static_cast<int>(kMaxJsonDepth)) return false;
  if (v.is_double()) {
    const double d = v.get_double();
    return std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e18;
  }
  if (v.is_array()) {
    for (const auto& item : v.as_array()) {
      if (HasIntegralDouble(item, depth + 1)) return true;
    }
  }
  if (v.is_object()) {
    for (const auto& [key, item] : v.as_object()) {
      if (HasIntegralDouble(item, depth + 1)) return true;
    }
  }
  return false;
}

void IntegralDoublesToIntegers(json::value& v, int depth = 0) {
  if (depth > static_cast<int>(kMaxJsonDepth)) return;
  if (v.is_double()) {
    const double d = v.get_double();
    if (std::isfinite(d) && d == std::trunc(d) && std::fabs(d) < 9.0e18)
      v = static_cast<std::int64_t>(d);
  } else if (v.is_array()) {
    for (auto& item : v.as_array()) IntegralDoublesToIntegers(item, depth + 1);
  } else if (v.is_object()) {
    for (auto& [key, item] : v.as_object()) IntegralDoublesToIntegers(item, depth + 1);
  }
}

// valijson's context ["<root>", "[a]", "[0]"] as the field: `a[0]`; the arguments themselves
// when empty.
std::string FieldName(const std::vector<std::string>& context) {
  std::string field;
  for (std::size_t i = 1; i < context.size(); ++i) {
    std::string part = context[i];
    if (part.size() >= 2 && part.front() == '[' && part.back() == ']') {
      part = part.substr(1, part.size() - 2);
    }
    const bool index = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    if (index) {
      field += "[" + part + "]";
    } else {
      field += (field.empty() ? "" : ".") + part;
    }
  }
  return field;
}

}  // namespace

std::optional<SchemaProblem> CheckArguments(std::string_view schema_json,
                                            const json::value& arguments) {
  // No schema declared (a HostTool or CommandToolSpec built with an empty one): nothing to check.
  if (schema_json.find_first_not_of(" \t\r\n") == std::string_view::npos) return std::nullopt;
  const auto compiled = Cached(schema_json);
  if (!compiled->schema) return SchemaProblem{"ToolSchemaInvalid", compiled->error};
  if (compiled->has_pattern && HasLongString(arguments, kMaxPatternCheckedBytes)) {
    return SchemaProblem{"ToolArgumentsInvalid",
                         "an argument holds a string over " +
                             std::to_string(kMaxPatternCheckedBytes) +
                             " bytes, too long to check against the schema's pattern"};
  }
  std::optional<json::value> normalised;
  if (HasIntegralDouble(arguments)) {
    normalised = arguments;
    IntegralDoublesToIntegers(*normalised);
  }
  valijson::ValidationResults results;
  try {
    valijson::Validator validator;
    if (validator.validate(
            *compiled->schema,
            valijson::adapters::BoostJsonAdapter(normalised ? *normalised : arguments), &results)) {
      return std::nullopt;
    }
  } catch (const std::exception& e) {
    return SchemaProblem{"ToolArgumentsInvalid",
                         std::string("the arguments could not be checked: ") + e.what()};
  }
  // valijson reports the innermost failure first, then each enclosing schema that failed
  // because of it; the first few say what is wrong and where.
  std::string message;
  int shown = 0;
  valijson::ValidationResults::Error error;
  while (shown < 3 && results.popError(error)) {
    const std::string field = FieldName(error.context);
    const std::string line =
        (field.empty() ? std::string("arguments") : "argument \"" + field + "\"") + ": " +
        error.description;
    if (message.find(line) != std::string::npos) continue;
    message += (message.empty() ? "" : "; ") + line;
    ++shown;
  }
  if (message.empty()) message = "the arguments do not match the tool's schema";
  return SchemaProblem{"ToolArgumentsInvalid", message};
}

}  // namespace codeact::internal
