#include "tokenizer/template/is_tests.h"

#include <algorithm>

#include "tokenizer/template/evaluator.h"
#include "tokenizer/template/py_text.h"

namespace keel::tokenizer::jinja {
namespace {

constexpr std::string_view kTests[] = {
    "defined", "undefined", "none",    "boolean",  "false",      "true",   "integer", "float",  "number",
    "string",  "mapping",   "iterable", "sequence", "callable",  "sameas", "escaped", "lower",  "upper",
    "divisibleby", "even",  "odd",     "eq",       "equalto",    "==",     "ne",      "!=",     "lt",
    "lessthan", "<",        "le",      "<=",       "gt",         "greaterthan", ">",  "ge",     ">=",
    "in",
};

Result<const Value*> one_arg(const CallArgs& args, std::string_view test) {
  if (args.positional.size() + args.keyword.size() != 1) {
    return make_error(ErrorCode::kInvalidArgument, "test '{}' takes one argument", test);
  }
  return args.positional.empty() ? &args.keyword[0].second : &args.positional[0];
}

bool is_sameas(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kNone: return true;
    case Kind::kBool: return a.as_bool() == b.as_bool();
    case Kind::kInt: return a.as_int() == b.as_int() && a.as_int() >= -5 && a.as_int() <= 256;  // CPython's cache
    case Kind::kObject: return a.object_ptr() == b.object_ptr();
    default: return false;
  }
}

// Python `%` for the integer tests.
Result<int64_t> py_mod(const Value& v, int64_t m) {
  if (!v.is_integral()) return make_error(ErrorCode::kInvalidArgument, "test expects an integer, got '{}'", v.type_name());
  if (m == 0) return make_error(ErrorCode::kInvalidArgument, "integer modulo by zero");
  if (m == -1) return 0;
  int64_t r = v.as_int() % m;
  if (r != 0 && ((r < 0) != (m < 0))) r += m;
  return r;
}

}  // namespace

bool is_known_test(std::string_view name) {
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

Result<bool> apply_test(Interpreter& in, std::string_view name, const Value& v, const CallArgs& args, int line) {
  const Kind k = v.kind();
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return k == Kind::kNone;
  if (name == "boolean") return k == Kind::kBool;
  if (name == "false") return k == Kind::kBool && !v.as_bool();
  if (name == "true") return k == Kind::kBool && v.as_bool();
  if (name == "integer") return k == Kind::kInt;
  if (name == "float") return k == Kind::kFloat;
  if (name == "number") return v.is_numeric();
  if (name == "string") return k == Kind::kString;
  if (name == "mapping") return k == Kind::kDict;
  // Undefined supports iter() and len() in jinja2, so it passes these two.
  if (name == "iterable") {
    return k == Kind::kUndefined || k == Kind::kString || v.is_sequence() || k == Kind::kDict ||
           k == Kind::kIterator || (k == Kind::kObject && v.as_object().type == Object::Type::kLoop);
  }
  if (name == "sequence") {
    return k == Kind::kUndefined || k == Kind::kString || v.is_sequence() || k == Kind::kDict ||
           (k == Kind::kIterator && v.as_iter().subscriptable);
  }
  if (name == "callable") {
    return k == Kind::kCallable || (k == Kind::kObject && v.as_object().type == Object::Type::kLoop);
  }
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    KEEL_ASSIGN_OR_RETURN(std::string s, to_str(v));
    // str.islower(): has a cased character and none of the other case.
    const std::string lowered = py_lower(s);
    const std::string uppered = py_upper(s);
    const bool has_cased = lowered != uppered;
    return has_cased && (name == "lower" ? s == lowered : s == uppered);
  }
  if (name == "even" || name == "odd") {
    KEEL_ASSIGN_OR_RETURN(int64_t r, py_mod(v, 2));
    return (r == 0) == (name == "even");
  }
  KEEL_ASSIGN_OR_RETURN(const Value* arg, one_arg(args, name));
  if (name == "divisibleby") {
    if (!arg->is_integral()) return make_error(ErrorCode::kInvalidArgument, "divisibleby expects an integer");
    KEEL_ASSIGN_OR_RETURN(int64_t r, py_mod(v, arg->as_int()));
    return r == 0;
  }
  if (name == "sameas") return is_sameas(v, *arg);
  if (name == "eq" || name == "equalto" || name == "==") return v.equals(*arg);
  if (name == "ne" || name == "!=") return !v.equals(*arg);
  if (name == "in") {
    if (arg->is_string()) {
      if (!v.is_string()) return make_error(ErrorCode::kInvalidArgument, "'in <string>' requires string as left operand");
      return arg->as_string().find(v.as_string()) != std::string::npos;
    }
    if (arg->is_dict()) return v.is_string() && arg->as_dict().find(v.as_string()) != nullptr;
    KEEL_ASSIGN_OR_RETURN(List items, in.iterate(*arg, line));
    return std::any_of(items.begin(), items.end(), [&](const Value& x) { return x.equals(v); });
  }
  if (v.is_undefined() || arg->is_undefined()) {
    return make_error(ErrorCode::kInvalidArgument, "comparison with an undefined value");
  }
  if (name == "lt" || name == "lessthan" || name == "<") return less_than(v, *arg);
  if (name == "gt" || name == "greaterthan" || name == ">") return less_than(*arg, v);
  if (name == "le" || name == "<=") {
    KEEL_ASSIGN_OR_RETURN(bool gt, less_than(*arg, v));
    return !gt;
  }
  if (name == "ge" || name == ">=") {
    KEEL_ASSIGN_OR_RETURN(bool lt, less_than(v, *arg));
    return !lt;
  }
  return make_error(ErrorCode::kUnsupported, "test '{}' is not supported", name);
}

}  // namespace keel::tokenizer::jinja
