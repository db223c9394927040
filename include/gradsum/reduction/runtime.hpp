// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/reduction/compensated.hpp>
#include <gradsum/reduction/reproducible.hpp>
#include <gradsum/reduction/sum.hpp>

#include <cstdint>
#include <string>

namespace gradsum {

/// Sum, Compensated or Reproducible, chosen at run time (a command-line
/// flag) so that one compiled step serves all three; each behaves, and is
/// accurate, exactly as the policy it names. The step keeps Reproducible's
/// integer bins, and sums them across ranks, only while bins() is true.
/// Costs the compile time of the three reductions, not their run time.
struct RuntimeReduction {
  /// Which reduction.
  enum class Kind { sum, compensated, reproducible };
  Kind kind = Kind::sum;

  /// The step may aggregate this reduction's integer bins ...
  static constexpr bool binned = true;
  /// Bodies in rank-one form come only while bins() is true.
  static constexpr bool rank_one_blocks = true;
  /// ... and does while this is true.
  bool bins() const { return kind == Kind::reproducible; }
  /// Whether it sums plainly (Sum): dense models may then take the
  /// layer-wise path.
  bool plain() const { return kind == Kind::sum; }

  /// "sum", "compensated" or "reproducible".
  const char* name() const {
    return kind == Kind::compensated ? Compensated::name()
           : kind == Kind::reproducible ? Reproducible::name()
                                        : Sum::name();
  }

  /// The kind named `text` ("sum", "compensated", "reproducible"); throws
  /// gradsum::Error naming the value otherwise.
  static RuntimeReduction parse(const std::string& text) {
    if (text == "sum") return {Kind::sum};
    if (text == "compensated") return {Kind::compensated};
    if (text == "reproducible") return {Kind::reproducible};
    fail("gradsum::RuntimeReduction: expected sum, compensated or reproducible, got '",
                 text, "'");
  }

  /// The chosen policy's reduce() (Reproducible's rounds and fences).
  template <class ExecutionSpace, class Body, class OutView>
  void reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n, int width,
              const Body& body, const OutView& out) const {
    if constexpr (detail::is_rank_one_body<Body>::value) {
      if (kind != Kind::reproducible)
        fail("gradsum::RuntimeReduction::reduce: a body of rank-one blocks needs the "
                     "reproducible reduction, not ", name());
      Reproducible{}.reduce(space, label, n, width, body, out);
    } else {
      switch (kind) {
        case Kind::compensated: Compensated{}.reduce(space, label, n, width, body, out); break;
        case Kind::reproducible: Reproducible{}.reduce(space, label, n, width, body, out); break;
        default: Sum{}.reduce(space, label, n, width, body, out); break;
      }
    }
  }

  /// Reproducible::reduce_bins (the step calls it only while bins()).
  template <class Scalar, class ExecutionSpace, class Body, class BinsView>
  void reduce_bins(const ExecutionSpace& space, const std::string& label, std::int64_t n,
                   int width, const Body& body, const BinsView& bins) const {
    Reproducible{}.template reduce_bins<Scalar>(space, label, n, width, body, bins);
  }
};

}  // namespace gradsum
