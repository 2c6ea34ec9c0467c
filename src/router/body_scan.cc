// A hand-written recursive-descent pass: JSON syntax (RFC 8259, UTF-8 checked) validated byte by byte,
// strings the router keeps decoded in runs, all others only checked. nlohmann's lexer copied every
// string of the body a character at a time (~20 ns per byte: bench_router_body), which made reading a
// long prompt cost more than routing it.
#include "router/body_scan.h"

#include <charconv>

#include "base/utf8.h"

namespace keel::router {
namespace {

constexpr int kMaxDepth = 512;

// Where a value sits, i.e. what the router makes of it. kMessage / kContentPart / kPromptItem are
// elements of the messages, content and prompt arrays; k*Text the "text" of a part.
enum class Ctx {
  kSkip, kStream, kN, kSeed, kMessages, kMessage, kRole, kContent, kContentPart, kContentPartText,
  kPrompt, kPromptItem, kPromptPartText
};
enum class Scalar { kTrue, kFalse, kNull, kInt, kOther };

class Scanner {
 public:
  Scanner(std::string_view body, BodyKind kind) : p_(body.data()), end_(body.data() + body.size()), kind_(kind) {}

  std::optional<BodyFields> run() {
    ws();
    if (p_ == end_ || *p_ != '{') return std::nullopt;
    if (!object(0, /*top=*/true, Ctx::kSkip)) return std::nullopt;
    ws();
    if (p_ != end_) return std::nullopt;
    return std::move(out_);
  }

 private:
  void ws() {
    while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  bool eat(char c) {
    ws();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool literal(std::string_view word) {
    if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  bool hex4(uint32_t& v) {
    if (end_ - p_ < 4) return false;
    v = 0;
    for (int i = 0; i < 4; ++i, ++p_) {
      const char c = *p_;
      const uint32_t d = c >= '0' && c <= '9'   ? static_cast<uint32_t>(c - '0')
                         : c >= 'a' && c <= 'f' ? static_cast<uint32_t>(c - 'a' + 10)
                         : c >= 'A' && c <= 'F' ? static_cast<uint32_t>(c - 'A' + 10)
                                                : 16;
      if (d == 16) return false;
      v = v * 16 + d;
    }
    return true;
  }
  // One UTF-8 sequence starting at a byte >= 0x80 (RFC 3629: no overlongs, surrogates or > U+10FFFF).
  bool utf8() {
    const base::Utf8Lead lead = base::utf8_lead(static_cast<uint8_t>(*p_));
    if (lead.length == 0) return false;
    const int n = lead.length - 1;
    if (end_ - p_ <= n) return false;
    for (int i = 1; i <= n; ++i) {
      const auto b = static_cast<unsigned char>(p_[i]);
      if (b < (i == 1 ? lead.lo : 0x80) || b > (i == 1 ? lead.hi : 0xBF)) return false;
    }
    p_ += n + 1;
    return true;
  }
  // A string at p_ (the opening quote); decoded into *out when out is not null.
  bool string(std::string* out) {
    if (!eat('"')) return false;
    const char* run = p_;
    auto flush = [&] {
      if (out) out->append(run, static_cast<size_t>(p_ - run));
    };
    while (p_ != end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        flush();
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c >= 0x80) {
        if (!utf8()) return false;
        continue;
      }
      if (c != '\\') {
        ++p_;
        continue;
      }
      flush();
      if (++p_ == end_) return false;
      const char e = *p_++;
      char plain = 0;
      switch (e) {
        case '"': plain = '"'; break;
        case '\\': plain = '\\'; break;
        case '/': plain = '/'; break;
        case 'b': plain = '\b'; break;
        case 'f': plain = '\f'; break;
        case 'n': plain = '\n'; break;
        case 'r': plain = '\r'; break;
        case 't': plain = '\t'; break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return false;  // a low surrogate first
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') return false;
            p_ += 2;
            if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          if (out) base::append_utf8(*out, cp);
          break;
        }
        default: return false;
      }
      if (plain && out) *out += plain;
      run = p_;
    }
    return false;
  }
  // A number; `integer` and `value` say whether it is one a DOM would hold as an integer, and which.
  bool number(bool& integer, int64_t& value) {
    const char* start = p_;
    if (p_ != end_ && *p_ == '-') ++p_;
    if (p_ == end_) return false;
    if (*p_ == '0') {
      ++p_;
    } else if (*p_ >= '1' && *p_ <= '9') {
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    } else {
      return false;
    }
    integer = true;
    if (p_ != end_ && *p_ == '.') {
      integer = false;
      if (++p_ == end_ || *p_ < '0' || *p_ > '9') return false;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      if (++p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ == end_ || *p_ < '0' || *p_ > '9') return false;
      while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (integer) {
      if (std::from_chars(start, p_, value).ec != std::errc()) {
        uint64_t u = 0;  // above int64: a DOM holds it unsigned (still an integer); beyond, a float
        integer = *start != '-' && std::from_chars(start, p_, u).ec == std::errc();
        value = static_cast<int64_t>(u);
      }
    }
    return true;
  }

  // A value in context `ctx` at nesting `depth`.
  bool value(int depth, Ctx ctx) {
    ws();
    if (p_ == end_) return false;
    switch (*p_) {
      case '{': return object(depth + 1, false, ctx);
      case '[': return array(depth + 1, ctx);
      case '"': {
        std::string* dst = nullptr;
        if (ctx == Ctx::kRole) dst = &role_;
        if (ctx == Ctx::kContent) dst = &content_;
        if (ctx == Ctx::kPrompt) dst = &out_.prompt_text;
        if (ctx == Ctx::kContentPartText || ctx == Ctx::kPromptPartText) {
          dst = &part_text_;
          has_part_text_ = true;
        }
        if (dst) dst->clear();
        if (!dst) not_scalar(ctx);
        return string(dst);
      }
      case 't': return literal("true") && scalar(ctx, Scalar::kTrue, 0);
      case 'f': return literal("false") && scalar(ctx, Scalar::kFalse, 0);
      case 'n': return literal("null") && scalar(ctx, Scalar::kNull, 0);
      default: {
        bool integer = false;
        int64_t v = 0;
        return number(integer, v) && scalar(ctx, integer ? Scalar::kInt : Scalar::kOther, v);
      }
    }
  }
  // What a DOM reader of a top-level field (or a prompt item) makes of a literal or number ...
  bool scalar(Ctx ctx, Scalar kind, int64_t v) {
    if (ctx == Ctx::kStream) out_.stream = kind == Scalar::kTrue;
    if (ctx == Ctx::kN) out_.single = kind == Scalar::kInt && v == 1;
    if (ctx == Ctx::kSeed) out_.has_seed = kind != Scalar::kNull;
    if (ctx == Ctx::kPromptItem) prompt_item(kind == Scalar::kInt, v);
    return true;
  }
  // ... and of a string, object or array there.
  void not_scalar(Ctx ctx) {
    if (ctx == Ctx::kStream) out_.stream = false;
    if (ctx == Ctx::kN) out_.single = false;
    if (ctx == Ctx::kSeed) out_.has_seed = true;
    if (ctx == Ctx::kPromptItem) prompt_item(false, 0);
  }
  // Prompt ids when the first item is an integer (then every integer item is one).
  void prompt_item(bool integer, int64_t v) {
    if (prompt_count_++ == 0 && integer) out_.prompt_is_ids = true;
    if (out_.prompt_is_ids && integer) out_.prompt_ids.push_back(static_cast<int32_t>(v));
  }

  Ctx top_field(std::string_view k) const {
    if (k == "stream") return Ctx::kStream;
    if (k == "n") return Ctx::kN;
    if (k == "seed") return Ctx::kSeed;
    if (k == "messages" && kind_ == BodyKind::kChat) return Ctx::kMessages;
    if ((k == "prompt" && kind_ == BodyKind::kCompletion) || (k == "text" && kind_ == BodyKind::kNative)) {
      return Ctx::kPrompt;
    }
    return Ctx::kSkip;
  }

  bool object(int depth, bool top, Ctx ctx) {
    if (depth > kMaxDepth || !eat('{')) return false;
    not_scalar(ctx);
    const bool message = ctx == Ctx::kMessage;
    const bool part = ctx == Ctx::kContentPart || ctx == Ctx::kPromptItem;
    if (message) {
      role_.clear();
      content_.clear();
    }
    if (part) has_part_text_ = false;
    std::string key;
    if (!eat('}')) {
      do {
        key.clear();
        if (!string(&key) || !eat(':')) return false;
        Ctx field = Ctx::kSkip;
        if (top) {
          field = top_field(key);
          if (field == Ctx::kMessages) out_.prompt_text.clear();  // a repeated key replaces the earlier value
          if (field == Ctx::kPrompt) {
            out_.prompt_text.clear();
            out_.prompt_ids.clear();
            out_.prompt_is_ids = false;
            prompt_count_ = 0;
          }
        } else if (message && (key == "role" || key == "content")) {
          field = key == "role" ? Ctx::kRole : Ctx::kContent;
          (key == "role" ? role_ : content_).clear();
        } else if (part && key == "text") {
          field = ctx == Ctx::kContentPart ? Ctx::kContentPartText : Ctx::kPromptPartText;
          has_part_text_ = false;
        }
        if (!value(depth, field)) return false;
      } while (eat(','));
      if (!eat('}')) return false;
    }
    if (message) {
      out_.prompt_text += role_;
      out_.prompt_text += '\n';
      out_.prompt_text += content_;
      out_.prompt_text += '\n';
    } else if (part && has_part_text_) {
      if (ctx == Ctx::kContentPart) content_ += part_text_;
      if (ctx == Ctx::kPromptItem && !out_.prompt_is_ids) out_.prompt_text += part_text_;
    }
    return true;
  }

  bool array(int depth, Ctx ctx) {
    if (depth > kMaxDepth || !eat('[')) return false;
    not_scalar(ctx);
    // Only objects are messages or content parts; any value is a prompt item.
    const Ctx element = ctx == Ctx::kMessages  ? Ctx::kMessage
                        : ctx == Ctx::kContent ? Ctx::kContentPart
                        : ctx == Ctx::kPrompt  ? Ctx::kPromptItem
                                               : Ctx::kSkip;
    if (eat(']')) return true;
    do {
      ws();
      if (p_ == end_) return false;
      const bool object_only = element == Ctx::kMessage || element == Ctx::kContentPart;
      if (!value(depth, object_only && *p_ != '{' ? Ctx::kSkip : element)) return false;
    } while (eat(','));
    return eat(']');
  }

  const char* p_;
  const char* end_;
  BodyKind kind_;
  BodyFields out_;
  std::string role_, content_, part_text_;
  bool has_part_text_ = false;
  int64_t prompt_count_ = 0;
};

}  // namespace

std::optional<BodyFields> scan_body(std::string_view body, BodyKind kind) { return Scanner(body, kind).run(); }

}  // namespace keel::router
