// Where tests find their inputs. Third-party inputs are fetched by scripts (fetch_model.sh,
// fetch_test_data.sh) into the cache folder; golden outputs are committed under tests/golden/.
// A missing input fails the test with the command that fetches it — tests never skip.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace keel::test {

inline std::string cache_dir() {
  if (const char* env = std::getenv("KEEL_CACHE_DIR")) return env;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/root") + "/.cache/keel";
}

inline std::string source_dir() {
  if (const char* env = std::getenv("KEEL_SOURCE_DIR")) return env;
#ifdef KEEL_SOURCE_DIR
  return KEEL_SOURCE_DIR;
#else
  return ".";
#endif
}

inline std::string golden_dir() { return source_dir() + "/tests/golden"; }

// SmolLM2-135M-Instruct Q4_1 (scripts/fetch_model.sh).
inline std::string default_model_path() { return cache_dir() + "/models/SmolLM2-135M-Instruct.Q4_1.gguf"; }

// llama.cpp's vocab-only GGUFs and chat templates (scripts/fetch_test_data.sh).
inline std::string llamacpp_vocab_dir() { return cache_dir() + "/testdata/llamacpp/vocab"; }
inline std::string llamacpp_templates_dir() { return cache_dir() + "/testdata/llamacpp/templates"; }

inline bool exists(const std::string& path) { return std::filesystem::exists(path); }

}  // namespace keel::test
