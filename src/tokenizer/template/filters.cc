#include "tokenizer/template/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "tokenizer/template/evaluator.h"
#include "tokenizer/template/filter_params.h"
#include "tokenizer/template/is_tests.h"
#include "tokenizer/template/json_dump.h"
#include "tokenizer/template/py_text.h"

namespace keel::tokenizer::jinja {
namespace {

using filter_detail::bind;
using filter_detail::get_path;
using filter_detail::Params;

Result<std::string> as_text(const Value& v) { return to_str(v); }

Result<Value> filter_length(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined: return Value::integer(0);
    case Kind::kString: return Value::integer(static_cast<int64_t>(code_point_count(v.as_string())));
    case Kind::kList:
    case Kind::kTuple: return Value::integer(static_cast<int64_t>(v.as_list().size()));
    case Kind::kDict: return Value::integer(static_cast<int64_t>(v.as_dict().items.size()));
    case Kind::kIterator:
      if (v.as_iter().has_len) return Value::integer(static_cast<int64_t>(v.as_iter().items.size()));
      [[fallthrough]];
    default: return make_error(ErrorCode::kInvalidArgument, "object of type '{}' has no len()", v.type_name());
  }
}

Result<Value> filter_tojson(const Value& v, const Params& p) {
  JsonStyle style;
  style.ensure_ascii = p.flag(0, false);
  if (const Value* indent = p.get(1); indent != nullptr && !indent->is_none()) {
    if (indent->is_string()) {
      style.indent = indent->as_string();
    } else if (indent->is_integral()) {
      style.indent = std::string(static_cast<size_t>(std::max<int64_t>(0, std::min<int64_t>(indent->as_int(), 64))), ' ');
    } else {
      return make_error(ErrorCode::kInvalidArgument, "tojson: indent must be an int or a string");
    }
    style.item_separator = ",";
  }
  if (const Value* seps = p.get(2); seps != nullptr && !seps->is_none()) {
    if (!seps->is_sequence() || seps->as_list().size() != 2 || !seps->as_list()[0].is_string() ||
        !seps->as_list()[1].is_string()) {
      return make_error(ErrorCode::kInvalidArgument, "tojson: separators must be a pair of strings");
    }
    style.item_separator = seps->as_list()[0].as_string();
    style.key_separator = seps->as_list()[1].as_string();
  }
  style.sort_keys = p.flag(3, false);
  KEEL_ASSIGN_OR_RETURN(std::string text, dump_json(v, style));
  return Value::string(std::move(text));
}

Result<Value> filter_default(const Value& v, const Params& p) {
  const bool use_default = v.is_undefined() || (p.flag(1, false) && !v.truthy());
  if (!use_default) return v;
  const Value* d = p.get(0);
  return d == nullptr ? Value::string("") : *d;
}

Result<Value> filter_join(Interpreter& in, const Value& v, const Params& p, int line) {
  KEEL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
  KEEL_ASSIGN_OR_RETURN(std::string sep, p.str(0, ""));
  const Value* attribute = p.get(1);
  std::string out;
  for (size_t k = 0; k < items.size(); ++k) {
    Value item = items[k];
    if (attribute != nullptr && !attribute->is_none()) {
      KEEL_ASSIGN_OR_RETURN(std::string path, to_str(*attribute));
      KEEL_ASSIGN_OR_RETURN(item, get_path(in, item, path, line));
    }
    if (item.is_markup()) return make_error(ErrorCode::kUnsupported, "join of |safe strings");
    KEEL_ASSIGN_OR_RETURN(std::string s, to_str(item));
    if (k > 0) out += sep;
    out += s;
    KEEL_RETURN_IF_ERROR(in.charge_string(out.size()));
  }
  return Value::string(std::move(out));
}

Result<Value> filter_int(const Value& v, const Params& p) {
  const Value* dflt = p.get(0);
  const Value fallback = dflt ? *dflt : Value::integer(0);
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.kind() == Kind::kFloat) {
    if (!std::isfinite(v.as_double()) || std::fabs(v.as_double()) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(v.as_double()));
  }
  if (!v.is_string()) return fallback;
  const std::string s(py_strip(v.as_string(), true, true));
  const int base = p.get(1) && p.get(1)->is_integral() ? static_cast<int>(p.get(1)->as_int()) : 10;
  if (s.empty()) return fallback;
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(s.c_str(), &end, base);
  if (errno == 0 && end == s.c_str() + s.size()) return Value::integer(i);
  const double d = std::strtod(s.c_str(), &end);
  if (end == s.c_str() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) {
    return Value::integer(static_cast<int64_t>(d));
  }
  return fallback;
}

Result<Value> filter_float(const Value& v, const Params& p) {
  const Value* dflt = p.get(0);
  const Value fallback = dflt ? *dflt : Value::number(0.0);
  if (v.is_numeric()) return Value::number(v.as_double());
  if (!v.is_string()) return fallback;
  const std::string s(py_strip(v.as_string(), true, true));
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) return fallback;
  return Value::number(d);
}

Result<Value> filter_round(const Value& v, const Params& p) {
  const int64_t precision = p.get(0) && p.get(0)->is_integral() ? p.get(0)->as_int() : 0;
  KEEL_ASSIGN_OR_RETURN(std::string method, p.str(1, "common"));
  if (!v.is_numeric()) return make_error(ErrorCode::kInvalidArgument, "round expects a number");
  if (precision < 0 || precision > 17) return make_error(ErrorCode::kUnsupported, "round precision {}", precision);
  const double x = v.as_double();
  if (method == "common") {
    if (v.is_integral()) return Value::integer(v.as_int());
    char buf[400];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), x);
    return Value::number(std::strtod(buf, nullptr));
  }
  if (method != "ceil" && method != "floor") {
    return make_error(ErrorCode::kInvalidArgument, "method must be common, ceil or floor");
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double r = method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale);
  return Value::number(r / scale);
}

Result<Value> filter_indent(const Value& v, const Params& p) {
  KEEL_ASSIGN_OR_RETURN(std::string s, to_str(v));
  std::string indention(4, ' ');
  if (const Value* w = p.get(0)) {
    if (w->is_string()) {
      indention = w->as_string();
    } else if (w->is_integral()) {
      indention.assign(static_cast<size_t>(std::clamp<int64_t>(w->as_int(), 0, 1024)), ' ');
    }
  }
  s += "\n";  // jinja2 appends a newline so that splitlines keeps a trailing empty line
  std::vector<std::string> lines = py_splitlines(s);
  std::string out;
  if (p.flag(2, false)) {
    for (size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" + indention : "") + lines[k];
  } else {
    out = lines.empty() ? "" : lines[0];
    for (size_t k = 1; k < lines.size(); ++k) out += "\n" + (lines[k].empty() ? "" : indention) + lines[k];
  }
  if (p.flag(1, false)) out = indention + out;
  return Value::string(std::move(out));
}

constexpr std::string_view kFilters[] = {
    "abs",    "attr",   "capitalize", "count", "d",       "default", "dictsort", "e",        "escape",
    "first",  "float",  "indent",     "int",   "items",   "join",    "last",     "length",   "list",
    "lower",  "map",    "max",        "min",   "reject",  "rejectattr", "replace", "reverse", "round",
    "safe",   "select", "selectattr", "sort",  "string",  "sum",     "title",    "tojson",   "trim",
    "unique", "upper",  "wordcount",
};

constexpr std::string_view kTextFilters[] = {"tojson", "length", "count", "trim", "string", "safe", "e", "escape",
                                             "default", "d", "join", "upper", "lower", "capitalize", "title",
                                             "wordcount", "replace"};
constexpr std::string_view kSequenceFilters[] = {"items", "list", "first", "last", "reverse", "select", "reject",
                                                 "selectattr", "rejectattr", "map", "dictsort", "sort", "unique",
                                                 "min", "max"};

bool listed(std::span<const std::string_view> names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Filters in three groups (one signature, so apply_filter can route by name).
Result<Value> apply_text_filter(Interpreter& in, std::string_view name, const Value& v, const CallArgs& args,
                                int line) {
  auto params = [&](std::vector<std::string_view> names) { return bind(args, name, std::move(names)); };
  auto text_filter = [&](auto fn) -> Result<Value> {
    KEEL_ASSIGN_OR_RETURN(Params p, params({}));
    KEEL_ASSIGN_OR_RETURN(std::string s, as_text(v));
    return Value::string(fn(s));
  };
  if (name == "tojson") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"ensure_ascii", "indent", "separators", "sort_keys"}));
    return filter_tojson(v, p);
  }
  if (name == "length" || name == "count") return filter_length(v);
  if (name == "trim") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"chars"}));
    KEEL_ASSIGN_OR_RETURN(std::string s, as_text(v));
    const Value* chars = p.get(0);
    std::string out(py_strip(s, true, true));
    if (chars != nullptr && !chars->is_none()) {
      KEEL_ASSIGN_OR_RETURN(std::string cs, to_str(*chars));
      out = std::string(py_strip_chars(s, cs, true, true));
    }
    return v.is_markup() ? Value::safe_string(std::move(out)) : Value::string(std::move(out));  // Markup.strip
  }
  if (name == "string") {
    if (v.is_string()) return v;  // soft_str keeps Markup
    KEEL_ASSIGN_OR_RETURN(std::string s, as_text(v));
    return Value::string(std::move(s));
  }
  if (name == "safe") {
    KEEL_ASSIGN_OR_RETURN(std::string s, as_text(v));
    return Value::safe_string(std::move(s));
  }
  if (name == "e" || name == "escape") {
    if (v.is_markup()) return v;
    KEEL_ASSIGN_OR_RETURN(std::string s, as_text(v));
    return Value::safe_string(html_escape(s));
  }
  if (name == "default" || name == "d") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"default_value", "boolean"}));
    return filter_default(v, p);
  }
  if (name == "join") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"d", "attribute"}));
    return filter_join(in, v, p, line);
  }
  if (name == "upper") return text_filter([](const std::string& s) { return py_upper(s); });
  if (name == "lower") return text_filter([](const std::string& s) { return py_lower(s); });
  if (name == "capitalize") return text_filter([](const std::string& s) { return py_capitalize(s); });
  if (name == "title") return text_filter([](const std::string& s) { return py_title(s); });
  if (name == "wordcount") {
    KEEL_ASSIGN_OR_RETURN(std::string s, as_text(v));
    return Value::integer(static_cast<int64_t>(py_split_whitespace(s, -1).size()));
  }
  if (name == "replace") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"old", "new", "count"}));
    KEEL_ASSIGN_OR_RETURN(std::string s, as_text(v));
    if (!p.get(0) || !p.get(1)) return make_error(ErrorCode::kInvalidArgument, "replace needs old and new");
    KEEL_ASSIGN_OR_RETURN(std::string old_s, to_str(*p.get(0)));
    KEEL_ASSIGN_OR_RETURN(std::string new_s, to_str(*p.get(1)));
    const int64_t count = p.get(2) && p.get(2)->is_integral() ? p.get(2)->as_int() : -1;
    std::string out = py_replace(s, old_s, new_s, count);
    KEEL_RETURN_IF_ERROR(in.charge_string(out.size()));
    return Value::string(std::move(out));
  }
  return make_error(ErrorCode::kInternal, "filter '{}' has no implementation", name);
}

Result<Value> apply_other_filter(Interpreter& in, std::string_view name, const Value& v, const CallArgs& args,
                                 int line) {
  auto params = [&](std::vector<std::string_view> names) { return bind(args, name, std::move(names)); };
  if (name == "int") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"default", "base"}));
    return filter_int(v, p);
  }
  if (name == "float") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"default"}));
    return filter_float(v, p);
  }
  if (name == "round") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"precision", "method"}));
    return filter_round(v, p);
  }
  if (name == "abs") {
    if (v.is_integral()) {
      if (v.as_int() == INT64_MIN) return make_error(ErrorCode::kOutOfRange, "integer overflow");
      return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.kind() == Kind::kFloat) return Value::number(std::fabs(v.as_double()));
    return make_error(ErrorCode::kInvalidArgument, "bad operand type for abs(): '{}'", v.type_name());
  }
  if (name == "sum") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"attribute", "start"}));
    KEEL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
    Value total = p.get(1) ? *p.get(1) : Value::integer(0);
    for (const Value& item : items) {
      Value x = item;
      if (const Value* attribute = p.get(0); attribute != nullptr && !attribute->is_none()) {
        KEEL_ASSIGN_OR_RETURN(std::string path, to_str(*attribute));
        KEEL_ASSIGN_OR_RETURN(x, get_path(in, item, path, line));
      }
      if (!x.is_numeric() || !total.is_numeric()) {
        return make_error(ErrorCode::kInvalidArgument, "sum: unsupported operand types");
      }
      if (x.is_integral() && total.is_integral()) {
        int64_t r = 0;
        if (__builtin_add_overflow(total.as_int(), x.as_int(), &r)) {
          return make_error(ErrorCode::kOutOfRange, "integer overflow");
        }
        total = Value::integer(r);
      } else {
        total = Value::number(total.as_double() + x.as_double());
      }
    }
    return total;
  }
  if (name == "indent") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"width", "first", "blank"}));
    return filter_indent(v, p);
  }
  if (name == "attr") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"name"}));
    KEEL_ASSIGN_OR_RETURN(std::string attr, p.str(0, ""));
    return in.get_attr(v, attr, line);
  }
  return make_error(ErrorCode::kInternal, "filter '{}' has no implementation", name);
}

}  // namespace

bool is_known_filter(std::string_view name) {
  return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}

Result<Value> apply_filter(Interpreter& in, std::string_view name, const Value& v, const CallArgs& args, int line) {
  // Markup-aware variants of the other filters (escaping their arguments) are not carried.
  static constexpr std::string_view kMarkupSafe[] = {"length", "count", "tojson", "string", "trim", "safe", "e",
                                                     "escape", "default", "d", "list", "wordcount", "first", "last"};
  if (v.is_markup() && !listed(kMarkupSafe, name)) {
    return make_error(ErrorCode::kUnsupported, "filter '{}' on a |safe string", name);
  }
  if (listed(kTextFilters, name)) return apply_text_filter(in, name, v, args, line);
  if (listed(kSequenceFilters, name)) return filter_detail::apply_sequence_filter(in, name, v, args, line);
  if (is_known_filter(name)) return apply_other_filter(in, name, v, args, line);
  return make_error(ErrorCode::kUnsupported, "filter '{}' is not supported", name);
}

}  // namespace keel::tokenizer::jinja

namespace keel::tokenizer::jinja::filter_detail {

Result<Params> bind(const CallArgs& args, std::string_view filter, std::vector<std::string_view> names) {
  Params p(args, filter, std::move(names));
  KEEL_RETURN_IF_ERROR(p.check());
  return p;
}

// jinja2's make_attrgetter: "a.b.0" walks items/attributes.
Result<Value> get_path(Interpreter& in, const Value& item, const std::string& path, int line) {
  Value cur = item;
  for (const std::string& part : py_split(path, ".", -1)) {
    Value key = Value::string(part);
    if (!part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      key = Value::integer(std::strtoll(part.c_str(), nullptr, 10));
    }
    KEEL_ASSIGN_OR_RETURN(cur, in.get_item(cur, key, line));
  }
  return cur;
}

}  // namespace keel::tokenizer::jinja::filter_detail
