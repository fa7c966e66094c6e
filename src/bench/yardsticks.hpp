// The one-shot yardsticks `codeact bench` compares a `codeact run` with: where a program is,
// and the bwrap command line of the one-shot sandbox it is read against.
#pragma once

#include <string>
#include <vector>

namespace codeact::bench {

// `name` in $PATH, or "" when absent.
std::string FindInPath(const std::string& name);

// bwrap running `python -I -S -c print(1)` with every namespace unshared, /usr read-only and a
// private /proc, /dev and /tmp: the one-shot sandbox the bench compares with.
std::vector<std::string> BwrapPrintArgv(const std::string& bwrap, const std::string& python);

}  // namespace codeact::bench
