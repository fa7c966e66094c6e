// The program's log settings and its stderr sink (log_setup.hpp).
#include "mcp_server/log_setup.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <iterator>
#include <mutex>
#include <utility>

#include "common/enum_names.hpp"
#include "common/utf8.hpp"
#include "json/serialize.hpp"

namespace codeact::internal {
namespace {

std::mutex& SettingsMutex() {
  static std::mutex mu;
  return mu;
}

LogSettings& Settings() {
  static LogSettings settings;
  return settings;
}

constexpr auto kLevelNames = MakeEnumNames<LogLevel>("info", {{LogLevel::kDebug, "debug"},
                                                              {LogLevel::kInfo, "info"},
                                                              {LogLevel::kWarning, "warning"},
                                                              {LogLevel::kError, "error"}});

// spdlog's level of each of ours, in order; the other way round, spdlog's trace counts as debug
// and its critical as error.
constexpr std::pair<LogLevel, spdlog::level::level_enum> kSpdlogLevels[] = {
    {LogLevel::kDebug, spdlog::level::debug},
    {LogLevel::kInfo, spdlog::level::info},
    {LogLevel::kWarning, spdlog::level::warn},
    {LogLevel::kError, spdlog::level::err}};
static_assert(std::size(kSpdlogLevels) == kLevelNames.rows.size(), "a row for each LogLevel");

spdlog::level::level_enum SpdlogLevel(const std::optional<LogLevel>& level) {
  if (!level) return spdlog::level::off;
  for (const auto& [ours, theirs] : kSpdlogLevels) {
    if (ours == *level) return theirs;
  }
  return spdlog::level::info;
}

// Ours of a message's spdlog level: the highest whose spdlog level it reaches.
LogLevel LevelOf(spdlog::level::level_enum level) {
  LogLevel result = LogLevel::kDebug;
  for (const auto& [ours, theirs] : kSpdlogLevels) {
    if (theirs <= level) result = ours;
  }
  return result;
}

// "2026-12-01 16:30:00.123" (text) or "2026-12-01T16:30:00.123Z" (JSON, UTC).
std::string TimeText(std::chrono::system_clock::time_point when, bool json) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count() % 1000;
  std::tm parts{};
  if (json) {
    ::gmtime_r(&seconds, &parts);
  } else {
    ::localtime_r(&seconds, &parts);
  }
  char buf[64];
  std::strftime(buf, sizeof buf, json ? "%Y-%m-%dT%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &parts);
  char out[80];
  std::snprintf(out, sizeof out, "%s.%03d%s", buf, static_cast<int>(millis), json ? "Z" : "");
  return out;
}

std::string Line(std::chrono::system_clock::time_point when, std::string_view level,
                 std::string_view component, std::string_view message, LogFormat format) {
  if (format == LogFormat::kJson) {
    return JsonLogLine(TimeText(when, true), level, component, message) + "\n";
  }
  return "[" + TimeText(when, false) + "] [" + std::string(component) + "] [" + std::string(level) +
         "] " + std::string(message) + "\n";
}

void WriteStderr(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

// Formats each message itself: spdlog's patterns cannot escape a message into JSON.
class StderrSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  StderrSink(std::string component, LogFormat format)
      : component_(std::move(component)), format_(format) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    WriteStderr(Line(msg.time, kLevelNames.Name(LevelOf(msg.level)), component_,
                     std::string_view(msg.payload.data(), msg.payload.size()), format_));
  }
  void flush_() override { std::fflush(stderr); }

 private:
  const std::string component_;
  const LogFormat format_;
};

// Hands each message to a LogHandler (the MCP server's logging notifications).
class HandlerSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit HandlerSink(LogHandler handler) : handler_(std::move(handler)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    handler_(LevelOf(msg.level), std::string_view(msg.payload.data(), msg.payload.size()));
  }
  void flush_() override {}

 private:
  const LogHandler handler_;
};

}  // namespace

StatusOr<std::optional<LogLevel>> ParseLogLevel(std::string_view text) {
  if (std::optional<LogLevel> level = kLevelNames.Parse(text)) return level;
  if (text == "warn") return std::optional<LogLevel>(LogLevel::kWarning);
  if (text == "off") return std::optional<LogLevel>();
  return InvalidArgument("--log-level is debug, info, warning, error or off, got \"" +
                         std::string(text) + "\"");
}

StatusOr<LogFormat> ParseLogFormat(std::string_view text) {
  if (text == "text") return LogFormat::kText;
  if (text == "json") return LogFormat::kJson;
  return InvalidArgument("--log-format is text or json, got \"" + std::string(text) + "\"");
}

void ApplyLogSettings(const LogSettings& settings, LogHandler also) {
  {
    std::lock_guard lock(SettingsMutex());
    Settings() = settings;
  }
  SetLogHandler([settings, also = std::move(also)](LogLevel level, std::string_view message) {
    if (also) also(level, message);
    if (!settings.level || level < *settings.level) return;
    WriteStderr(Line(std::chrono::system_clock::now(), kLevelNames.Name(level), "codeact",
                     SanitizeUtf8(std::string(message)), settings.format));
  });
}

LogSettings CurrentLogSettings() {
  std::lock_guard lock(SettingsMutex());
  return Settings();
}

std::shared_ptr<spdlog::logger> MakeStderrLogger(const std::string& component, bool enabled,
                                                 LogHandler also) {
  const LogSettings settings = CurrentLogSettings();
  auto stderr_sink = std::make_shared<StderrSink>(component, settings.format);
  const spdlog::level::level_enum stderr_level =
      enabled ? SpdlogLevel(settings.level) : spdlog::level::off;
  if (!also) {
    auto logger = std::make_shared<spdlog::logger>(component, std::move(stderr_sink));
    logger->set_level(stderr_level);
    return logger;
  }
  stderr_sink->set_level(stderr_level);
  auto logger = std::make_shared<spdlog::logger>(
      component, spdlog::sinks_init_list{std::move(stderr_sink),
                                         std::make_shared<HandlerSink>(std::move(also))});
  logger->set_level(spdlog::level::debug);
  return logger;
}

std::string JsonLogLine(std::string_view time, std::string_view level, std::string_view component,
                        std::string_view message) {
  return SerializeJson(boost::json::object{{"time", time},
                                           {"level", level},
                                           {"component", component},
                                           {"message", SanitizeUtf8(std::string(message))}});
}

}  // namespace codeact::internal
