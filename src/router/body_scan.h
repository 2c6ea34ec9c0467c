// The few fields of a request body the router needs (stream, n, seed, the prompt), read in one pass
// over the JSON instead of building its whole DOM: the pass checks the JSON's syntax fully (UTF-8
// included; nesting at most 512 deep) but decodes only the prompt strings it keeps. The DOM is built
// only where a body must be rewritten (a resumable stream's seed and resume body: proxy_admit.cc).
// Pure: any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace keel::router {

enum class BodyKind { kChat, kCompletion, kNative };

struct BodyFields {
  bool stream = false;      // "stream": true
  bool single = true;       // "n" absent or the integer 1
  bool has_seed = false;    // "seed" present and not null
  bool prompt_is_ids = false;
  std::vector<int32_t> prompt_ids;  // completion "prompt": [ids] (integer elements)
  // Character-key text: chat = role "\n" content "\n" per message (content: a string or the "text" of
  // its parts); completion "prompt" / native "text": the string, or the "text" of object parts.
  std::string prompt_text;
};

// nullopt when the body is not valid JSON or not an object.
std::optional<BodyFields> scan_body(std::string_view body, BodyKind kind);

}  // namespace keel::router
