// Parses one safetensors file's bytes (8-byte header length, JSON header, data) into tensor views,
// and locates the files of a set (single file, sharded index, folder). Internal to format/:
// SafetensorsSet (safetensors.h) is the public entry point. Stateless functions: any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "format/safetensors.h"

namespace keel::format {

class SafetensorsParser {
 public:
  // The reference implementation refuses headers above 100 MB; so does keel.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  // Appends the tensors of one file (in data-offset order) to `out`; fills `metadata` from
  // __metadata__ when non-null. `label` names the file in errors.
  static Status parse_file(std::span<const uint8_t> bytes, const std::string& label,
                           std::vector<SafetensorsTensor>& out, std::unordered_map<std::string, std::string>* metadata);

  // Reads `model.safetensors.index.json`-style JSON: the shard file of every tensor.
  static Result<std::unordered_map<std::string, std::string>> parse_index(std::string_view json_text,
                                                                          const std::string& label);

  // Resolves open()'s path argument to the files to read: one .safetensors file, or an index
  // (returned as its path, ending in .json). kNotFound / kInvalidArgument name what was looked for.
  static Result<std::string> resolve(const std::string& path);

  // Builds the set; `set` must be empty.
  static Status open_single(const std::string& path, SafetensorsSet& set);
  static Status open_index(const std::string& index_path, SafetensorsSet& set);
  static Status index_tensors(SafetensorsSet& set);
};

}  // namespace keel::format
