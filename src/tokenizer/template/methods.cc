#include "tokenizer/template/methods.h"

#include <algorithm>
#include <array>

#include "tokenizer/template/evaluator.h"
#include "tokenizer/template/py_text.h"

namespace keel::tokenizer::jinja {
namespace {

using Fn = std::function<Result<Value>(Interpreter&, const CallArgs&)>;

Status arity(const CallArgs& args, std::string_view method, size_t max_args) {
  if (!args.keyword.empty() && method != "str.split" && method != "str.rsplit" && method != "str.replace") {
    return make_error(ErrorCode::kInvalidArgument, "{}() takes no keyword arguments", method);
  }
  if (args.positional.size() + args.keyword.size() > max_args) {
    return make_error(ErrorCode::kInvalidArgument, "{}() takes at most {} argument(s)", method, max_args);
  }
  return Status::ok_status();
}

// Positional argument i or keyword `name`; nullptr when absent (None counts as absent).
const Value* arg(const CallArgs& args, size_t i, std::string_view name) {
  const Value* v = i < args.positional.size() ? &args.positional[i] : args.find_keyword(name);
  return (v == nullptr || v->is_none()) ? nullptr : v;
}

Result<std::string> str_arg(const CallArgs& args, size_t i, std::string_view name, std::string_view method) {
  const Value* v = arg(args, i, name);
  if (v == nullptr || !v->is_string()) {
    return make_error(ErrorCode::kInvalidArgument, "{}() argument {} must be str", method, i + 1);
  }
  return v->as_string();
}

Value string_list(std::vector<std::string> parts) {
  List items;
  items.reserve(parts.size());
  for (auto& p : parts) items.push_back(Value::string(std::move(p)));
  return Value::list(std::move(items));
}

Result<Value> affix_test(const std::string& s, const CallArgs& args, bool prefix) {
  const char* method = prefix ? "str.startswith" : "str.endswith";
  KEEL_RETURN_IF_ERROR(arity(args, method, 1));
  const Value* a = arg(args, 0, "");
  if (a == nullptr) return make_error(ErrorCode::kInvalidArgument, "{}() takes one argument", method);
  List candidates = a->is_sequence() ? a->as_list() : List{*a};
  for (const Value& c : candidates) {
    if (!c.is_string()) return make_error(ErrorCode::kInvalidArgument, "{}() expects str or a tuple of str", method);
    if (prefix ? s.starts_with(c.as_string()) : s.ends_with(c.as_string())) return Value::boolean(true);
  }
  return Value::boolean(false);
}

Result<Value> str_split(const std::string& s, const CallArgs& args, bool from_right) {
  const char* method = from_right ? "str.rsplit" : "str.split";
  KEEL_RETURN_IF_ERROR(arity(args, method, 2));
  const Value* maxsplit = arg(args, 1, "maxsplit");
  const int64_t n = maxsplit && maxsplit->is_integral() ? maxsplit->as_int() : -1;
  const Value* sep = arg(args, 0, "sep");
  if (sep == nullptr) {
    if (from_right && n >= 0) return make_error(ErrorCode::kUnsupported, "str.rsplit(None, maxsplit)");
    return string_list(py_split_whitespace(s, n));
  }
  if (!sep->is_string()) return make_error(ErrorCode::kInvalidArgument, "{}() separator must be str", method);
  if (sep->as_string().empty()) return make_error(ErrorCode::kInvalidArgument, "{}(): empty separator", method);
  return string_list(from_right ? py_rsplit(s, sep->as_string(), n) : py_split(s, sep->as_string(), n));
}

Result<Value> str_strip(const std::string& s, const CallArgs& args, bool left, bool right) {
  KEEL_RETURN_IF_ERROR(arity(args, "str.strip", 1));
  const Value* chars = arg(args, 0, "chars");
  if (chars == nullptr) return Value::string(std::string(py_strip(s, left, right)));
  if (!chars->is_string()) return make_error(ErrorCode::kInvalidArgument, "strip arg must be None or str");
  return Value::string(std::string(py_strip_chars(s, chars->as_string(), left, right)));
}

Result<Value> str_find(const std::string& s, const CallArgs& args, bool from_right, bool must_find) {
  KEEL_RETURN_IF_ERROR(arity(args, "str.find", 1));
  KEEL_ASSIGN_OR_RETURN(std::string sub, str_arg(args, 0, "sub", "str.find"));
  const size_t at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string::npos) {
    if (must_find) return make_error(ErrorCode::kInvalidArgument, "substring not found");
    return Value::integer(-1);
  }
  return Value::integer(static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, at))));
}

template <typename Pred>
Result<Value> str_all(const std::string& s, Pred pred) {
  if (s.empty()) return Value::boolean(false);
  if (!is_ascii(s)) return make_error(ErrorCode::kUnsupported, "str.is*() on non-ASCII text");
  return Value::boolean(std::all_of(s.begin(), s.end(), pred));
}

std::optional<Fn> string_method(const std::string& s, std::string_view name) {
  auto no_args = [](std::string_view method, auto fn) -> Fn {
    return [method, fn](Interpreter&, const CallArgs& args) -> Result<Value> {
      KEEL_RETURN_IF_ERROR(arity(args, method, 0));
      return fn();
    };
  };
  if (name == "startswith" || name == "endswith") {
    const bool prefix = name == "startswith";
    return [s, prefix](Interpreter&, const CallArgs& args) { return affix_test(s, args, prefix); };
  }
  if (name == "split" || name == "rsplit") {
    const bool right = name == "rsplit";
    return [s, right](Interpreter&, const CallArgs& args) { return str_split(s, args, right); };
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const bool left = name != "rstrip";
    const bool right = name != "lstrip";
    return [s, left, right](Interpreter&, const CallArgs& args) { return str_strip(s, args, left, right); };
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    const bool right = name[0] == 'r';
    const bool must = name.ends_with("index");
    return [s, right, must](Interpreter&, const CallArgs& args) { return str_find(s, args, right, must); };
  }
  if (name == "replace") {
    return [s](Interpreter& in, const CallArgs& args) -> Result<Value> {
      KEEL_RETURN_IF_ERROR(arity(args, "str.replace", 3));
      KEEL_ASSIGN_OR_RETURN(std::string old_s, str_arg(args, 0, "old", "str.replace"));
      KEEL_ASSIGN_OR_RETURN(std::string new_s, str_arg(args, 1, "new", "str.replace"));
      const Value* count = arg(args, 2, "count");
      std::string out = py_replace(s, old_s, new_s, count && count->is_integral() ? count->as_int() : -1);
      KEEL_RETURN_IF_ERROR(in.charge_string(out.size()));
      return Value::string(std::move(out));
    };
  }
  if (name == "count") {
    return [s](Interpreter&, const CallArgs& args) -> Result<Value> {
      KEEL_RETURN_IF_ERROR(arity(args, "str.count", 1));
      KEEL_ASSIGN_OR_RETURN(std::string sub, str_arg(args, 0, "sub", "str.count"));
      if (sub.empty()) return Value::integer(static_cast<int64_t>(code_point_count(s)) + 1);
      return Value::integer(static_cast<int64_t>(py_split(s, sub, -1).size()) - 1);
    };
  }
  if (name == "join") {
    return [s](Interpreter& in, const CallArgs& args) -> Result<Value> {
      KEEL_RETURN_IF_ERROR(arity(args, "str.join", 1));
      if (args.positional.empty()) return make_error(ErrorCode::kInvalidArgument, "str.join() takes one argument");
      KEEL_ASSIGN_OR_RETURN(List items, in.iterate(args.positional[0], 0));
      std::string out;
      for (size_t k = 0; k < items.size(); ++k) {
        if (!items[k].is_string()) {
          return make_error(ErrorCode::kInvalidArgument, "sequence item {}: expected str instance", k);
        }
        if (k > 0) out += s;
        out += items[k].as_string();
        KEEL_RETURN_IF_ERROR(in.charge_string(out.size()));
      }
      return Value::string(std::move(out));
    };
  }
  if (name == "upper") return no_args("str.upper", [s] { return Value::string(py_upper(s)); });
  if (name == "lower") return no_args("str.lower", [s] { return Value::string(py_lower(s)); });
  if (name == "title") return no_args("str.title", [s] { return Value::string(py_title(s)); });
  if (name == "capitalize") return no_args("str.capitalize", [s] { return Value::string(py_capitalize(s)); });
  if (name == "splitlines") return no_args("str.splitlines", [s] { return string_list(py_splitlines(s)); });
  if (name == "isspace") {
    return no_args("str.isspace", [s]() -> Result<Value> {
      if (s.empty()) return Value::boolean(false);
      for (size_t pos = 0; pos < s.size();) {
        if (!is_py_space(next_code_point(s, pos))) return Value::boolean(false);
      }
      return Value::boolean(true);
    });
  }
  if (name == "isdigit") return no_args("str.isdigit", [s] { return str_all(s, [](char c) { return c >= '0' && c <= '9'; }); });
  if (name == "isalpha") {
    return no_args("str.isalpha", [s] { return str_all(s, [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }); });
  }
  if (name == "isalnum") {
    return no_args("str.isalnum", [s] { return str_all(s, [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }); });
  }
  if (name == "format") {
    return [](Interpreter&, const CallArgs&) -> Result<Value> {
      return make_error(ErrorCode::kUnsupported, "str.format() is not supported");
    };
  }
  return std::nullopt;
}

Fn refuse(std::string_view type, std::string_view name) {
  return [msg = fmt::format("{}.{}() would modify a value; chat templates are immutable (transformers' sandbox)",
                            type, name)](Interpreter&, const CallArgs&) -> Result<Value> {
    return Status(ErrorCode::kInvalidArgument, msg);
  };
}

std::optional<Fn> dict_method(const Value& d, std::string_view name) {
  if (name == "get") {
    return [d](Interpreter&, const CallArgs& args) -> Result<Value> {
      if (args.positional.empty() || args.positional.size() > 2 || !args.keyword.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "dict.get() takes 1 or 2 positional arguments");
      }
      const Value& key = args.positional[0];
      if (key.is_string()) {
        if (const Value* v = d.as_dict().find(key.as_string())) return *v;
      }
      return args.positional.size() == 2 ? args.positional[1] : Value::none();
    };
  }
  if (name == "items" || name == "keys" || name == "values") {
    const int which = name == "items" ? 0 : name == "keys" ? 1 : 2;
    return [d, which](Interpreter&, const CallArgs& args) -> Result<Value> {
      KEEL_RETURN_IF_ERROR(arity(args, "dict.items", 0));
      IterState view;
      view.single_use = false;
      view.has_len = true;
      view.type_name = which == 0 ? "dict_items" : which == 1 ? "dict_keys" : "dict_values";
      for (const auto& [key, item] : d.as_dict().items) {
        if (which == 0) view.items.push_back(Value::tuple({Value::string(key), item}));
        if (which == 1) view.items.push_back(Value::string(key));
        if (which == 2) view.items.push_back(item);
      }
      return Value::iterator(std::move(view));
    };
  }
  if (name == "copy") return [d](Interpreter&, const CallArgs&) -> Result<Value> { return d; };
  static constexpr std::array<std::string_view, 6> kMutating = {"pop", "popitem", "setdefault", "update", "clear",
                                                                "fromkeys"};
  if (std::find(kMutating.begin(), kMutating.end(), name) != kMutating.end()) return refuse("dict", name);
  return std::nullopt;
}

std::optional<Fn> list_method(const Value& l, std::string_view name) {
  if (name == "index" || name == "count") {
    const bool index = name == "index";
    return [l, index](Interpreter&, const CallArgs& args) -> Result<Value> {
      if (args.positional.size() != 1 || !args.keyword.empty()) {
        return make_error(ErrorCode::kInvalidArgument, "list.{}() takes exactly one argument", index ? "index" : "count");
      }
      int64_t n = 0;
      const List& items = l.as_list();
      for (size_t k = 0; k < items.size(); ++k) {
        if (!items[k].equals(args.positional[0])) continue;
        if (index) return Value::integer(static_cast<int64_t>(k));
        ++n;
      }
      if (index) return make_error(ErrorCode::kInvalidArgument, "list.index(x): x not in list");
      return Value::integer(n);
    };
  }
  if (name == "copy") return [l](Interpreter&, const CallArgs&) -> Result<Value> { return Value::list(l.as_list()); };
  static constexpr std::array<std::string_view, 8> kMutating = {"append", "extend", "insert", "pop",
                                                                "remove", "reverse", "sort", "clear"};
  if (std::find(kMutating.begin(), kMutating.end(), name) != kMutating.end()) return refuse("list", name);
  return std::nullopt;
}

}  // namespace

std::optional<Value> bound_method(const Value& obj, std::string_view name) {
  std::optional<Fn> fn;
  if (obj.is_markup()) {
    fn = [name = std::string(name)](Interpreter&, const CallArgs&) -> Result<Value> {
      return make_error(ErrorCode::kUnsupported, "str.{}() on a |safe string", name);
    };
  } else if (obj.is_string()) {
    fn = string_method(obj.as_string(), name);
  }
  if (obj.is_dict()) fn = dict_method(obj, name);
  if (obj.is_sequence()) fn = list_method(obj, name);
  if (!fn) return std::nullopt;
  return Value::callable(std::string(obj.type_name()) + "." + std::string(name), std::move(*fn));
}

}  // namespace keel::tokenizer::jinja
