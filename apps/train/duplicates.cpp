// SPDX-License-Identifier: Apache-2.0
// gradsum-train --duplicates: rows of the file that contradict each other.

#include "inputs.hpp"

#include <cstdio>

namespace gradsum_train {

// The groups of the whole file (before any held-out split reorders its
// rows), one line each, rows numbered as the file's data rows from 1 (the
// header not counted), targets by class name where the file has names.
// Under MPI every rank hashes its contiguous part of the rows and the
// groups are found across the ranks.
void report_duplicates(const Context& context, gradsum::Table& whole) {
  using Space = Kokkos::DefaultHostExecutionSpace;
  using Rows = Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace,
                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Targets = Kokkos::View<double*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  const std::size_t d = whole.num_features;
  auto rows = [&](std::int64_t begin, std::int64_t end) {
    // The file's rows themselves, no copy.
    double* x = whole.features.data() + std::size_t(begin) * d;
    double* y = whole.targets.data() + std::size_t(begin);
    return gradsum::Dataset<double, Kokkos::HostSpace>(Rows(x, std::size_t(end - begin), d),
                                                       Targets(y, std::size_t(end - begin)));
  };
#if GRADSUM_ENABLE_MPI
  const gradsum::mpi::Communicator comm(MPI_COMM_WORLD);
  const auto part = gradsum::partition(std::int64_t(whole.num_rows), comm.size(), comm.rank());
  const auto report =
      gradsum::mpi::conflicting_duplicates(Space(), comm, rows(part.begin, part.end));
#else
  const auto report = gradsum::conflicting_duplicates(
      Space(), rows(0, std::int64_t(whole.num_rows)));
#endif
  std::size_t listed = 0;
  for (const auto& g : report.conflicting) listed += g.rows.size();
  context.say("gradsum-train: duplicates: %zu group%s of rows with identical features and "
              "different targets (%zu rows); %lld group%s of identical rows with one target "
              "(%lld rows)\n",
              report.conflicting.size(), report.conflicting.size() == 1 ? "" : "s", listed,
              static_cast<long long>(report.consistent_groups),
              report.consistent_groups == 1 ? "" : "s",
              static_cast<long long>(report.consistent_rows));
  const auto& names = context.inputs.class_names;
  for (const auto& g : report.conflicting) {
    std::string line = "duplicate rows=";
    for (std::size_t k = 0; k < g.rows.size(); ++k) line += gradsum::concat(k ? "," : "", g.rows[k] + 1);
    line += " targets=";
    for (std::size_t k = 0; k < g.targets.size(); ++k) {
      const double t = g.targets[k];
      const bool named = t >= 0 && t < double(names.size());
      line += k ? "," : "";
      line += named ? names[std::size_t(t)] : gradsum::concat(t);
    }
    context.say("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

}  // namespace gradsum_train
