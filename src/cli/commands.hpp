// The codeact subcommands. Each returns the process exit code: 0 success, 1 the code was
// rejected or did not succeed, 2 a bad invocation.
#pragma once

#include <string>
#include <vector>

namespace codeact::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

int CmdValidate(const std::vector<std::string>& args);
int CmdRun(const std::vector<std::string>& args);
int CmdDescribe(const std::vector<std::string>& args);
int CmdBench(const std::vector<std::string>& args);
int CmdMcp(const std::vector<std::string>& args);
int CmdServe(const std::vector<std::string>& args);
int CmdRepl(const std::vector<std::string>& args);
int CmdSelftest(const std::vector<std::string>& args);
int CmdSetupCgroups(const std::vector<std::string>& args);

}  // namespace codeact::cli
