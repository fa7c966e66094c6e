// What the codeact program (never the library) sets up for its own process: the open-file limit,
// the shutdown signals of a server, and the removal of scratch directories dead servers left.
#pragma once

namespace codeact::cli {

// Raises the soft RLIMIT_NOFILE to the hard limit: a server holds a few descriptors per run in
// flight (pipes, pidfds, pooled children), and the soft default of 1024 is a needless ceiling.
void RaiseOpenFileLimit();

// SIGTERM and SIGINT write a byte to a pipe instead of ending the process; returns the pipe's
// read end (non-blocking, close-on-exec), or -1 when it cannot be set up (the signals then keep
// their default action). Children get the default dispositions back before they exec.
int InstallShutdownSignals();

}  // namespace codeact::cli
