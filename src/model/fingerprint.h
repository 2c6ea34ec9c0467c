// A model's identity for KV exchange between replicas (docs/router.md "KV pulls"): KV computed by one
// set of weights must never be imported by a replica that runs another (another quantization of the
// same model included), so a replica accepts KV only from one whose fingerprint equals its own.
// xxh3-64 over each weight file's size, its first MiB (a GGUF file's header: metadata and tensor
// table; a safetensors file's JSON header), 64 KiB at 64 evenly spaced offsets and its last 64 KiB:
// ~5 MB read per file, so it costs milliseconds where hashing whole files would cost seconds per
// GB, and any two different files of the same size almost surely differ in some sampled block. File
// names are not hashed: replicas may keep the same weights under different names.
#pragma once

#include <string>

#include "base/status.h"

namespace keel::model {

// path: a GGUF file, or a Hugging Face folder (config.json and its *.safetensors files). dummy: the
// weights are generated from config.json (`--load-format dummy`), so config.json alone names them.
// 16 lower-case hex digits.
Result<std::string> model_fingerprint(const std::string& path, bool dummy);

}  // namespace keel::model
