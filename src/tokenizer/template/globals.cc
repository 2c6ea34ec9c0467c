#include "tokenizer/template/globals.h"

#include <ctime>

#include "tokenizer/template/evaluator.h"

namespace keel::tokenizer::jinja {
namespace {

Result<Value> range_fn(Interpreter& in, const CallArgs& args) {
  if (!args.keyword.empty() || args.positional.empty() || args.positional.size() > 3) {
    return make_error(ErrorCode::kInvalidArgument, "range() takes 1 to 3 positional arguments");
  }
  for (const Value& v : args.positional) {
    if (!v.is_integral()) return make_error(ErrorCode::kInvalidArgument, "range() arguments must be integers");
  }
  const auto& p = args.positional;
  const int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  const int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  const int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  if (step == 0) return make_error(ErrorCode::kInvalidArgument, "range() arg 3 must not be zero");
  uint64_t n = 0;
  if (step > 0 && start < stop) {
    n = (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) / static_cast<uint64_t>(step) + 1;
  } else if (step < 0 && start > stop) {
    const uint64_t magnitude = static_cast<uint64_t>(-(step + 1)) + 1;
    n = (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) / magnitude + 1;
  }
  if (n > in.options().limits.max_loop_iterations) {
    return make_error(ErrorCode::kResourceExhausted, "range() of more than {} items (render limit)",
                      in.options().limits.max_loop_iterations);
  }
  KEEL_RETURN_IF_ERROR(in.charge_iterations(n));
  IterState range;
  range.single_use = false;
  range.has_len = true;
  range.subscriptable = true;
  range.type_name = "range";
  range.repr = step == 1 ? fmt::format("range({}, {})", start, stop) : fmt::format("range({}, {}, {})", start, stop, step);
  range.items.reserve(static_cast<size_t>(n));
  int64_t x = start;
  for (uint64_t k = 0; k < n; ++k, x = k < n ? x + step : x) range.items.push_back(Value::integer(x));
  return Value::iterator(std::move(range));
}

// namespace(dict?, **kwargs) and dict(**kwargs) share their argument handling.
Result<Dict> attrs_from_args(const CallArgs& args, std::string_view fn) {
  Dict attrs;
  if (args.positional.size() > 1) {
    return make_error(ErrorCode::kInvalidArgument, "{}() takes at most one positional argument", fn);
  }
  if (args.positional.size() == 1) {
    const Value& init = args.positional[0];
    if (!init.is_dict()) return make_error(ErrorCode::kUnsupported, "{}() from a non-dict positional argument", fn);
    attrs = init.as_dict();
  }
  for (const auto& [key, value] : args.keyword) attrs.set(key, value);
  return attrs;
}

Result<Value> namespace_fn(Interpreter&, const CallArgs& args) {
  KEEL_ASSIGN_OR_RETURN(Dict attrs, attrs_from_args(args, "namespace"));
  for (const auto& [key, value] : attrs.items) {
    if (key.starts_with("_")) {
      return make_error(ErrorCode::kInvalidArgument,
                        "chat templates cannot store underscore-prefixed attributes on a namespace ('{}')", key);
    }
  }
  auto ns = std::make_shared<Object>();
  ns->type = Object::Type::kNamespace;
  ns->attrs = std::move(attrs);
  return Value::object(std::move(ns));
}

Result<Value> dict_fn(Interpreter&, const CallArgs& args) {
  KEEL_ASSIGN_OR_RETURN(Dict d, attrs_from_args(args, "dict"));
  return Value::dict(std::move(d));
}

Result<Value> raise_exception_fn(Interpreter&, const CallArgs& args) {
  std::string message;
  if (!args.positional.empty()) {
    KEEL_ASSIGN_OR_RETURN(message, to_str(args.positional[0]));
  }
  return make_error(ErrorCode::kInvalidArgument, "raise_exception: {}", message);
}

Result<Value> strftime_now_fn(Interpreter& in, const CallArgs& args) {
  if (args.positional.size() != 1 || !args.positional[0].is_string() || !args.keyword.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "strftime_now() takes one format string");
  }
  std::tm tm{};
  if (in.options().now) {
    tm = *in.options().now;
  } else {
    const std::time_t t = std::time(nullptr);
    localtime_r(&t, &tm);
  }
  const std::string& format = args.positional[0].as_string();
  if (format.size() > 256) return make_error(ErrorCode::kInvalidArgument, "strftime_now() format too long");
  if (format.empty()) return Value::string("");
  char buf[4096];
  const size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &tm);
  if (n == 0) return make_error(ErrorCode::kInvalidArgument, "strftime_now(): format produced no text");
  return Value::string(std::string(buf, n));
}

}  // namespace

Dict make_globals() {
  Dict g;
  g.set("range", Value::callable("range", range_fn));
  g.set("namespace", Value::callable("namespace", namespace_fn));
  g.set("dict", Value::callable("dict", dict_fn));
  g.set("raise_exception", Value::callable("raise_exception", raise_exception_fn));
  g.set("strftime_now", Value::callable("strftime_now", strftime_now_fn));
  return g;
}

}  // namespace keel::tokenizer::jinja
