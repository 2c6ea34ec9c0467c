// Resolves what `--model` names (a GGUF file or an HF model folder) into the pieces a command needs:
// the tokenizer and the chat template. Shared by the subcommands that load a model. Main thread.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/status.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace keel::cli {

// Default model location filled by scripts/fetch_model.sh.
std::string default_model_path();

Result<std::unique_ptr<tokenizer::Tokenizer>> load_tokenizer(const std::string& model_path);

// The model's chat template (from the tokenizer's spec), compiled; nullopt when it has none.
Result<std::optional<tokenizer::ChatTemplate>> load_chat_template(const tokenizer::Tokenizer& tok);

// Renders one user message (and an optional system message) for generation.
Result<std::string> render_chat(const tokenizer::ChatTemplate& tmpl, const tokenizer::Tokenizer& tok,
                                const std::string& system, const std::string& user);

}  // namespace keel::cli
