// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/aggregation/robust.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/partition.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/gradient/analytic.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gradsum {
/// A gradient policy that treats one process's batch as W *virtual
/// workers*: the selected rows are split into W contiguous near-equal parts
/// (as gradsum::partition splits them), the inner Gradient policy sums each
/// part on its own into the step's workspace, and the parts' gradients are
/// combined by a RobustRule (see aggregation/robust.hpp for the rules and
/// their sum scale). The loss is summed over the parts. With the plain-sum
/// rule the parts are not formed at all: the inner policy runs once.
///
/// This is robust aggregation without MPI (or on one rank); across ranks
/// use RobustAllreduce. A part with no rows is a worker whose gradient is
/// zero: a median or trimmed mean would count it as a vote, so the step
/// refuses rows that leave a part empty (with NormClip it adds nothing).
/// The combination is computed per coordinate by one thread in a
/// fixed order, so with the Reproducible reduction the result is the same
/// bits for any thread count and backend (though, unlike the plain sum, it
/// depends on W and on the split of the rows, by design).
///
/// Cost: W reductions over parts of the rows instead of one, and W (P + 1)
/// extra scalars of workspace.
template <class Gradient = Analytic>
struct VirtualWorkers {
  /// The policy that sums one part.
  using inner_gradient = Gradient;
  /// The combination rule.
  RobustRule rule{};
  /// Number of virtual workers W >= 1.
  int workers = 1;
  /// The inner gradient policy.
  Gradient inner{};

  /// Whether the parts are combined by something other than the plain sum
  /// (a median or trimmed mean of one worker is that worker; a clip is not).
  bool robust() const { return rule.changes(workers); }

  /// "analytic", or e.g. "analytic/median over 4 parts".
  std::string name() const {
    if (rule.is_sum()) return inner.name();
    return detail::concat(inner.name(), '/', rule.name(), " over ", workers, " parts");
  }
  /// W parts of P + 1 values, W NormClip scales, then the inner workspace.
  std::size_t workspace_size(int P) const {
    return std::size_t(workers) * (std::size_t(P) + 2) + inner.workspace_size(P);
  }
  /// Checks W and the rule's knobs (CoordinateMedian: W >= 3; TrimmedMean:
  /// 0 <= 2k < W; NormClip: c > 0), then the inner policy's.
  void validate() const {
    if (workers < 1)
      fail("gradsum::VirtualWorkers: workers must be at least 1, got ", workers);
    rule.validate(workers);
    inner.validate();
  }

  /// Writes the combined gradient into out(0 … P) and the summed loss into
  /// out(P). Asynchronous.
  template <class ExecutionSpace, class Model, class Loss, class Reduction, class Theta,
            class Data, class Rows, class Out, class Work>
  void sum(const ExecutionSpace& space, const Model& model, const Loss& loss,
           const Reduction& reduction, const Theta& theta, const Data& data, const Rows& rows,
           const Out& out, const Work& work) const {
    if (!robust()) {
      inner.sum(space, model, loss, reduction, theta, data, rows, out, work);
      return;
    }
    const std::int64_t P = model.num_parameters();
    const std::int64_t W = workers;
    const auto parts = Kokkos::subview(work, Kokkos::make_pair(std::int64_t(0), W * (P + 1)));
    const auto factors = Kokkos::subview(work, Kokkos::make_pair(W * (P + 1), W * (P + 2)));
    const auto inner_work =
        Kokkos::subview(work, Kokkos::make_pair(W * (P + 2), std::int64_t(work.extent(0))));
    for (int w = 0; w < workers; ++w) {
      const auto part = partition(rows, workers, w);
      const auto part_out = Kokkos::subview(work, Kokkos::make_pair(w * (P + 1), (w + 1) * (P + 1)));
      if (part.size() == 0)
        Kokkos::deep_copy(space, part_out, 0);
      else
        inner.sum(space, model, loss, reduction, theta, data, part, part_out, inner_work);
      // A per-sample NormClip bounds part w by c times its row count.
      if (rule.needs_counts())
        Kokkos::deep_copy(space, Kokkos::subview(factors, w),
                          typename Work::non_const_value_type(part.size()));
    }
    detail::robust_combine(space, rule, workers, P, P + 1, parts, factors, out);
  }
};

}  // namespace gradsum
