// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// mpi::conflicting_duplicates: gradsum::conflicting_duplicates over
/// data sharded across the ranks, with groups that may span ranks.

#include <gradsum/core/error.hpp>
#include <gradsum/diagnostics/duplicates.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/mpi/messages.hpp>

#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace gradsum {
namespace mpi {
namespace detail {

/// Where every rank's rows sit in the global numbering, and their width.
struct ShardLayout {
  std::vector<std::int64_t> offset;  ///< rank k's rows are [offset[k], offset[k + 1])
  int width = 0;                     ///< features per row
  /// The rank that holds global row `row`.
  int home(std::int64_t row) const {
    return int(std::upper_bound(offset.begin(), offset.end(), row) - offset.begin()) - 1;
  }
};

/// Every rank's rows, width and scalar size (one MPI_Allgather): the global
/// numbering, and the same refusal on every rank when the ranks holding
/// rows disagree on the width or the scalar type. Collective.
template <class Data>
ShardLayout shard_layout(const Communicator& comm, const Data& data) {
  const int p = comm.size();
  std::int64_t mine[3] = {data.num_samples(), data.num_features(),
                          std::int64_t(sizeof(typename Data::scalar_type))};
  std::vector<std::int64_t> all(std::size_t(3 * p));
  check(MPI_Allgather(mine, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, comm.get()),
        "MPI_Allgather");
  ShardLayout layout;
  layout.offset.assign(std::size_t(p) + 1, 0);
  int first = -1;
  for (int k = 0; k < p; ++k) {
    const std::int64_t* s = &all[std::size_t(3 * k)];
    layout.offset[std::size_t(k) + 1] = layout.offset[std::size_t(k)] + s[0];
    if (s[0] == 0) continue;
    if (first < 0) {
      first = k;
    } else if (s[1] != all[std::size_t(3 * first + 1)] || s[2] != all[std::size_t(3 * first + 2)]) {
      fail_agreed("gradsum::mpi::conflicting_duplicates: rank ", k, " holds rows of ",
                            s[1], " features of ", s[2] * 8, "-bit values, rank ", first,
                            " rows of ", all[std::size_t(3 * first + 1)], " features of ",
                            all[std::size_t(3 * first + 2)] * 8,
                            "-bit values; every rank's data must have the same columns and "
                            "scalar type");
    }
  }
  // The width of the rows that exist (a rank without rows may say any).
  layout.width = first < 0 ? data.num_features() : int(all[std::size_t(3 * first + 1)]);
  return layout;
}

/// Sends (hash, global row, target) of every row here to the rank that
/// owns the hash (hash modulo ranks); returns, at each owner, the records
/// whose hashes collide, sorted. Collective.
template <class ExecutionSpace, class Data>
std::vector<gradsum::detail::DuplicateRecord> colliding_records_at_owners(
    const ExecutionSpace& space, const Communicator& comm, const Data& data,
    const ShardLayout& layout) {
  namespace dd = gradsum::detail;
  const int p = comm.size();
  const std::int64_t base = layout.offset[std::size_t(comm.rank())];
  const auto keys = dd::duplicate_keys(space, data);
  std::vector<std::vector<std::uint64_t>> send(static_cast<std::size_t>(p));
  for (std::size_t i = 0; i < keys.hash.size(); ++i) {
    auto& to = send[std::size_t(keys.hash[i] % std::uint64_t(p))];
    to.insert(to.end(), {keys.hash[i], std::uint64_t(base + std::int64_t(i)), keys.target[i]});
  }
  std::vector<std::int64_t> from;
  const auto triples = alltoallv(send, comm, from);
  std::vector<dd::DuplicateRecord> records(triples.size() / 3);
  for (std::size_t r = 0; r < records.size(); ++r)
    records[r] = {triples[3 * r], std::int64_t(triples[3 * r + 1]), triples[3 * r + 2]};
  dd::sort_duplicate_records(records);
  return dd::colliding_records(records);
}

/// The owner asks each home rank for its candidates' canonical feature
/// bits (two MPI_Alltoallv); returns them, `width` words per candidate in
/// the candidates' order. Collective.
template <class ExecutionSpace, class Data>
std::vector<std::uint64_t> candidate_features(
    const ExecutionSpace& space, const Communicator& comm, const Data& data,
    const ShardLayout& layout, const std::vector<gradsum::detail::DuplicateRecord>& candidates) {
  const int p = comm.size();
  const std::size_t d = std::size_t(layout.width);
  const std::int64_t base = layout.offset[std::size_t(comm.rank())];
  std::vector<std::vector<std::uint64_t>> send(static_cast<std::size_t>(p));
  for (const auto& c : candidates)
    send[std::size_t(layout.home(c.row))].push_back(std::uint64_t(c.row));
  std::vector<std::int64_t> from;
  const auto asked = alltoallv(send, comm, from);
  std::vector<std::int64_t> local(asked.size());
  for (std::size_t k = 0; k < asked.size(); ++k) local[k] = std::int64_t(asked[k]) - base;
  const auto bits = gradsum::detail::duplicate_rows_bits(space, data, local);
  std::size_t at = 0;
  for (int k = 0; k < p; ++k) {
    const std::size_t words = std::size_t(from[std::size_t(k)]) * d;
    send[std::size_t(k)].assign(bits.begin() + std::ptrdiff_t(at),
                                bits.begin() + std::ptrdiff_t(at + words));
    at += words;
  }
  const auto answers = alltoallv(send, comm, from);
  // Answers come per home rank, each in the order asked: back to candidates.
  std::vector<std::size_t> cursor(std::size_t(p), 0);
  for (int k = 1; k < p; ++k)
    cursor[std::size_t(k)] = cursor[std::size_t(k - 1)] + std::size_t(from[std::size_t(k - 1)]);
  std::vector<std::uint64_t> features(candidates.size() * d);
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    std::size_t& src = cursor[std::size_t(layout.home(candidates[c].row))];
    std::copy(answers.begin() + std::ptrdiff_t(src),
              answers.begin() + std::ptrdiff_t(src + d),
              features.begin() + std::ptrdiff_t(c * d));
    src += d;
  }
  return features;
}

/// Every owner's conflicting groups and counts, gathered by every rank
/// (MPI_Allgatherv), the same report everywhere; the groups still raw.
inline std::vector<gradsum::detail::RawDuplicateGroup> gather_groups(
    const Communicator& comm, const std::vector<gradsum::detail::RawDuplicateGroup>& mine,
    DuplicateReport& report) {
  const int p = comm.size();
  std::vector<std::uint64_t> packed;
  for (const auto& g : mine) {
    packed.push_back(g.rows.size());
    for (auto r : g.rows) packed.push_back(std::uint64_t(r));
    packed.insert(packed.end(), g.targets.begin(), g.targets.end());
  }
  std::int64_t sizes[3] = {std::int64_t(packed.size()), report.consistent_groups,
                           report.consistent_rows};
  std::vector<std::int64_t> all(std::size_t(3 * p));
  check(MPI_Allgather(sizes, 3, MPI_INT64_T, all.data(), 3, MPI_INT64_T, comm.get()),
        "MPI_Allgather");
  std::vector<std::int64_t> counts(static_cast<std::size_t>(p));
  report = {};
  for (int k = 0; k < p; ++k) {
    counts[std::size_t(k)] = all[std::size_t(3 * k)];
    report.consistent_groups += all[std::size_t(3 * k + 1)];
    report.consistent_rows += all[std::size_t(3 * k + 2)];
  }
  const auto gathered = allgatherv(packed, counts, comm);
  std::vector<gradsum::detail::RawDuplicateGroup> raw;
  for (std::size_t k = 0; k < gathered.size();) {
    const std::size_t m = std::size_t(gathered[k++]);
    gradsum::detail::RawDuplicateGroup g;
    for (std::size_t r = 0; r < m; ++r) g.rows.push_back(std::int64_t(gathered[k + r]));
    g.targets.assign(gathered.begin() + std::ptrdiff_t(k + m),
                     gathered.begin() + std::ptrdiff_t(k + 2 * m));
    k += 2 * m;
    raw.push_back(std::move(g));
  }
  return raw;
}

}  // namespace detail

/// gradsum::conflicting_duplicates over every rank's `data` (each rank
/// its own shard): the groups of identical rows with different targets,
/// wherever their rows live, the same report on every rank. Rows are
/// numbered globally, rank 0's first, then rank 1's and so on (the
/// numbering of gradsum::partition's contiguous parts), and the groups come
/// in the same order for any number of ranks.
///
/// Each rank hashes its rows in one kernel on `space` and sends (hash,
/// row, target) to the rank that owns the hash (hash modulo ranks,
/// MPI_Alltoallv: 24 bytes per row); an owner asks the home ranks of
/// colliding rows for their features (d values per colliding row, two
/// more MPI_Alltoallv), groups them exactly and every rank gathers the
/// groups (MPI_Allgatherv). Throws the same gradsum::Error on every rank
/// when the ranks holding rows disagree on the number of features or the
/// scalar type. Blocking; collective over `comm`.
template <class ExecutionSpace, class Data>
DuplicateReport conflicting_duplicates(const ExecutionSpace& space,
                                                    const Communicator& comm, const Data& data) {
  gradsum::detail::require_duplicates_data<Data>();
  const auto layout = detail::shard_layout(comm, data);
  const auto candidates = detail::colliding_records_at_owners(space, comm, data, layout);
  const auto features = detail::candidate_features(space, comm, data, layout, candidates);
  std::vector<gradsum::detail::RawDuplicateGroup> mine;
  DuplicateReport report;
  gradsum::detail::group_duplicates_exactly(candidates, features, layout.width, mine, report);
  auto raw = detail::gather_groups(comm, mine, report);
  gradsum::detail::finish_duplicate_report<typename Data::scalar_type>(raw, report);
  return report;
}

}  // namespace mpi
}  // namespace gradsum
