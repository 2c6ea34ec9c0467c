// The values a chat template computes with, modelled on the Python objects jinja2 sees: Undefined,
// None, bool, int (int64, overflow is an error), float, str (UTF-8), list, tuple, dict (insertion
// ordered, string keys), namespace/loop objects and callables. Used by the evaluator, filters, tests
// and methods of template/; converted from and to the JSON render context. Lists, tuples and dicts
// are immutable and shared; namespaces are shared and mutable within one render (one thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace keel::tokenizer::jinja {

class Interpreter;
class Value;

enum class Kind {
  kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict, kObject, kCallable,
  kIterator,  // a generator (map/select/...), reversed(), dict view or range: see IterState
};

using List = std::vector<Value>;

// Insertion-ordered string-keyed map (chat contexts are small: linear lookup).
struct Dict {
  std::vector<std::pair<std::string, Value>> items;
  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(std::string key, Value value);  // replaces in place or appends
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  const Value* find_keyword(std::string_view name) const;
};

struct Callable {
  std::string name;
  std::function<Result<Value>(Interpreter&, const CallArgs&)> fn;
};

// `namespace(...)` (attributes assignable with `set ns.x = ...`) and the read-only `loop` object.
struct Object {
  enum class Type { kNamespace, kLoop };
  Type type = Type::kNamespace;
  Dict attrs;
};

// Python iterables that are not lists: jinja2's map/select/reject/unique/items filters return
// generators (single use, always truthy, no len(), unprintable, not JSON), reverse returns a reverse
// iterator, dict.items()/keys()/values() return views and range() a range (multi-use, with len()).
struct IterState {
  List items;
  size_t pos = 0;              // single-use iterators: items before pos are consumed
  bool single_use = true;
  bool has_len = false;
  bool subscriptable = false;  // range
  std::string type_name;       // "generator", "dict_items", "range", ...
  std::string repr;            // range's printed form
};

class Value {
 public:
  Value() = default;  // Undefined
  static Value undefined(std::string hint = {});
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  // markupsafe.Markup (what `|safe` and `|escape` return): `+` with a plain str escapes the str.
  static Value safe_string(std::string s);
  static Value list(List items);
  static Value tuple(List items);
  static Value dict(Dict d);
  static Value object(std::shared_ptr<Object> o);
  static Value callable(std::string name, std::function<Result<Value>(Interpreter&, const CallArgs&)> fn);
  static Value iterator(IterState state);
  static Value generator(List items);  // what jinja2's map/select/... filters return

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_markup() const { return kind_ == Kind::kString && b_; }
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  // bool, int and float (Python's bool is an int).
  bool is_numeric() const { return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_integral() const { return kind_ == Kind::kBool || kind_ == Kind::kInt; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }  // bool or int
  double as_double() const { return kind_ == Kind::kFloat ? d_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return s_; }  // string; for Undefined: its hint
  const List& as_list() const { return *list_; }        // list or tuple
  const Dict& as_dict() const { return *dict_; }
  Object& as_object() const { return *object_; }
  const std::shared_ptr<Object>& object_ptr() const { return object_; }
  const Callable& as_callable() const { return *callable_; }
  IterState& as_iter() const { return *iter_; }

  // Python truthiness (Undefined is false).
  bool truthy() const;
  // Python `==` (1 == 1.0 == True, deep for containers, list != tuple, Undefined == Undefined).
  bool equals(const Value& other) const;
  // Python type name for messages: "str", "dict", "undefined", ...
  std::string_view type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::shared_ptr<const List> list_;
  std::shared_ptr<const Dict> dict_;
  std::shared_ptr<Object> object_;
  std::shared_ptr<const Callable> callable_;
  std::shared_ptr<IterState> iter_;
};

// Python `str(v)`: what `{{ v }}` prints. Undefined prints as ""; callables are an error.
Result<std::string> to_str(const Value& v);
// Python `repr(v)` (strings quoted), used inside containers.
Result<std::string> to_repr(const Value& v);
// Python `<`: numbers, strings (code point order), sequences of the same kind; else a type error.
Result<bool> less_than(const Value& a, const Value& b);

// JSON → Value. Integers beyond int64 and binary values are kUnsupported (never silently changed).
Result<Value> from_json(const nlohmann::ordered_json& j);

}  // namespace keel::tokenizer::jinja
