// The program's log settings and its stderr sink (log_setup.hpp).
#include "mcp_server/log_setup.hpp"

#include <spdlog/details/log_msg.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

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

std::string_view LevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

spdlog::level::level_enum SpdlogLevel(const std::optional<LogLevel>& level) {
  if (!level) return spdlog::level::off;
  switch (*level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarning:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

std::string_view SpdlogLevelName(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return "debug";
    case spdlog::level::warn:
      return "warning";
    case spdlog::level::err:
    case spdlog::level::critical:
      return "error";
    default:
      return "info";
  }
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
    WriteStderr(Line(msg.time, SpdlogLevelName(msg.level), component_,
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
    const LogLevel level = msg.level <= spdlog::level::debug  ? LogLevel::kDebug
                           : msg.level == spdlog::level::info ? LogLevel::kInfo
                           : msg.level == spdlog::level::warn ? LogLevel::kWarning
                                                              : LogLevel::kError;
    handler_(level, std::string_view(msg.payload.data(), msg.payload.size()));
  }
  void flush_() override {}

 private:
  const LogHandler handler_;
};

}  // namespace

StatusOr<std::optional<LogLevel>> ParseLogLevel(std::string_view text) {
  if (text == "debug") return std::optional<LogLevel>(LogLevel::kDebug);
  if (text == "info") return std::optional<LogLevel>(LogLevel::kInfo);
  if (text == "warning" || text == "warn") return std::optional<LogLevel>(LogLevel::kWarning);
  if (text == "error") return std::optional<LogLevel>(LogLevel::kError);
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
    WriteStderr(Line(std::chrono::system_clock::now(), LevelName(level), "codeact",
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
