#include "format/safetensors.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "format/safetensors_parser.h"

namespace keel::format {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kIndexName = "model.safetensors.index.json";
constexpr std::string_view kSingleName = "model.safetensors";

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

Result<std::string> SafetensorsParser::resolve(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    if (!fs::exists(path, ec)) return make_error(ErrorCode::kNotFound, "{} does not exist", path);
    return path;
  }
  const fs::path dir(path);
  if (is_file(dir / kIndexName)) return (dir / kIndexName).string();
  if (is_file(dir / kSingleName)) return (dir / kSingleName).string();
  std::vector<std::string> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".safetensors" && is_file(it->path())) found.push_back(it->path().string());
  }
  if (ec) return make_error(ErrorCode::kIo, "cannot list {}: {}", path, ec.message());
  if (found.size() == 1) return found.front();
  if (found.empty()) {
    return make_error(ErrorCode::kNotFound, "{} holds no {}, {} or other .safetensors file", path, kIndexName,
                      kSingleName);
  }
  return make_error(ErrorCode::kInvalidArgument, "{} holds {} .safetensors files but no {} saying how they fit", path,
                    found.size(), kIndexName);
}

Status SafetensorsParser::open_single(const std::string& path, SafetensorsSet& set) {
  KEEL_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(path));
  auto file = std::make_shared<MappedFile>(std::move(mapped));
  KEEL_RETURN_IF_ERROR(parse_file(file->bytes(), path, set.tensors_, &set.metadata_));
  set.files_.push_back(std::move(file));
  return {};
}

Status SafetensorsParser::open_index(const std::string& index_path, SafetensorsSet& set) {
  KEEL_ASSIGN_OR_RETURN(std::string text, read_text_file(index_path));
  KEEL_ASSIGN_OR_RETURN(auto shard_of, parse_index(text, index_path));
  if (shard_of.empty()) return make_error(ErrorCode::kCorruptFile, "{}: weight_map is empty", index_path);
  const std::set<std::string> shards = [&] {
    std::set<std::string> s;
    for (const auto& [name, shard] : shard_of) s.insert(shard);
    return s;
  }();
  const fs::path dir = fs::path(index_path).parent_path();
  for (const std::string& shard : shards) {
    const std::string shard_path = (dir / shard).string();
    KEEL_ASSIGN_OR_RETURN(MappedFile mapped, MappedFile::open(shard_path));
    auto file = std::make_shared<MappedFile>(std::move(mapped));
    const size_t first = set.tensors_.size();
    KEEL_RETURN_IF_ERROR(
        parse_file(file->bytes(), shard_path, set.tensors_, set.files_.empty() ? &set.metadata_ : nullptr));
    for (size_t i = first; i < set.tensors_.size(); ++i) {
      auto it = shard_of.find(set.tensors_[i].name);
      if (it != shard_of.end() && it->second == shard) shard_of.erase(it);
    }
    set.files_.push_back(std::move(file));
  }
  if (!shard_of.empty()) {
    const auto& [name, shard] = *std::min_element(shard_of.begin(), shard_of.end());
    return make_error(ErrorCode::kCorruptFile, "{} maps tensor '{}' to {}, which does not hold it ({} such tensors)",
                      index_path, name, shard, shard_of.size());
  }
  return {};
}

Status SafetensorsParser::index_tensors(SafetensorsSet& set) {
  set.index_.reserve(set.tensors_.size());
  for (size_t i = 0; i < set.tensors_.size(); ++i) {
    if (!set.index_.emplace(set.tensors_[i].name, i).second) {
      return make_error(ErrorCode::kCorruptFile, "tensor '{}' appears in more than one file", set.tensors_[i].name);
    }
  }
  return {};
}

Result<SafetensorsSet> SafetensorsSet::open(const std::string& path) {
  KEEL_ASSIGN_OR_RETURN(std::string resolved, SafetensorsParser::resolve(path));
  SafetensorsSet set;
  const bool is_index = fs::path(resolved).extension() == ".json";
  KEEL_RETURN_IF_ERROR(is_index ? SafetensorsParser::open_index(resolved, set)
                                : SafetensorsParser::open_single(resolved, set));
  KEEL_RETURN_IF_ERROR(SafetensorsParser::index_tensors(set));
  return set;
}

Result<SafetensorsSet> SafetensorsSet::parse(std::span<const uint8_t> bytes) {
  SafetensorsSet set;
  KEEL_RETURN_IF_ERROR(SafetensorsParser::parse_file(bytes, "safetensors", set.tensors_, &set.metadata_));
  KEEL_RETURN_IF_ERROR(SafetensorsParser::index_tensors(set));
  return set;
}

const tensor::TensorView* SafetensorsSet::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second].view;
}

}  // namespace keel::format
