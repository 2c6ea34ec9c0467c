#include "grammar/grammar.h"

#include <fmt/format.h>

#include "base/clock.h"
#include "grammar/counter_rules.h"

namespace keel::grammar {
namespace {

std::string byte_set_text(const ByteSet& set) {
  if (set.count() == 1) {
    for (int b = 0; b < 256; ++b) {
      if (!set.test(b)) continue;
      if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') return fmt::format("\"{}\"", static_cast<char>(b));
      return fmt::format("\"\\x{:02X}\"", b);
    }
  }
  std::string out = "[";
  for (int b = 0; b < 256;) {
    if (!set.test(b)) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && set.test(e + 1)) ++e;
    out += fmt::format("\\x{:02X}", b);
    if (e > b) out += fmt::format("-\\x{:02X}", e);
    b = e + 1;
  }
  return out + "]";
}

}  // namespace

size_t Grammar::n_symbols() const {
  size_t n = 0;
  for (const Rule& r : rules)
    for (const Sequence& s : r.alts) n += s.size() + 1;
  return n;
}

std::string Grammar::to_string() const {
  std::string out;
  for (size_t i = 0; i < rules.size(); ++i) {
    out += fmt::format("{}_{} ::=", rules[i].name, i);
    if (rules[i].alts.empty()) out += " /*nothing*/";
    for (size_t a = 0; a < rules[i].alts.size(); ++a) {
      if (a > 0) out += " |";
      if (rules[i].alts[a].empty()) out += " \"\"";
      for (const Symbol& s : rules[i].alts[a]) {
        out += " ";
        out += s.kind == Symbol::Kind::kBytes ? byte_set_text(byte_sets[s.index])
                                                : fmt::format("{}_{}", rules[s.index].name, s.index);
      }
    }
    out += i == root ? "   # root\n" : "\n";
  }
  return out;
}

GrammarBuilder::GrammarBuilder(BuildLimits limits)
    : limits_(limits), deadline_us_(now_us() + limits.max_compile_ms * 1000) {}

Status GrammarBuilder::check_budget() {
  if (!status_.ok()) return status_;
  if (n_symbols_ > limits_.max_symbols) {
    status_ = make_error(ErrorCode::kResourceExhausted, "grammar exceeds {} symbols", limits_.max_symbols);
  } else if (now_us() > deadline_us_) {
    status_ = make_error(ErrorCode::kResourceExhausted, "grammar compilation exceeded {} ms", limits_.max_compile_ms);
  }
  return status_;
}

RuleId GrammarBuilder::add_rule(std::string name) {
  g_.rules.push_back(Rule{std::move(name), {}});
  ++n_symbols_;
  return static_cast<RuleId>(g_.rules.size() - 1);
}

void GrammarBuilder::add_alt(RuleId rule, Sequence seq) {
  if (!status_.ok()) return;
  n_symbols_ += seq.size() + 1;
  if ((n_symbols_ & 1023) < seq.size() + 1 && !check_budget().ok()) return;
  if (n_symbols_ > limits_.max_symbols) {
    (void)check_budget();
    return;
  }
  g_.rules[rule].alts.push_back(std::move(seq));
}

Symbol GrammarBuilder::bytes(const ByteSet& set) {
  auto [it, inserted] = byte_set_ids_.try_emplace(set, static_cast<uint32_t>(g_.byte_sets.size()));
  if (inserted) g_.byte_sets.push_back(set);
  return {Symbol::Kind::kBytes, it->second};
}

Symbol GrammarBuilder::byte(uint8_t b) {
  ByteSet set;
  set.set(b);
  return bytes(set);
}

Sequence GrammarBuilder::literal(std::string_view text) {
  Sequence seq;
  seq.reserve(text.size());
  for (char c : text) seq.push_back(byte(static_cast<uint8_t>(c)));
  return seq;
}

Symbol GrammarBuilder::group(Sequence seq, std::string_view name) {
  if (seq.size() == 1) return seq[0];
  RuleId r = add_rule(std::string(name));
  add_alt(r, std::move(seq));
  return ref(r);
}

Symbol GrammarBuilder::choice(std::vector<Sequence> alts, std::string_view name) {
  if (alts.size() == 1) return group(std::move(alts[0]), name);
  RuleId r = add_rule(std::string(name));
  for (Sequence& s : alts) add_alt(r, std::move(s));
  return ref(r);
}

Symbol GrammarBuilder::never(std::string_view name) { return ref(add_rule(std::string(name))); }

Symbol GrammarBuilder::empty() {
  if (empty_rule_ < 0) {
    empty_rule_ = static_cast<int32_t>(add_rule(std::string(counter_rules::kEmpty)));
    add_alt(static_cast<RuleId>(empty_rule_), {});
  }
  return ref(static_cast<RuleId>(empty_rule_));
}

Symbol GrammarBuilder::optional(Sequence body) {
  RuleId r = add_rule(std::string(counter_rules::kOpt));
  add_alt(r, std::move(body));
  add_alt(r, {});
  return ref(r);
}

Symbol GrammarBuilder::star(Sequence body) {
  RuleId r = add_rule(std::string(counter_rules::kStar));
  body.insert(body.begin(), ref(r));
  add_alt(r, std::move(body));
  add_alt(r, {});
  return ref(r);
}

Symbol GrammarBuilder::plus(Sequence body) {
  Symbol item = group(std::move(body), "item");
  RuleId r = add_rule(std::string(counter_rules::kPlus));
  add_alt(r, {ref(r), item});
  add_alt(r, {item});
  return ref(r);
}

Symbol GrammarBuilder::repeat(Sequence body, int64_t min, int64_t max) {
  if (max >= 0 && max < min) return never(counter_rules::kRepeat);
  if (min == 0 && max < 0) return star(std::move(body));
  if (min == 1 && max < 0) return plus(std::move(body));
  Symbol item = group(std::move(body), "item");
  Sequence seq;
  for (int64_t i = 0; i < min && status_.ok(); ++i) {
    seq.push_back(item);
    if (seq.size() > limits_.max_symbols) return never();
  }
  if (max < 0) {
    seq.push_back(star({item}));
  } else if (max > min) {
    seq.push_back(up_to(item, max - min));
  }
  RuleId r = add_rule(std::string(counter_rules::kRepeat));
  add_alt(r, std::move(seq));
  return ref(r);
}

const Symbol* GrammarBuilder::memo(const std::string& key) const {
  auto it = memo_.find(key);
  return it == memo_.end() ? nullptr : &it->second;
}

Symbol GrammarBuilder::memo(std::string key, Symbol sym) {
  if (status_.ok()) memo_.emplace(std::move(key), sym);
  return sym;
}

Grammar GrammarBuilder::snapshot(RuleId root) const {
  Grammar g = g_;
  g.root = root;
  return g;
}

Symbol GrammarBuilder::up_to(Symbol item, int64_t n) {
  constexpr int64_t kLinear = 32, kBlock = 16;
  if (n <= kLinear) {
    // exactly[c] ::= exactly[c-1] item counts items left-linearly, so after c items only one item
    // of this repetition stays alive per Earley column; the choice may stop at any count.
    Symbol prev = empty();
    std::vector<Sequence> counts{{prev}};
    for (int64_t c = 1; c <= n; ++c) {
      RuleId r = add_rule(std::string(counter_rules::kExactly));
      add_alt(r, {prev, item});
      prev = ref(r);
      counts.push_back({prev});
    }
    return choice(std::move(counts), counter_rules::kUpTo);
  }
  // n = q*B + r: up to q-1 blocks of B then fewer than B items, or exactly q blocks then up to r
  // items. Predicting it costs O(B log n) items instead of O(n).
  const int64_t q = n / kBlock, r = n % kBlock;
  Symbol block = group(Sequence(kBlock, item), counter_rules::kBlock);
  Symbol tail = up_to(item, kBlock - 1);
  Sequence full(static_cast<size_t>(q), block);
  full.push_back(up_to(item, r));
  return choice({{up_to(block, q - 1), tail}, std::move(full)}, counter_rules::kUpTo);
}

Result<Grammar> GrammarBuilder::finish(RuleId root) {
  KEEL_RETURN_IF_ERROR(check_budget());
  g_.root = root;
  return std::move(g_);
}

}  // namespace keel::grammar
