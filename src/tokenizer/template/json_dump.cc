#include "tokenizer/template/json_dump.h"

#include <algorithm>
#include <cmath>

#include "tokenizer/template/py_text.h"

namespace keel::tokenizer::jinja {
namespace {

constexpr int kMaxDepth = 256;

Status dump(const Value& v, const JsonStyle& style, int depth, std::string& out) {
  if (depth > kMaxDepth) return make_error(ErrorCode::kResourceExhausted, "tojson: nesting deeper than {}", kMaxDepth);
  auto newline = [&](int level) {
    if (!style.indent) return;
    out.push_back('\n');
    for (int k = 0; k < level; ++k) out += *style.indent;
  };
  switch (v.kind()) {
    case Kind::kNone: out += "null"; return Status::ok_status();
    case Kind::kBool: out += v.as_bool() ? "true" : "false"; return Status::ok_status();
    case Kind::kInt: out += std::to_string(v.as_int()); return Status::ok_status();
    case Kind::kFloat: {
      const double d = v.as_double();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d < 0 ? "-Infinity" : "Infinity";
      } else {
        out += py_float_repr(d);
      }
      return Status::ok_status();
    }
    case Kind::kString: append_json_string(out, v.as_string(), style.ensure_ascii); return Status::ok_status();
    case Kind::kList:
    case Kind::kTuple: {
      const List& items = v.as_list();
      if (items.empty()) {
        out += "[]";
        return Status::ok_status();
      }
      out.push_back('[');
      for (size_t k = 0; k < items.size(); ++k) {
        if (k > 0) out += style.item_separator;
        newline(depth + 1);
        KEEL_RETURN_IF_ERROR(dump(items[k], style, depth + 1, out));
      }
      newline(depth);
      out.push_back(']');
      return Status::ok_status();
    }
    case Kind::kDict: {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : v.as_dict().items) entries.push_back(&entry);
      if (entries.empty()) {
        out += "{}";
        return Status::ok_status();
      }
      if (style.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      }
      out.push_back('{');
      for (size_t k = 0; k < entries.size(); ++k) {
        if (k > 0) out += style.item_separator;
        newline(depth + 1);
        append_json_string(out, entries[k]->first, style.ensure_ascii);
        out += style.key_separator;
        KEEL_RETURN_IF_ERROR(dump(entries[k]->second, style, depth + 1, out));
      }
      newline(depth);
      out.push_back('}');
      return Status::ok_status();
    }
    case Kind::kUndefined:
    case Kind::kObject:
    case Kind::kCallable:
    case Kind::kIterator: break;
  }
  return make_error(ErrorCode::kInvalidArgument, "tojson: object of type {} is not JSON serializable", v.type_name());
}

}  // namespace

Result<std::string> dump_json(const Value& v, const JsonStyle& style) {
  std::string out;
  KEEL_RETURN_IF_ERROR(dump(v, style, 0, out));
  return out;
}

}  // namespace keel::tokenizer::jinja
