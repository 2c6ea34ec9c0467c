// The sequence filters (items ... max), with jinja2's semantics.
#include <algorithm>

#include "tokenizer/template/evaluator.h"
#include "tokenizer/template/filter_params.h"
#include "tokenizer/template/filters.h"
#include "tokenizer/template/is_tests.h"
#include "tokenizer/template/py_text.h"

namespace keel::tokenizer::jinja::filter_detail {
namespace {

Value lower_if(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(py_lower(v.as_string()));
  return v;
}

Status sort_values(std::vector<std::pair<Value, Value>>& keyed, bool reverse) {
  Status error;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    if (!error.ok()) return false;
    auto lt = reverse ? less_than(b.first, a.first) : less_than(a.first, b.first);
    if (!lt.ok()) {
      error = lt.status();
      return false;
    }
    return *lt;
  });
  return error;
}

// select/reject/selectattr/rejectattr.
Result<Value> filter_select(Interpreter& in, const Value& v, const CallArgs& args, bool by_attr, bool keep,
                            int line) {
  List items;
  if (v.truthy()) {  // jinja2: `if seq: for item in seq` (None and empty inputs yield nothing)
    KEEL_ASSIGN_OR_RETURN(items, in.iterate(v, line));
  }
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (args.positional.empty() || !args.positional[0].is_string()) {
      return make_error(ErrorCode::kInvalidArgument, "selectattr/rejectattr need an attribute name");
    }
    attr = args.positional[next++].as_string();
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].is_string()) return make_error(ErrorCode::kInvalidArgument, "test name must be a string");
    test = args.positional[next++].as_string();
    if (!is_known_test(test)) return make_error(ErrorCode::kUnsupported, "test '{}' is not supported", test);
  }
  CallArgs test_args;
  test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end());
  test_args.keyword = args.keyword;
  List out;
  for (const Value& item : items) {
    Value subject = item;
    if (by_attr) {
      KEEL_ASSIGN_OR_RETURN(subject, get_path(in, item, attr, line));
    }
    bool pass = subject.truthy();
    if (!test.empty()) {
      KEEL_ASSIGN_OR_RETURN(pass, apply_test(in, test, subject, test_args, line));
    }
    if (pass == keep) out.push_back(item);
  }
  return Value::generator(std::move(out));
}

Result<Value> filter_map(Interpreter& in, const Value& v, const CallArgs& args, int line) {
  List items;
  if (v.truthy()) {
    KEEL_ASSIGN_OR_RETURN(items, in.iterate(v, line));
  }
  List out;
  if (const Value* attribute = args.find_keyword("attribute")) {
    KEEL_ASSIGN_OR_RETURN(std::string path, to_str(*attribute));
    const Value* dflt = args.find_keyword("default");
    for (const Value& item : items) {
      KEEL_ASSIGN_OR_RETURN(Value got, get_path(in, item, path, line));
      out.push_back(got.is_undefined() && dflt != nullptr ? *dflt : got);
    }
    return Value::generator(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    return make_error(ErrorCode::kInvalidArgument, "map needs a filter name or attribute=");
  }
  const std::string name = args.positional[0].as_string();
  if (!is_known_filter(name)) return make_error(ErrorCode::kUnsupported, "filter '{}' is not supported", name);
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : items) {
    KEEL_ASSIGN_OR_RETURN(Value mapped, apply_filter(in, name, item, rest, line));
    out.push_back(std::move(mapped));
  }
  return Value::generator(std::move(out));
}

Result<Value> filter_dictsort(const Value& v, const Params& p) {
  if (!v.is_dict()) return make_error(ErrorCode::kInvalidArgument, "dictsort expects a dict");
  const bool case_sensitive = p.flag(0, false);
  KEEL_ASSIGN_OR_RETURN(std::string by, p.str(1, "key"));
  if (by != "key" && by != "value") {
    return make_error(ErrorCode::kInvalidArgument, "You can only sort by either 'key' or 'value'");
  }
  std::vector<std::pair<Value, Value>> keyed;
  for (const auto& [key, item] : v.as_dict().items) {
    Value pair = Value::tuple({Value::string(key), item});
    keyed.emplace_back(lower_if(by == "key" ? Value::string(key) : item, case_sensitive), std::move(pair));
  }
  KEEL_RETURN_IF_ERROR(sort_values(keyed, p.flag(2, false)));
  List out;
  for (auto& [key, pair] : keyed) out.push_back(std::move(pair));
  return Value::list(std::move(out));
}

Result<Value> filter_sort(Interpreter& in, const Value& v, const Params& p, int line) {
  KEEL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
  const bool case_sensitive = p.flag(1, false);
  const Value* attribute = p.get(2);
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& item : items) {
    Value key = item;
    if (attribute != nullptr && !attribute->is_none()) {
      KEEL_ASSIGN_OR_RETURN(std::string path, to_str(*attribute));
      KEEL_ASSIGN_OR_RETURN(key, get_path(in, item, path, line));
    }
    keyed.emplace_back(lower_if(key, case_sensitive), item);
  }
  KEEL_RETURN_IF_ERROR(sort_values(keyed, p.flag(0, false)));
  List out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Result<Value> filter_unique(Interpreter& in, const Value& v, const Params& p, int line) {
  KEEL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
  const bool case_sensitive = p.flag(0, false);
  List out;
  List seen;
  for (const Value& item : items) {
    Value key = item;
    if (const Value* attribute = p.get(1); attribute != nullptr && !attribute->is_none()) {
      KEEL_ASSIGN_OR_RETURN(std::string path, to_str(*attribute));
      KEEL_ASSIGN_OR_RETURN(key, get_path(in, item, path, line));
    }
    key = lower_if(key, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::generator(std::move(out));
}

Result<Value> filter_minmax(Interpreter& in, const Value& v, const Params& p, bool want_max, int line) {
  KEEL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const bool case_sensitive = p.flag(0, false);
  size_t best = 0;
  for (size_t k = 1; k < items.size(); ++k) {
    Value a = lower_if(items[k], case_sensitive);
    Value b = lower_if(items[best], case_sensitive);
    KEEL_ASSIGN_OR_RETURN(bool lt, want_max ? less_than(b, a) : less_than(a, b));
    if (lt) best = k;
  }
  return items[best];
}

}  // namespace

Result<Value> apply_sequence_filter(Interpreter& in, std::string_view name, const Value& v, const CallArgs& args,
                                    int line) {
  auto params = [&](std::vector<std::string_view> names) { return bind(args, name, std::move(names)); };
  if (name == "items") {
    if (v.is_undefined()) return Value::generator({});
    if (!v.is_dict()) return make_error(ErrorCode::kInvalidArgument, "items filter expects a mapping");
    List out;
    for (const auto& [key, item] : v.as_dict().items) out.push_back(Value::tuple({Value::string(key), item}));
    return Value::generator(std::move(out));
  }
  if (name == "list") {
    KEEL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
    return Value::list(std::move(items));
  }
  if (name == "first" || name == "last") {
    if (v.kind() == Kind::kIterator) {
      IterState& it = v.as_iter();
      if (name == "last" && it.single_use) {
        return make_error(ErrorCode::kInvalidArgument, "'{}' object is not reversible", it.type_name);
      }
      if (it.pos >= it.items.size()) return Value::undefined(fmt::format("No {} item, sequence was empty.", name));
      if (name == "last") return it.items.back();
      return it.single_use ? it.items[it.pos++] : it.items[it.pos];
    }
    KEEL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
    if (items.empty()) return Value::undefined(fmt::format("No {} item, sequence was empty.", name));
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      KEEL_ASSIGN_OR_RETURN(List chars, in.iterate(v, line));
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it) out += it->as_string();
      return Value::string(std::move(out));
    }
    const bool reversible = v.is_sequence() || v.is_dict() || (v.kind() == Kind::kIterator && !v.as_iter().single_use);
    KEEL_ASSIGN_OR_RETURN(List items, in.iterate(v, line));
    std::reverse(items.begin(), items.end());
    if (!reversible) return Value::list(std::move(items));  // jinja2: list(value) reversed
    IterState it;  // reversed(value): a single-use iterator
    it.items = std::move(items);
    it.type_name = v.is_dict() ? "dict_reversekeyiterator" : "reverseiterator";
    return Value::iterator(std::move(it));
  }
  if (name == "select" || name == "reject") return filter_select(in, v, args, false, name == "select", line);
  if (name == "selectattr" || name == "rejectattr") {
    return filter_select(in, v, args, true, name == "selectattr", line);
  }
  if (name == "map") return filter_map(in, v, args, line);
  if (name == "dictsort") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"case_sensitive", "by", "reverse"}));
    return filter_dictsort(v, p);
  }
  if (name == "sort") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"reverse", "case_sensitive", "attribute"}));
    return filter_sort(in, v, p, line);
  }
  if (name == "unique") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"case_sensitive", "attribute"}));
    return filter_unique(in, v, p, line);
  }
  if (name == "min" || name == "max") {
    KEEL_ASSIGN_OR_RETURN(Params p, params({"case_sensitive"}));
    return filter_minmax(in, v, p, name == "max", line);
  }
  return make_error(ErrorCode::kInternal, "filter '{}' has no implementation", name);
}

}  // namespace keel::tokenizer::jinja::filter_detail
