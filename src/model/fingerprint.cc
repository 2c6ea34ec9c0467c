#include "model/fingerprint.h"

#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "base/mapped_file.h"

namespace keel::model {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kHeadBytes = 1 << 20;
constexpr uint64_t kSampleBytes = 64 << 10;
constexpr int kSamples = 64;

Status hash_file(const fs::path& path, XXH3_state_t* state, bool whole) {
  auto file = MappedFile::open(path.string());
  if (!file.ok()) return file.status();
  const std::span<const uint8_t> bytes = file.value().bytes();
  const uint64_t size = bytes.size();
  XXH3_64bits_update(state, &size, sizeof size);
  auto take = [&](uint64_t at, uint64_t n) { XXH3_64bits_update(state, bytes.data() + at, std::min(n, size - at)); };
  if (whole || size <= kHeadBytes + (kSamples + 1) * kSampleBytes) {
    take(0, size);
    return {};
  }
  take(0, kHeadBytes);
  for (int i = 0; i < kSamples; ++i) {
    take(kHeadBytes + (size - kHeadBytes - kSampleBytes) / kSamples * static_cast<uint64_t>(i), kSampleBytes);
  }
  take(size - kSampleBytes, kSampleBytes);
  return {};
}

}  // namespace

Result<std::string> model_fingerprint(const std::string& path, bool dummy) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    files.push_back(fs::path(path) / "config.json");
    if (!dummy) {
      for (const auto& e : fs::directory_iterator(path, ec)) {
        if (e.path().extension() == ".safetensors") files.push_back(e.path());
      }
      std::sort(files.begin() + 1, files.end());
    }
  } else {
    files.emplace_back(path);
  }
  const std::string tag = dummy ? "dummy" : "weights";
  XXH3_64bits_update(state.get(), tag.data(), tag.size());
  for (const auto& f : files) {
    if (Status s = hash_file(f, state.get(), dummy); !s.ok()) return s;
  }
  return fmt::format("{:016x}", XXH3_64bits_digest(state.get()));
}

}  // namespace keel::model
