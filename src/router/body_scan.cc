#include "router/body_scan.h"

#include <nlohmann/json.hpp>

namespace keel::router {
namespace {

using nlohmann::json;

// Keys the scan cares about; any other key is kOther (its value is skipped).
enum class Key : uint8_t { kNone, kOther, kStream, kN, kSeed, kMessages, kPrompt, kText, kRole, kContent };

Key top_key(std::string_view k) {
  if (k == "stream") return Key::kStream;
  if (k == "n") return Key::kN;
  if (k == "seed") return Key::kSeed;
  if (k == "messages") return Key::kMessages;
  if (k == "prompt") return Key::kPrompt;
  if (k == "text") return Key::kText;
  return Key::kOther;
}

Key inner_key(std::string_view k) {
  if (k == "role") return Key::kRole;
  if (k == "content") return Key::kContent;
  if (k == "text") return Key::kText;
  return Key::kOther;
}

// The SAX handler. frames_[0] is the top-level object; a frame records the last key read in an
// object, or the number of elements seen in an array. Locations the scan reads:
//   [top.K]                               top-level scalars, the prompt / text string
//   [top.messages, arr, msg.role|content] a message's role and content string
//   [..., msg.content, arr, part.text]    a content part's text
//   [top.prompt|text, arr]                prompt ids (prompt[0] an integer), or part objects
//   [top.prompt|text, arr, part.text]     their text
class Scanner {
 public:
  explicit Scanner(BodyKind kind) : kind_(kind) {}

  bool null() { return scalar(Value::kNull, 0); }
  bool boolean(bool v) { return scalar(v ? Value::kTrue : Value::kFalse, 0); }
  bool number_integer(json::number_integer_t v) { return scalar(Value::kInt, v); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(Value::kInt, static_cast<int64_t>(v)); }
  bool number_float(json::number_float_t, const json::string_t&) { return scalar(Value::kOther, 0); }
  bool binary(json::binary_t&) { return scalar(Value::kOther, 0); }
  bool string(json::string_t& s) {
    if (!scalar(Value::kOther, 0)) return false;
    if (prompt_part_text() || (depth() == 1 && prompt_key(at(0).key))) {
      out_.prompt_text += s;
    } else if (depth() == 3 && in_messages() && at(2).key == Key::kRole) {
      role_ = s;
    } else if (depth() == 3 && in_messages() && at(2).key == Key::kContent) {
      content_ = s;
    } else if (depth() == 5 && in_messages() && at(2).key == Key::kContent && at(3).array && at(4).key == Key::kText) {
      content_ += s;
    }
    return true;
  }
  bool start_object(std::size_t) {
    if (depth() == 0 && seen_top_) return false;  // not possible for valid JSON; defensive
    if (depth() == 0) seen_top_ = true;
    if (!element()) return false;
    container_value();
    if (depth() == 2 && in_messages()) {
      in_message_ = true;
      role_.clear();
      content_.clear();
    }
    frames_.push_back({.array = false});
    return true;
  }
  bool key(json::string_t& k) {
    at(depth() - 1).key = depth() == 1 ? top_key(k) : inner_key(k);
    if (depth() == 1) {
      // A repeated key replaces the earlier value, as in a DOM.
      if (at(0).key == Key::kMessages && kind_ == BodyKind::kChat) out_.prompt_text.clear();
      if (prompt_key(at(0).key)) {
        out_.prompt_text.clear();
        out_.prompt_ids.clear();
        out_.prompt_is_ids = false;
      }
    }
    if (depth() == 3 && in_messages() && at(2).key == Key::kContent) content_.clear();
    return true;
  }
  bool end_object() {
    frames_.pop_back();
    if (depth() == 2 && in_messages() && in_message_) {
      in_message_ = false;
      out_.prompt_text += role_;
      out_.prompt_text += '\n';
      out_.prompt_text += content_;
      out_.prompt_text += '\n';
    }
    return true;
  }
  bool start_array(std::size_t) {
    if (depth() == 0) return false;  // a top-level array is not a request
    if (!element()) return false;
    container_value();
    frames_.push_back({.array = true});
    return true;
  }
  bool end_array() {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  BodyFields take() { return std::move(out_); }
  bool saw_object() const { return seen_top_; }

 private:
  enum class Value { kNull, kTrue, kFalse, kInt, kOther };
  struct Frame {
    bool array = false;
    Key key = Key::kNone;  // objects: the key whose value comes next
    int64_t count = 0;     // arrays: elements so far
  };

  size_t depth() const { return frames_.size(); }
  Frame& at(size_t i) { return frames_[i]; }
  bool prompt_key(Key k) const {
    return (k == Key::kPrompt && kind_ == BodyKind::kCompletion) || (k == Key::kText && kind_ == BodyKind::kNative);
  }
  bool in_messages() { return kind_ == BodyKind::kChat && depth() >= 2 && at(0).key == Key::kMessages && at(1).array; }
  // The value about to start counts as one element of an enclosing array. False for a scalar at the
  // top level (not an object).
  bool element() {
    if (depth() == 0) return true;
    if (at(depth() - 1).array) ++at(depth() - 1).count;
    return true;
  }
  // An object or array as the value of a top-level key: what a DOM reader of that key would make of it.
  void container_value() {
    if (depth() != 1) return;
    switch (at(0).key) {
      case Key::kStream: out_.stream = false; break;
      case Key::kN: out_.single = false; break;
      case Key::kSeed: out_.has_seed = true; break;
      default: break;
    }
  }
  // [top.prompt|text, arr, part.text]: the text of an object part of a prompt list (not in ids mode).
  bool prompt_part_text() {
    return depth() == 3 && prompt_key(at(0).key) && at(1).array && !at(2).array && at(2).key == Key::kText &&
           !out_.prompt_is_ids;
  }
  bool scalar(Value v, int64_t i) {
    if (depth() == 0) return false;  // a scalar body
    element();
    if (depth() == 1) {
      switch (at(0).key) {
        case Key::kStream: out_.stream = v == Value::kTrue; break;
        case Key::kN: out_.single = v == Value::kInt && i == 1; break;
        case Key::kSeed: out_.has_seed = v != Value::kNull; break;
        default: break;
      }
    } else if (depth() == 2 && at(0).key == Key::kPrompt && kind_ == BodyKind::kCompletion && at(1).array) {
      if (at(1).count == 1 && v == Value::kInt) out_.prompt_is_ids = true;
      if (out_.prompt_is_ids && v == Value::kInt) out_.prompt_ids.push_back(static_cast<int32_t>(i));
    }
    return true;
  }

  BodyKind kind_;
  BodyFields out_;
  std::vector<Frame> frames_;
  bool seen_top_ = false;
  bool in_message_ = false;
  std::string role_, content_;
};

}  // namespace

std::optional<BodyFields> scan_body(std::string_view body, BodyKind kind) {
  Scanner s(kind);
  if (!json::sax_parse(body, &s) || !s.saw_object()) return std::nullopt;
  return s.take();
}

}  // namespace keel::router
