// Where the codeact program's own log lines go (never the library's choice): stderr, as text
// (`[time] [codeact mcp] [info] message`) or as one JSON object per line (`--log-format json`:
// {"time","level","component","message"}), from the level `--log-level` names. The library's
// messages (include/codeact/log.hpp) follow the same settings once ApplyLogSettings ran.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "codeact/log.hpp"
#include "codeact/status.hpp"

namespace spdlog {
class logger;
}

namespace codeact::internal {

enum class LogFormat { kText, kJson };

struct LogSettings {
  std::optional<LogLevel> level = LogLevel::kInfo;  // the lowest level written; none: off
  LogFormat format = LogFormat::kText;
};

// "debug", "info", "warning" (or "warn"), "error", "off"; "text", "json".
StatusOr<std::optional<LogLevel>> ParseLogLevel(std::string_view text);
StatusOr<LogFormat> ParseLogFormat(std::string_view text);

// Sets the process's settings and routes the library's messages through them; `also`, when set,
// gets every library message too, whatever the settings' level (MCP logging's own filter).
void ApplyLogSettings(const LogSettings& settings, LogHandler also = nullptr);
LogSettings CurrentLogSettings();

// A logger named `component` ("codeact mcp") writing to stderr as the current settings say;
// `enabled` false: it writes nothing there. `also`, when set, gets every message at debug and
// above, whatever `enabled` and the settings say.
std::shared_ptr<spdlog::logger> MakeStderrLogger(const std::string& component, bool enabled,
                                                 LogHandler also = nullptr);

// The JSON line of one message (no newline), for tests and the sink.
std::string JsonLogLine(std::string_view time, std::string_view level, std::string_view component,
                        std::string_view message);

}  // namespace codeact::internal
