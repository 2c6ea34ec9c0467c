// SIGTERM/SIGINT handling shared by the long-running subcommands (`serve`, `router`).
#pragma once

#include <csignal>

namespace keel::cli {

// Blocks SIGTERM/SIGINT in the calling thread; threads started after it inherit the mask, so the
// main thread can wait for them synchronously (sigwait on the returned set). Call before any thread.
sigset_t block_stop_signals();

}  // namespace keel::cli
