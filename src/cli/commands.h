// Subcommand registration for the `keel` binary. Each register_* adds a CLI11 subcommand whose
// callback runs the command and records its exit code (0 ok, 1 runtime failure, 2 bad input).
#pragma once

#include <string_view>

namespace CLI {
class App;
}

namespace keel::cli {

inline constexpr std::string_view kVersion = "0.1.0";

void register_generate(CLI::App& app);
void register_serve(CLI::App& app);
void register_router(CLI::App& app);
void register_bench(CLI::App& app);  // `keel bench serve` (cli/bench_serve.cc)

void set_exit_code(int code);
int exit_code();

}  // namespace keel::cli
