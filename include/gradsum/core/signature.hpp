// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace gradsum {

/// What every worker of a step must agree on before the first collective:
/// named integer fields (parameter count, feature width, scalar size, a hash
/// of the policy names …). Distributed aggregations compare them across
/// ranks in one small collective.
struct Signature {
  std::vector<std::pair<std::string, std::int64_t>> fields;

  /// Adds a field.
  void add(std::string name, std::int64_t value) {
    fields.emplace_back(std::move(name), value);
  }
  /// Names of the fields added by add_bits (shown as numbers in messages).
  std::vector<std::string> doubles;

  /// Adds a field holding the bits of a double (equal values, equal bits).
  void add_bits(std::string name, double value) {
    std::int64_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    doubles.push_back(name);
    add(std::move(name), bits);
  }
  /// The value `v` of field `i` as a message shows it: the double whose bits
  /// it holds for a field added by add_bits, else the integer.
  std::string show(std::size_t i, std::int64_t v) const {
    for (const auto& name : doubles)
      if (name == fields[i].first) {
        double d = 0;
        std::memcpy(&d, &v, sizeof d);
        char text[32];
        std::snprintf(text, sizeof text, "%.17g", d);
        return text;
      }
    return std::to_string(v);
  }
  /// Adds a field holding the 64-bit FNV-1a hash of a string.
  void add_hash(std::string name, const std::string& text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : text) h = (h ^ c) * 0x100000001b3ULL;
    add(std::move(name), std::int64_t(h >> 1));
  }
};

}  // namespace gradsum
