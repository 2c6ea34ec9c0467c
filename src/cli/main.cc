// `keel` entry point: dispatches to subcommands. Each subcommand lives in its own file
// (cli/generate.cc, ...) and registers its flags on the CLI11 app here.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"keel: LLM inference engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(keel::cli::kVersion));
  keel::cli::register_generate(app);
  keel::cli::register_serve(app);
  keel::cli::register_router(app);
  keel::cli::register_bench(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return keel::cli::exit_code();
}
