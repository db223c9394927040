// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// suspect_rows across the ranks: every rank scores its own rows, the
/// top k of every rank are gathered and merged, the same on every rank.

#include <gradsum/core/error.hpp>
#include <gradsum/diagnostics/suspect_rows.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/mpi/messages.hpp>

#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradsum {
namespace mpi {

/// The `k` most suspicious rows over every rank's `history` (a
/// gradsum::MarginHistory of this rank's rows; the row indices must
/// number the same data on every rank, as the parts of a partition()
/// do), most suspicious first, equal scores in row order: the same list
/// on every rank, and the same as gradsum::suspect_rows over all rows
/// on one process. Throws the same gradsum::Error on every rank unless
/// 1 <= k <= the rows of all ranks, or when a rank recorded nothing.
/// Blocking; collective over `comm`.
template <class History>
std::vector<Suspect> suspect_rows(const Communicator& comm, const History& history,
                                               std::int64_t k) {
  const char* who = "gradsum::mpi::suspect_rows";
  std::vector<Suspect> mine;
  std::string problem;
  try {
    mine = history.scores();
  } catch (const Error& e) {
    problem = e.what();
  }
  // One rank's refusal must reach every rank before the gather.
  double tally[2] = {problem.empty() ? 0.0 : 1.0, double(history.rows().size())};
  check(MPI_Allreduce(MPI_IN_PLACE, tally, 2, MPI_DOUBLE, MPI_SUM, comm.get()), "MPI_Allreduce");
  if (tally[0] > 0)
    fail_agreed(who, ": ", std::int64_t(tally[0]), " of ", comm.size(),
                          " rank(s) have no margins recorded: pass each rank's MarginHistory "
                          "to fit() as a callback or call record() on every rank");
  gradsum::detail::check_count(who, k, std::int64_t(tally[1]), "the ranks together");
  mine = gradsum::detail::top_suspects(std::move(mine), k);
  std::vector<double> packed;
  packed.reserve(4 * mine.size());
  for (const auto& s : mine)
    packed.insert(packed.end(), {double(s.row), s.target, s.predicted, s.score});
  std::vector<std::int64_t> counts;
  const auto all = allgatherv(packed, comm, counts);
  std::vector<Suspect> merged(all.size() / 4);
  for (std::size_t i = 0; i < merged.size(); ++i)
    merged[i] = Suspect{std::int64_t(all[4 * i]), all[4 * i + 1], all[4 * i + 2],
                                     all[4 * i + 3]};
  return gradsum::detail::top_suspects(std::move(merged), k);
}

}  // namespace mpi
}  // namespace gradsum
