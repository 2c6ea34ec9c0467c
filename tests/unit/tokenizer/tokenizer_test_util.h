// Shared helpers for the tokenizer tests: loading the test vocabularies (llama.cpp's vocab GGUFs,
// the default model, the reference tokenizer.json files written by
// tests/golden/tokenizer/gen_tokenizer_goldens.py) and reading files. Missing inputs fail.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "common/test_paths.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

namespace keel::tokenizer::test {

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// GGUF path for a golden vocabulary name.
inline std::string vocab_gguf_path(const std::string& name) {
  if (name == "smollm") return keel::test::default_model_path();
  if (name == "deepseek-v3") return keel::test::cache_dir() + "/testdata/tokenizer/deepseek-v3/vocab.gguf";
  return keel::test::llamacpp_vocab_dir() + "/ggml-vocab-" + name + ".gguf";
}

inline std::string hf_json_dir(const std::string& name) {
  return keel::test::cache_dir() + "/testdata/tokenizer/" + name;
}

inline std::unique_ptr<Tokenizer> load_gguf(const std::string& name) {
  const std::string path = vocab_gguf_path(name);
  if (!keel::test::exists(path)) {
    ADD_FAILURE() << "missing " << path << ": run scripts/fetch_model.sh and scripts/fetch_test_data.sh";
    return nullptr;
  }
  auto file = format::GgufFile::open(path);
  if (!file.ok()) {
    ADD_FAILURE() << file.status().to_string();
    return nullptr;
  }
  auto tok = Tokenizer::from_gguf(*file);
  if (!tok.ok()) {
    ADD_FAILURE() << name << ": " << tok.status().to_string();
    return nullptr;
  }
  return std::move(tok).value();
}

inline std::unique_ptr<Tokenizer> load_hf_json(const std::string& name) {
  const std::string dir = hf_json_dir(name);
  if (!keel::test::exists(dir + "/tokenizer.json")) {
    ADD_FAILURE() << "missing " << dir << "/tokenizer.json: run scripts/fetch_test_data.sh";
    return nullptr;
  }
  auto tok = Tokenizer::from_hf_json(read_file(dir + "/tokenizer.json"), read_file(dir + "/tokenizer_config.json"));
  if (!tok.ok()) {
    ADD_FAILURE() << name << ": " << tok.status().to_string();
    return nullptr;
  }
  return std::move(tok).value();
}

}  // namespace keel::tokenizer::test
