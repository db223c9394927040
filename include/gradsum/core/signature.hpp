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
  /// What the ranks built or run, and what they must share, as messages
  /// about a disagreement say it.
  std::string subject = "built different steps";
  std::string advice = "every rank must build the same model with the same policies and settings";

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
  /// Names of the fields added by add_hash (messages say they differ).
  std::vector<std::string> hashes;

  /// Adds a field holding the 64-bit FNV-1a hash of a string.
  void add_hash(std::string name, const std::string& text) {
    add_hash_of(std::move(name), text.data(), text.size());
  }
  /// Adds a field holding a hash of `n` doubles' bits (data, scaling).
  void add_hash(std::string name, const double* values, std::size_t n) {
    add_hash_of(std::move(name), values, n * sizeof(double));
  }
  /// Appends the fields of `other`.
  void append(const Signature& other) {
    fields.insert(fields.end(), other.fields.begin(), other.fields.end());
    doubles.insert(doubles.end(), other.doubles.begin(), other.doubles.end());
    hashes.insert(hashes.end(), other.hashes.begin(), other.hashes.end());
  }

  /// The message for `ranks` ranks whose field i ranges from lo[i] to hi[i]
  /// (the fields of this signature, in order); empty when they all agree.
  std::string disagreement(const char* who, int ranks, const std::int64_t* lo,
                           const std::int64_t* hi) const {
    std::string differences;
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (lo[i] == hi[i]) continue;
      differences += (differences.empty() ? "" : "; ") + fields[i].first;
      differences += is_hash(i) ? std::string(" differs")
                                : " ranges from " + show(i, lo[i]) + " to " + show(i, hi[i]);
    }
    if (differences.empty()) return differences;
    return std::string(who) + ": the " + std::to_string(ranks) + " ranks " + subject + " (" +
           differences + "); " + advice;
  }

 private:
  bool is_hash(std::size_t i) const {
    for (const auto& name : hashes)
      if (name == fields[i].first) return true;
    return false;
  }
  void add_hash_of(std::string name, const void* data, std::size_t n) {
    hashes.push_back(name);
    add(std::move(name), std::int64_t(hash_bytes(data, n) >> 1));
  }
  // 64-bit FNV-1a.
  static std::uint64_t hash_bytes(const void* data, std::size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * 0x100000001b3ULL;
    return h;
  }
};

}  // namespace gradsum
