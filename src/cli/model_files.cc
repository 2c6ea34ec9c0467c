#include "cli/model_files.h"

#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/mapped_file.h"
#include "format/gguf.h"

namespace keel::cli {

std::string default_model_path() {
  std::string cache;
  if (const char* env = std::getenv("KEEL_CACHE_DIR")) {
    cache = env;
  } else {
    const char* home = std::getenv("HOME");
    cache = std::string(home ? home : "/root") + "/.cache/keel";
  }
  return cache + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

Result<std::unique_ptr<tokenizer::Tokenizer>> load_tokenizer(const std::string& model_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(model_path, ec)) {
    KEEL_ASSIGN_OR_RETURN(std::string tok_json, read_text_file(model_path + "/tokenizer.json"));
    std::string config_json;
    if (fs::exists(model_path + "/tokenizer_config.json", ec)) {
      KEEL_ASSIGN_OR_RETURN(config_json, read_text_file(model_path + "/tokenizer_config.json"));
    }
    auto tok = tokenizer::Tokenizer::from_hf_json(tok_json, config_json);
    if (!tok.ok()) return tok.status().with_context(model_path + "/tokenizer.json");
    return tok;
  }
  KEEL_ASSIGN_OR_RETURN(format::GgufFile gguf, format::GgufFile::open(model_path));
  auto tok = tokenizer::Tokenizer::from_gguf(gguf);
  if (!tok.ok()) return tok.status().with_context(model_path);
  return tok;
}

Result<std::optional<tokenizer::ChatTemplate>> load_chat_template(const tokenizer::Tokenizer& tok) {
  const std::string& source = tok.spec().chat_template;
  if (source.empty()) return std::optional<tokenizer::ChatTemplate>{};
  auto tmpl = tokenizer::ChatTemplate::compile(source);
  if (!tmpl.ok()) return tmpl.status().with_context("chat template");
  return std::optional<tokenizer::ChatTemplate>(std::move(tmpl).value());
}

Result<std::string> render_chat(const tokenizer::ChatTemplate& tmpl, const tokenizer::Tokenizer& tok,
                                const std::string& system, const std::string& user) {
  nlohmann::json messages = nlohmann::json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", user}});
  const auto& spec = tok.spec();
  auto token_text = [&](int32_t id) -> std::string {
    return id >= 0 && id < tok.n_vocab() ? tok.token_bytes(id) : std::string();
  };
  nlohmann::json ctx = {{"messages", messages},
                        {"add_generation_prompt", true},
                        {"bos_token", token_text(spec.bos_id)},
                        {"eos_token", token_text(spec.eos_id)}};
  return tmpl.render(ctx);
}

}  // namespace keel::cli
