#include "grammar/state_walker.h"

#include <string>

#include "base/check.h"
#include "base/utf8.h"

namespace keel::grammar {

StateWalker::StateWalker(EarleyParser& parser, StateTable& table)
    : parser_(parser), table_(table), state_(1, parser.state()) {
  if (state_[0] != StateTable::kNone) table_.fill_dead(state_[0], parser_.next_bytes());
}

StateWalker::~StateWalker() { parser_.pop_bytes(pushed_); }

StateWalker::Step StateWalker::step_slow(uint32_t d, uint8_t b) {
  if (path_.size() <= d) {
    path_.resize(d + 1);
    state_.resize(d + 2);
  }
  path_[d] = b;
  if (synced_ > d) synced_ = d;
  const StateTable::State s = state_[d];
  if (s != StateTable::kNone) {
    const StateTable::State n = table_.next(s, b);
    if (n != StateTable::kUnknown) {
      state_[d + 1] = n;
      return {n, n == StateTable::kDead ? uint8_t{0} : table_.flags(n)};
    }
  }
  // Miss: bring the parser to path[0, d), then take b.
  ++misses_;
  parser_.pop_bytes(pushed_ - synced_);
  pushed_ = synced_;
  for (; pushed_ < d; ++pushed_) KEEL_CHECK(parser_.push_byte(path_[pushed_]), "walked path no longer parses");
  synced_ = d;
  // Bytes this column cannot tell from b lead to the same column: one parser step fills them all
  // (a string body's printable characters, a UTF-8 lead-byte range), so a walk through states it
  // has not seen costs a step per byte class, not per trie branch.
  const ByteSet same = s != StateTable::kNone ? parser_.equivalent_bytes(b) : ByteSet();
  Step out{StateTable::kDead, 0};
  if (parser_.push_byte(b)) {
    ++pushed_;
    ++synced_;
    out = {parser_.state(), parser_.flags()};
    if (out.state != StateTable::kNone) table_.fill_dead(out.state, parser_.next_bytes());
  }
  if (s != StateTable::kNone && out.state != StateTable::kNone) {
    for (int c = 0; c < 256; ++c)
      if (same.test(c)) table_.set_next(s, static_cast<uint8_t>(c), out.state);
  }
  state_[d + 1] = out.state;
  return out;
}

void StateWalker::seek(std::string_view prefix, StateTable::State s) {
  const auto d = static_cast<uint32_t>(prefix.size());
  if (path_.size() < d) {
    path_.resize(d);
    state_.resize(d + 1);
  }
  // A state past a byte rewritten by a later step may be stale even where the byte is the same:
  // every lower depth is forgotten; the parser keeps what still matches.
  for (uint32_t j = 0; j < d; ++j) {
    const auto b = static_cast<uint8_t>(prefix[j]);
    if (path_[j] != b && synced_ > j) synced_ = j;
    path_[j] = b;
    state_[j + 1] = StateTable::kNone;
  }
  state_[d] = s;
}

uint32_t StateWalker::plain_run(uint32_t d, uint32_t budget) {
  constexpr uint32_t kUnbounded = 254;
  const StateTable::State s = state_[d];
  if (s == StateTable::kNone || s == StateTable::kDead) return 0;
  if (const uint8_t known = table_.plain_run(s); known != 0) return known - 1u;
  if (budget == 0) return 0;
  StateTable::State next = StateTable::kNone;
  bool uniform = true;
  for (int b = 0x20; b < 0x7f && uniform; ++b) {
    if (!VocabTrie::plain(static_cast<uint8_t>(b))) continue;
    const StateTable::State n = step(d, static_cast<uint8_t>(b)).state;
    uniform = n != StateTable::kDead && n != StateTable::kNone && (next == StateTable::kNone || n == next);
    next = n;
  }
  uint32_t run = 0;
  if (uniform) {
    state_[d + 1] = next;  // the last step may have been any plain byte: all lead here
    run = next == s ? kUnbounded : std::min(kUnbounded, 1 + plain_run(d + 1, budget - 1));
  }
  // A search cut off by the budget gives a lower bound, which is still a sound answer to keep.
  table_.set_plain_run(s, static_cast<uint8_t>(run + 1));
  return run;
}

uint32_t StateWalker::text_run(uint32_t d, uint32_t budget) {
  constexpr uint32_t kUnbounded = 254;
  const StateTable::State s = state_[d];
  if (s == StateTable::kNone || s == StateTable::kDead) return 0;
  if (const uint8_t known = table_.text_run(s); known != 0) return known - 1u;
  if (const uint8_t shared = share_text_runs_ ? shared_text_run(s) : 0; shared != 0) return shared - 1u;
  if (budget == 0) return 0;
  // Every plain byte leads to one live state `next` (the plain run says so), and so does every
  // UTF-8 character, each byte of it stepped.
  bool uniform = plain_run(d) > 0;
  StateTable::State next = StateTable::kNone;
  if (uniform) next = step(d, 'a').state;
  for (int b = 0xC2; b <= 0xF4 && uniform; ++b) {
    const base::Utf8Lead lead = base::utf8_lead(static_cast<uint8_t>(b));
    const StateTable::State n = step(d, static_cast<uint8_t>(b)).state;
    uniform = n != StateTable::kDead && n != StateTable::kNone &&
              continuations_reach(d + 1, lead.length - 1u, lead.lo, lead.hi, next);
  }
  uint32_t run = 0;
  if (uniform) {
    step(d, 'a');  // depth d + 1 stands in `next` again
    run = next == s ? kUnbounded : std::min(kUnbounded, 1 + text_run(d + 1, budget - 1));
  }
  // A search cut off by the budget gives a lower bound, which is still a sound answer to keep.
  table_.set_text_run(s, static_cast<uint8_t>(run + 1));
  if (StateShapes* shapes = table_.shapes(); shapes != nullptr && share_text_runs_)
    shapes->note(table_, s, static_cast<uint8_t>(run + 1));
  return run;
}

uint8_t StateWalker::shared_text_run(StateTable::State s) {
  StateShapes* shapes = table_.shapes();
  if (shapes == nullptr) return 0;
  const uint8_t v = shapes->known(table_, s);
  if (v != 0) table_.set_text_run(s, v);  // kept for s itself: the next look-up is a row read
  return v;
}

bool StateWalker::continuations_reach(uint32_t d, uint32_t rem, uint8_t lo, uint8_t hi, StateTable::State target) {
  // A state seen before with the same bytes left was checked already (a UTF-8 automaton's states
  // repeat across lead bytes: E1..EC and EE..EF share one).
  const StateTable::State s = state_[d];
  const uint64_t key = static_cast<uint64_t>(target) << 32 | rem << 16 | static_cast<uint32_t>(lo) << 8 | hi;
  if (checked_.contains({s, key})) return true;
  StateTable::State verified = StateTable::kNone;  // the last continuation's state, checked already
  for (int c = lo; c <= hi; ++c) {
    const StateTable::State n = step(d, static_cast<uint8_t>(c)).state;
    if (n == StateTable::kDead || n == StateTable::kNone) return false;
    if (n == verified) continue;  // the same state with the same bytes left: the same answer
    if (rem == 1 ? n != target : !continuations_reach(d + 1, rem - 1, 0x80, 0xBF, target)) return false;
    verified = n;
  }
  checked_.emplace(s, key);
  return true;
}

bool StateWalker::accepts_subtree(const VocabTrie& trie, uint32_t i) {
  const uint32_t d = trie.nodes()[i].depth - 1;
  const uint8_t h = trie.plain_height(i);
  if (h != 0 && h <= plain_run(d)) return true;
  // A plain subtree is not looked up as text (a text run costs parser steps), only by loop classes.
  const uint8_t t = h != 0 ? 0 : trie.text_height(i);
  // Finding a state's text run costs a few parser steps per UTF-8 byte class; a key complement meets
  // a new state at every node of its names' trie, whose subtrees are small: only a subtree that
  // would cost more to visit pays for it (a known run is always used).
  constexpr uint32_t kTextWorth = 256;
  if (t != 0 && state_[d] != StateTable::kNone && state_[d] != StateTable::kDead) {
    if (const uint8_t known = table_.text_run(state_[d]); known != 0) {
      if (t <= known - 1u) return true;
    } else if (trie.nodes()[i].subtree_end - i >= kTextWorth && t <= text_run(d)) {
      return true;
    }
  }
  // A subtree too small to be worth looking up the state's loop for is walked.
  constexpr uint32_t kLoopWorth = 16;
  if (trie.nodes()[i].subtree_end - i < kLoopWorth) return false;
  const StateTable::State s = state_[d];
  if (s == StateTable::kNone || s == StateTable::kDead) return false;
  // A state every text string leaves alive takes every text subtree (searched, like a text run,
  // only for a subtree worth it, and only once the walk has gone into kTextLiveAfter nodes of such
  // subtrees from the state; a known answer is always used).
  if (trie.text_height(i) != 0) {
    const uint8_t live = table_.text_live(s);
    if (live == 2) return true;
    const uint32_t size = trie.nodes()[i].subtree_end - i;
    if ((live == 0 || live == 3) && size >= kTextWorth && text_live_due(s, size) && text_live(d)) return true;
  }
  // The node's own byte must lead back to the state (one row read), or no loop holds the subtree:
  // a state that moves on (a counter's next count, a pattern's next part) pays nothing more.
  if (table_.next(s, trie.nodes()[i].byte) != s) return false;
  return loops_all(d, trie.subtree_classes(i));
}

bool StateWalker::text_live(uint32_t d) {
  const StateTable::State s = state_[d];
  if (s == StateTable::kNone || s == StateTable::kDead) return false;
  const uint8_t known = table_.text_live(s);
  if (known == 1 || known == 2) return known == 2;
  // Only a state that loops on some plain byte is searched (a search pattern's, a URL host's): a
  // counter's or a key prefix's state moves on at every byte, and text from it meets a new state
  // per character, which the search would step the parser for until its bound. A transition not
  // known yet is stepped (one parser step fills every byte the column cannot tell from it). A
  // search pattern anchored at one alternative's start (`^dev|alpha`) loops one byte later: the
  // state the last byte not looping led to is asked the same for that byte.
  bool loops = false;
  int moved = -1;
  for (int b = 0x20; b < 0x7f && !loops; ++b) {
    if (!VocabTrie::plain(static_cast<uint8_t>(b))) continue;
    StateTable::State n = table_.next(s, static_cast<uint8_t>(b));
    if (n == StateTable::kUnknown) n = step(d, static_cast<uint8_t>(b)).state;
    loops = n == s;
    if (n != StateTable::kDead && n != StateTable::kNone) moved = b;
  }
  if (!loops && moved >= 0) {
    const StateTable::State n = step(d, static_cast<uint8_t>(moved)).state;
    loops = n != StateTable::kNone && step(d + 1, static_cast<uint8_t>(moved)).state == n;
  }
  const Search found = loops ? search_text_live(d) : Search::kNo;
  // A search cut off by its bound is asked once more, after the walk has gone into as many nodes
  // again: the states it interned (a cold table: ~50 for a two-state pattern's UTF-8 bytes) and
  // those the walk met meanwhile make the second one cheaper, and it often gets through.
  const bool retry = found == Search::kCut && known == 0;
  table_.set_text_live(s, found == Search::kLive ? 2 : retry ? 3 : 1);
  if (retry) walked_[s % walked_.size()].nodes = 0;
  return found == Search::kLive;
}

StateWalker::Search StateWalker::search_text_live(uint32_t d) {
  // Breadth first over (state, UTF-8 bytes left, the next one's range); each found with the bytes
  // that reach it from depth d, stepped again to stand there (table reads: they were stepped before).
  struct Node {
    StateTable::State state;
    uint8_t rem, lo, hi;
    std::string path;
  };
  std::vector<Node> queue{{state_[d], 0, 0, 0, std::string()}};
  std::unordered_set<uint64_t> seen{static_cast<uint64_t>(state_[d]) << 32};
  auto add = [&](StateTable::State n, uint8_t rem, uint8_t lo, uint8_t hi, const std::string& path, uint8_t b) {
    if (n == StateTable::kDead || n == StateTable::kNone) return false;
    const uint64_t key = static_cast<uint64_t>(n) << 32 | static_cast<uint64_t>(rem) << 16 | lo << 8 | hi;
    if (seen.insert(key).second) queue.push_back({n, rem, lo, hi, path + static_cast<char>(b)});
    return true;
  };
  const uint64_t misses0 = misses_;
  for (size_t k = 0; k < queue.size(); ++k) {
    if (queue.size() > kTextLiveStates || misses_ - misses0 > kTextLiveMisses) return Search::kCut;
    const Node node = queue[k];
    const auto at = d + static_cast<uint32_t>(node.path.size());
    for (uint32_t j = 0; j < node.path.size(); ++j) step(d + j, static_cast<uint8_t>(node.path[j]));
    if (node.rem == 0) {
      for (int b = 0x20; b < 0x7f; ++b)
        if (VocabTrie::plain(static_cast<uint8_t>(b)) &&
            !add(step(at, static_cast<uint8_t>(b)).state, 0, 0, 0, node.path, static_cast<uint8_t>(b)))
          return Search::kNo;
      for (int b = 0xC2; b <= 0xF4; ++b) {
        const base::Utf8Lead lead = base::utf8_lead(static_cast<uint8_t>(b));
        if (!add(step(at, static_cast<uint8_t>(b)).state, static_cast<uint8_t>(lead.length - 1), lead.lo, lead.hi,
                 node.path, static_cast<uint8_t>(b)))
          return Search::kNo;
      }
    } else {
      const auto rem = static_cast<uint8_t>(node.rem - 1);
      for (int c = node.lo; c <= node.hi; ++c)
        if (!add(step(at, static_cast<uint8_t>(c)).state, rem, rem == 0 ? 0 : 0x80, rem == 0 ? 0 : 0xBF, node.path,
                 static_cast<uint8_t>(c)))
          return Search::kNo;
    }
  }
  return Search::kLive;
}

bool StateWalker::text_live_due(StateTable::State s, uint32_t nodes) {
  Walked& w = walked_[s % walked_.size()];
  if (w.state != s) w = Walked{s, 0};  // a slot another state held: counted again (a later search)
  const bool due = w.nodes >= kTextLiveAfter;
  w.nodes += nodes;
  return due;
}

bool StateWalker::loops_all(uint32_t d, uint64_t classes) {
  const StateTable::State s = state_[d];
  if (s == StateTable::kNone || s == StateTable::kDead) return false;
  Loops& l = loops_[s % loops_.size()];
  if (l.state != s) l = Loops{s, 0, 0};  // a slot another state held: settled again
  if ((classes & l.fail) != 0) return false;
  // Each class not settled yet: every byte of it stepped once from s (a failure ends the look-up).
  static const std::array<std::vector<uint8_t>, VocabTrie::kByteClasses> bytes_of = [] {
    std::array<std::vector<uint8_t>, VocabTrie::kByteClasses> out;
    for (int b = 0; b < 256; ++b) out[VocabTrie::byte_class(static_cast<uint8_t>(b))].push_back(static_cast<uint8_t>(b));
    return out;
  }();
  // Highest classes first (non-ASCII, control bytes, punctuation): the ones a loop usually lacks,
  // so a failing look-up steps few bytes.
  for (uint64_t open = classes & ~l.loop; open != 0;) {
    const int c = 63 - __builtin_clzll(open);
    open &= ~(uint64_t{1} << c);
    for (uint8_t b : bytes_of[static_cast<size_t>(c)])
      if (step(d, b).state != s) {
        l.fail |= uint64_t{1} << c;
        return false;
      }
    l.loop |= uint64_t{1} << c;
  }
  return true;
}

uint32_t StateWalker::accepted_until(const VocabTrie& trie, uint32_t i, uint32_t limit) {
  // A byte the state rejects accepts nothing (no run holds it): one row read settles it before any
  // run is looked up or searched for (a search steps the parser).
  if (dead(trie.nodes()[i].depth - 1, trie.nodes()[i].byte)) return i;
  if (trie.text_height(i) != 0) {
    const uint32_t e = trie.text_span_end(i), d = trie.nodes()[i].depth - 1;
    const StateTable::State s = state_[d];
    if (e <= limit && e != trie.nodes()[i].subtree_end && s != StateTable::kNone && s != StateTable::kDead) {
      if (table_.text_live(s) == 2) return e;
      const uint8_t known = table_.text_run(s);
      const uint32_t run = known != 0 ? known - 1u : e - i >= 256 ? text_run(d) : 0;
      if (trie.text_span_height(i) <= run) return e;
    }
  }
  return accepts_subtree(trie, i) ? trie.nodes()[i].subtree_end : i;
}

}  // namespace keel::grammar
