// Test helpers for cache/: readable GoogleTest output for slot and node handles.
#pragma once

#include <ostream>

#include "cache/radix_tree.h"

namespace keel::cache {

inline void PrintTo(const SlotId& s, std::ostream* os) { *os << "slot " << s.value; }
inline void PrintTo(const NodeId& n, std::ostream* os) { *os << "node " << n.index << "/" << n.generation; }

}  // namespace keel::cache
