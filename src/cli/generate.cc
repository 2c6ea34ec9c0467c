// `keel generate`: load a model, run one prompt, stream the text to stdout.
#include <CLI/CLI.hpp>

#include "cli/commands.h"

namespace keel::cli {

void register_generate(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate text from a prompt");
  cmd->callback([] { set_exit_code(1); });
}

}  // namespace keel::cli
