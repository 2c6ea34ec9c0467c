// Expression evaluation: names, operators with Python semantics, attribute/item access with
// jinja2's fallbacks, slicing, calls, filters and tests.
#include <cmath>

#include "tokenizer/template/evaluator.h"
#include "tokenizer/template/filters.h"
#include "tokenizer/template/is_tests.h"
#include "tokenizer/template/methods.h"
#include "tokenizer/template/py_text.h"

namespace keel::tokenizer::jinja {
namespace {

Status undefined_error(const Value& v, int line) {
  const std::string& hint = v.as_string();
  return make_error(ErrorCode::kInvalidArgument, "line {}: {}", line, hint.empty() ? "undefined value" : hint);
}

Status type_error(int line, std::string_view what, const Value& a, const Value& b) {
  return make_error(ErrorCode::kInvalidArgument, "line {}: unsupported operand type(s) for {}: '{}' and '{}'", line,
                    what, a.type_name(), b.type_name());
}

Result<Value> int_result(bool overflow, int64_t r, int line) {
  if (overflow) return make_error(ErrorCode::kOutOfRange, "line {}: integer overflow", line);
  return Value::integer(r);
}

// Python's slice.indices() followed by the index walk.
std::vector<int64_t> slice_indices(int64_t len, std::optional<int64_t> start, std::optional<int64_t> stop,
                                   int64_t step) {
  const int64_t lower = step > 0 ? 0 : -1;
  const int64_t upper = step > 0 ? len : len - 1;
  auto clamp = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v < 0 ? *v + len : *v;
    return x < lower ? lower : x > upper ? upper : x;
  };
  const int64_t b = clamp(start, step > 0 ? lower : upper);
  const int64_t e = clamp(stop, step > 0 ? upper : lower);
  std::vector<int64_t> out;
  for (int64_t i = b; step > 0 ? i < e : i > e; i += step) out.push_back(i);
  return out;
}

}  // namespace

Value Interpreter::lookup(const std::string& name) const {
  for (size_t k = frames_.size(); k-- > 0;) {
    if (const Value* v = frames_[k].vars.find(name)) return *v;
    if (frames_[k].barrier && k > 0) k = 1;  // continue at the top level (frame 0)
  }
  if (const Value* v = globals_.find(name)) return *v;
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

void Interpreter::set_var(std::string name, Value value) { frames_.back().vars.set(std::move(name), std::move(value)); }

Result<List> Interpreter::iterate(const Value& v, int line) {
  switch (v.kind()) {
    case Kind::kUndefined: return List{};
    case Kind::kList:
    case Kind::kTuple: return v.as_list();
    case Kind::kDict: {
      List keys;
      for (const auto& [key, item] : v.as_dict().items) keys.push_back(Value::string(key));
      return keys;
    }
    case Kind::kIterator: {
      IterState& it = v.as_iter();
      List rest(it.items.begin() + static_cast<std::ptrdiff_t>(it.pos), it.items.end());
      if (it.single_use) it.pos = it.items.size();
      return rest;
    }
    case Kind::kString: {
      const std::string& s = v.as_string();
      KEEL_RETURN_IF_ERROR(at_line(charge_iterations(s.size()), line));
      List chars;
      for (size_t pos = 0; pos < s.size();) {
        const size_t start = pos;
        next_code_point(s, pos);
        chars.push_back(Value::string(s.substr(start, pos - start)));
      }
      return chars;
    }
    default:
      return make_error(ErrorCode::kInvalidArgument, "line {}: '{}' object is not iterable", line, v.type_name());
  }
}

Result<Value> Interpreter::get_attr(const Value& obj, std::string_view name, int line) {
  switch (obj.kind()) {
    case Kind::kUndefined: return undefined_error(obj, line);
    case Kind::kDict: {
      if (auto m = bound_method(obj, name)) return *m;
      if (const Value* v = obj.as_dict().find(name)) return *v;
      return Value::undefined(fmt::format("'dict object' has no attribute '{}'", name));
    }
    case Kind::kObject: {
      const Object& o = obj.as_object();
      if (const Value* v = o.attrs.find(name)) return *v;
      if (o.type == Object::Type::kLoop && name == "cycle") {
        const int64_t index0 = o.attrs.find("index0")->as_int();
        return Value::callable("cycle", [index0](Interpreter&, const CallArgs& args) -> Result<Value> {
          if (args.positional.empty()) {
            return make_error(ErrorCode::kInvalidArgument, "no items for cycling given");
          }
          return args.positional[static_cast<size_t>(index0) % args.positional.size()];
        });
      }
      return Value::undefined(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), name));
    }
    default:
      if (auto m = bound_method(obj, name)) return *m;
      return Value::undefined(fmt::format("'{}' object has no attribute '{}'", obj.type_name(), name));
  }
}

Result<Value> Interpreter::get_item(const Value& obj, const Value& key, int line) {
  if (obj.is_undefined()) return undefined_error(obj, line);
  if (obj.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
      if (auto m = bound_method(obj, key.as_string())) return *m;
    }
    KEEL_ASSIGN_OR_RETURN(std::string r, to_repr(key));
    return Value::undefined(fmt::format("'dict object' has no attribute {}", r));
  }
  if ((obj.is_sequence() || obj.is_string()) && key.is_integral()) {
    int64_t i = key.as_int();
    if (obj.is_sequence()) {
      const List& items = obj.as_list();
      const auto n = static_cast<int64_t>(items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined(fmt::format("{} object has no element {}", obj.type_name(), key.as_int()));
      return items[static_cast<size_t>(i)];
    }
    const std::string& s = obj.as_string();
    const std::vector<size_t> offsets = code_point_offsets(s);
    const auto n = static_cast<int64_t>(offsets.size()) - 1;
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined(fmt::format("str object has no element {}", key.as_int()));
    const auto u = static_cast<size_t>(i);
    return Value::string(s.substr(offsets[u], offsets[u + 1] - offsets[u]));
  }
  if (obj.kind() == Kind::kIterator && obj.as_iter().subscriptable && key.is_integral()) {
    const List& items = obj.as_iter().items;
    int64_t i = key.as_int();
    const auto n = static_cast<int64_t>(items.size());
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::undefined("range object index out of range");
    return items[static_cast<size_t>(i)];
  }
  if (key.is_string()) return get_attr(obj, key.as_string(), line);
  return Value::undefined(fmt::format("'{}' object has no element", obj.type_name()));
}

Result<CallArgs> Interpreter::eval_args(const Expr& e, size_t first_child) {
  CallArgs args;
  for (size_t k = first_child; k < e.children.size(); ++k) {
    KEEL_ASSIGN_OR_RETURN(Value v, eval(*e.children[k]));
    args.positional.push_back(std::move(v));
  }
  for (const auto& [name, expr] : e.kwargs) {
    KEEL_ASSIGN_OR_RETURN(Value v, eval(*expr));
    args.keyword.emplace_back(name, std::move(v));
  }
  return args;
}

Result<Value> Interpreter::call(const Value& callee, const CallArgs& args, int line) {
  if (callee.is_undefined()) return undefined_error(callee, line);
  if (callee.kind() != Kind::kCallable) {
    return make_error(ErrorCode::kInvalidArgument, "line {}: '{}' object is not callable", line, callee.type_name());
  }
  auto r = callee.as_callable().fn(*this, args);
  if (!r.ok()) return at_line(r.status(), line);
  return r;
}

Result<Value> Interpreter::eval_call(const Expr& e) {
  KEEL_ASSIGN_OR_RETURN(Value callee, eval(*e.children[0]));
  KEEL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
  return call(callee, args, e.line);
}

Result<Value> Interpreter::eval_filter(const Expr& e) {
  Value input;
  if (e.children[0]) {
    KEEL_ASSIGN_OR_RETURN(input, eval(*e.children[0]));
  } else if (filter_block_input_ != nullptr) {
    input = *filter_block_input_;
  }
  KEEL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
  auto r = apply_filter(*this, e.name, input, args, e.line);
  if (!r.ok()) return at_line(r.status(), e.line);
  return r;
}

Result<Value> Interpreter::eval_test(const Expr& e) {
  KEEL_ASSIGN_OR_RETURN(Value v, eval(*e.children[0]));
  KEEL_ASSIGN_OR_RETURN(CallArgs args, eval_args(e, 1));
  auto r = apply_test(*this, e.name, v, args, e.line);
  if (!r.ok()) return at_line(r.status(), e.line);
  return Value::boolean(*r != e.negated);
}

Result<Value> Interpreter::eval_slice(const Expr& e) {
  KEEL_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
  if (obj.is_undefined()) return undefined_error(obj, e.line);
  std::optional<int64_t> bounds[3];
  for (int k = 0; k < 3; ++k) {
    if (!e.children[k + 1]) continue;
    KEEL_ASSIGN_OR_RETURN(Value v, eval(*e.children[k + 1]));
    if (v.is_none() || v.is_undefined()) continue;
    if (!v.is_integral()) {
      return make_error(ErrorCode::kInvalidArgument, "line {}: slice indices must be integers or None", e.line);
    }
    bounds[k] = v.as_int();
  }
  const int64_t step = bounds[2].value_or(1);
  if (step == 0) return make_error(ErrorCode::kInvalidArgument, "line {}: slice step cannot be zero", e.line);
  if (obj.is_sequence()) {
    const List& items = obj.as_list();
    List out;
    for (int64_t i : slice_indices(static_cast<int64_t>(items.size()), bounds[0], bounds[1], step)) {
      out.push_back(items[static_cast<size_t>(i)]);
    }
    return obj.kind() == Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (obj.is_string()) {
    const std::string& s = obj.as_string();
    const std::vector<size_t> offsets = code_point_offsets(s);
    std::string out;
    for (int64_t i : slice_indices(static_cast<int64_t>(offsets.size()) - 1, bounds[0], bounds[1], step)) {
      const auto u = static_cast<size_t>(i);
      out.append(s, offsets[u], offsets[u + 1] - offsets[u]);
    }
    return Value::string(std::move(out));
  }
  return make_error(ErrorCode::kInvalidArgument, "line {}: '{}' object is not subscriptable", e.line,
                    obj.type_name());
}

Result<Value> Interpreter::eval_binary(const Expr& e) {
  KEEL_ASSIGN_OR_RETURN(Value a, eval(*e.children[0]));
  KEEL_ASSIGN_OR_RETURN(Value b, eval(*e.children[1]));
  const std::string& op = e.name;
  const int line = e.line;
  if (op == "~") {
    KEEL_ASSIGN_OR_RETURN(std::string x, to_str(a));
    KEEL_ASSIGN_OR_RETURN(std::string y, to_str(b));
    KEEL_RETURN_IF_ERROR(at_line(charge_string(x.size() + y.size()), line));
    return Value::string(x + y);
  }
  if (a.is_undefined()) return undefined_error(a, line);
  if (b.is_undefined()) return undefined_error(b, line);
  const bool ints = a.is_integral() && b.is_integral();
  const bool nums = a.is_numeric() && b.is_numeric();
  int64_t r = 0;
  if (op == "+") {
    if (ints) {
      const bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
      return int_result(overflow, r, line);
    }
    if (nums) return Value::number(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) {
      KEEL_RETURN_IF_ERROR(at_line(charge_string(a.as_string().size() + b.as_string().size()), line));
      if (a.is_markup() || b.is_markup()) {  // Markup + str escapes the plain side
        return Value::safe_string((a.is_markup() ? a.as_string() : html_escape(a.as_string())) +
                                  (b.is_markup() ? b.as_string() : html_escape(b.as_string())));
      }
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is_sequence() && a.kind() == b.kind()) {
      KEEL_RETURN_IF_ERROR(at_line(charge_iterations(a.as_list().size() + b.as_list().size()), line));
      List items = a.as_list();
      items.insert(items.end(), b.as_list().begin(), b.as_list().end());
      return a.kind() == Kind::kTuple ? Value::tuple(std::move(items)) : Value::list(std::move(items));
    }
    return type_error(line, "+", a, b);
  }
  if (op == "-") {
    if (ints) {
      const bool overflow = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
      return int_result(overflow, r, line);
    }
    if (nums) return Value::number(a.as_double() - b.as_double());
    return type_error(line, "-", a, b);
  }
  if (op == "*") {
    if (ints) {
      const bool overflow = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
      return int_result(overflow, r, line);
    }
    if (nums) return Value::number(a.as_double() * b.as_double());
    const Value& seq = b.is_integral() ? a : b;
    const Value& count = b.is_integral() ? b : a;
    if (!count.is_integral() || !(seq.is_string() || seq.is_sequence())) return type_error(line, "*", a, b);
    const int64_t n = std::max<int64_t>(0, count.as_int());
    if (seq.is_string()) {
      const size_t unit = seq.as_string().size();
      if (unit > 0 && static_cast<uint64_t>(n) > options_.limits.max_output_bytes / unit) {
        return at_line(charge_string(options_.limits.max_output_bytes + 1), line);
      }
      KEEL_RETURN_IF_ERROR(at_line(charge_string(unit * static_cast<size_t>(n)), line));
      std::string out;
      for (int64_t k = 0; k < n; ++k) out += seq.as_string();
      return seq.is_markup() ? Value::safe_string(std::move(out)) : Value::string(std::move(out));
    }
    const size_t unit = seq.as_list().size();
    if (unit > 0 && static_cast<uint64_t>(n) > options_.limits.max_loop_iterations / unit) {
      return at_line(charge_iterations(options_.limits.max_loop_iterations + 1), line);
    }
    KEEL_RETURN_IF_ERROR(at_line(charge_iterations(unit * static_cast<uint64_t>(n)), line));
    List out;
    for (int64_t k = 0; k < n; ++k) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
    return seq.kind() == Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
  }
  if (op == "%" && a.is_string()) {
    return make_error(ErrorCode::kUnsupported, "line {}: printf-style '%' string formatting is not supported", line);
  }
  if (!nums) return type_error(line, op, a, b);
  if (op == "**") {
    if (ints && b.as_int() >= 0) {
      int64_t acc = 1;
      int64_t base = a.as_int();
      for (int64_t k = 0; k < b.as_int(); ++k) {
        if (__builtin_mul_overflow(acc, base, &acc)) return int_result(true, 0, line);
        if (acc == 0 || acc == 1) break;
        if (acc == -1) {
          acc = ((b.as_int() - k - 1) % 2 == 0) ? -1 : 1;
          break;
        }
      }
      return Value::integer(acc);
    }
    return Value::number(std::pow(a.as_double(), b.as_double()));
  }
  const bool zero = ints ? b.as_int() == 0 : b.as_double() == 0;
  if (zero) return make_error(ErrorCode::kInvalidArgument, "line {}: division by zero", line);
  if (op == "/") return Value::number(a.as_double() / b.as_double());
  if (op == "//") {
    if (ints) {
      if (a.as_int() == INT64_MIN && b.as_int() == -1) return int_result(true, 0, line);
      int64_t q = a.as_int() / b.as_int();
      if ((a.as_int() % b.as_int() != 0) && ((a.as_int() < 0) != (b.as_int() < 0))) --q;
      return Value::integer(q);
    }
    return Value::number(std::floor(a.as_double() / b.as_double()));
  }
  if (op == "%") {
    if (ints) {
      if (b.as_int() == -1) return Value::integer(0);
      int64_t m = a.as_int() % b.as_int();
      if (m != 0 && ((m < 0) != (b.as_int() < 0))) m += b.as_int();
      return Value::integer(m);
    }
    double m = std::fmod(a.as_double(), b.as_double());
    if (m != 0 && ((m < 0) != (b.as_double() < 0))) m += b.as_double();
    return Value::number(m);
  }
  return make_error(ErrorCode::kInternal, "line {}: unknown operator '{}'", line, op);
}

namespace {

Result<bool> contains(const Value& container, const Value& item, int line) {
  switch (container.kind()) {
    case Kind::kUndefined: return false;
    case Kind::kString:
      if (!item.is_string()) {
        return make_error(ErrorCode::kInvalidArgument, "line {}: 'in <string>' requires string as left operand",
                          line);
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::kList:
    case Kind::kTuple:
      for (const Value& v : container.as_list()) {
        if (v.equals(item)) return true;
      }
      return false;
    case Kind::kDict: return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
    case Kind::kIterator: {
      IterState& it = container.as_iter();
      for (size_t k = it.pos; k < it.items.size(); ++k) {
        if (!it.items[k].equals(item)) continue;
        if (it.single_use) it.pos = k + 1;  // Python's `in` consumes a generator up to the match
        return true;
      }
      if (it.single_use) it.pos = it.items.size();
      return false;
    }
    default:
      return make_error(ErrorCode::kInvalidArgument, "line {}: argument of type '{}' is not iterable", line,
                        container.type_name());
  }
}

}  // namespace

Result<Value> Interpreter::eval_compare(const Expr& e) {
  KEEL_ASSIGN_OR_RETURN(Value left, eval(*e.children[0]));
  for (size_t k = 0; k < e.ops.size(); ++k) {
    KEEL_ASSIGN_OR_RETURN(Value right, eval(*e.children[k + 1]));
    const std::string& op = e.ops[k];
    bool r = false;
    if (op == "==" || op == "!=") {
      r = left.equals(right) == (op == "==");
    } else if (op == "in" || op == "notin") {
      KEEL_ASSIGN_OR_RETURN(bool c, contains(right, left, e.line));
      r = c == (op == "in");
    } else {
      if (left.is_undefined()) return undefined_error(left, e.line);
      if (right.is_undefined()) return undefined_error(right, e.line);
      Result<bool> lt = (op == "<" || op == ">=") ? less_than(left, right) : less_than(right, left);
      if (!lt.ok()) return at_line(lt.status(), e.line);
      r = (op == "<" || op == ">") ? *lt : !*lt;
    }
    if (!r) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Result<Value> Interpreter::eval(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.value;
    case Expr::Kind::kName: return lookup(e.name);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      List items;
      for (const ExprPtr& c : e.children) {
        KEEL_ASSIGN_OR_RETURN(Value v, eval(*c));
        items.push_back(std::move(v));
      }
      return e.kind == Expr::Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case Expr::Kind::kDict: {
      Dict d;
      for (size_t k = 0; k + 1 < e.children.size(); k += 2) {
        KEEL_ASSIGN_OR_RETURN(Value key, eval(*e.children[k]));
        KEEL_ASSIGN_OR_RETURN(Value value, eval(*e.children[k + 1]));
        if (!key.is_string()) {
          return make_error(ErrorCode::kUnsupported, "line {}: dict keys other than strings are not supported",
                            e.line);
        }
        d.set(key.as_string(), std::move(value));
      }
      return Value::dict(std::move(d));
    }
    case Expr::Kind::kAttr: {
      KEEL_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
      return get_attr(obj, e.name, e.line);
    }
    case Expr::Kind::kItem: {
      KEEL_ASSIGN_OR_RETURN(Value obj, eval(*e.children[0]));
      KEEL_ASSIGN_OR_RETURN(Value key, eval(*e.children[1]));
      return get_item(obj, key, e.line);
    }
    case Expr::Kind::kSlice: return eval_slice(e);
    case Expr::Kind::kCall: return eval_call(e);
    case Expr::Kind::kFilter: return eval_filter(e);
    case Expr::Kind::kTest: return eval_test(e);
    case Expr::Kind::kNeg:
    case Expr::Kind::kPos: {
      KEEL_ASSIGN_OR_RETURN(Value v, eval(*e.children[0]));
      if (v.is_undefined()) return undefined_error(v, e.line);
      const bool neg = e.kind == Expr::Kind::kNeg;
      if (v.is_integral()) {
        if (neg && v.as_int() == INT64_MIN) return int_result(true, 0, e.line);
        return Value::integer(neg ? -v.as_int() : v.as_int());
      }
      if (v.kind() == Kind::kFloat) return Value::number(neg ? -v.as_double() : v.as_double());
      return make_error(ErrorCode::kInvalidArgument, "line {}: bad operand type for unary {}: '{}'", e.line,
                        neg ? "-" : "+", v.type_name());
    }
    case Expr::Kind::kNot: {
      KEEL_ASSIGN_OR_RETURN(Value v, eval(*e.children[0]));
      return Value::boolean(!v.truthy());
    }
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr: {
      KEEL_ASSIGN_OR_RETURN(Value l, eval(*e.children[0]));
      if (l.truthy() == (e.kind == Expr::Kind::kOr)) return l;
      return eval(*e.children[1]);
    }
    case Expr::Kind::kBinary: return eval_binary(e);
    case Expr::Kind::kCompare: return eval_compare(e);
    case Expr::Kind::kCond: {
      KEEL_ASSIGN_OR_RETURN(Value c, eval(*e.children[1]));
      if (c.truthy()) return eval(*e.children[0]);
      if (e.children[2]) return eval(*e.children[2]);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
  }
  return make_error(ErrorCode::kInternal, "line {}: unknown expression", e.line);
}

}  // namespace keel::tokenizer::jinja
