// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The two sums of a step's finalizing pass (the gradient's squared norm
/// and the parameters'), added in an order fixed by the parameter count,
/// the number of ranks and the execution space alone: the P coordinates
/// are cut into one block per rank (gradsum::partition, the blocks of a
/// sharded optimizer state), each block into parts of part_size()
/// consecutive coordinates from its start; each part is summed coordinate
/// by coordinate (its two sums stay in registers), and the parts' sums are
/// added in order on the host, in double. A rank that holds the summed
/// gradient of its own block alone (a sharded step's reduce-scatter) sums
/// the parts of its block, the parts of every block are gathered, and the
/// totals are the bits of the step that sums every part itself; they do
/// not depend on the thread count either.

#include <gradsum/data/partition.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace gradsum {
namespace detail {

/// body(j, acc) over the coordinates of each part c, its two sums into
/// parts(2c) and parts(2c + 1).
template <class Body, class Starts, class Parts>
struct PartSums {
  using scalar = std::remove_extent_t<typename Body::value_type>;
  Body body;
  Starts starts;
  Parts parts;
  KOKKOS_FUNCTION void operator()(std::int64_t c) const {
    scalar local[2] = {0, 0};
    const std::int64_t end = starts(c + 1);
    for (std::int64_t j = starts(c); j < end; ++j) body(int(j), local);
    parts(2 * c) = local[0];
    parts(2 * c + 1) = local[1];
  }
};

/// The parts of the finalizing pass's two sums (see the file's comment),
/// allocated once for P coordinates on `ranks` blocks.
template <class Scalar, class Memory>
class OrderedNorms {
 public:
  /// Coordinates per part on `Space`: 512 on CPU threads (long enough for
  /// the loop to run at memory speed), 32 on a device (enough threads).
  template <class Space>
  static constexpr std::int64_t part_size() {
    return Kokkos::SpaceAccessibility<Space, Kokkos::HostSpace>::accessible ? 512 : 32;
  }

  OrderedNorms() = default;
  OrderedNorms(std::int64_t num_parameters, int ranks, std::int64_t part)
      : first_(std::size_t(ranks) + 1) {
    std::vector<std::int64_t> starts;
    for (int k = 0; k < ranks; ++k) {
      const RowRange block = partition(num_parameters, ranks, k);
      first_[std::size_t(k)] = std::int64_t(starts.size());
      for (std::int64_t b = block.begin; b < block.end; b += part) starts.push_back(b);
    }
    first_.back() = std::int64_t(starts.size());
    starts.push_back(num_parameters);
    starts_ = Kokkos::View<std::int64_t*, Memory>("gradsum::step::norm_part_starts", starts.size());
    Kokkos::deep_copy(starts_, Kokkos::View<const std::int64_t*, Kokkos::HostSpace,
                                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                   starts.data(), starts.size()));
    parts_ = Kokkos::View<Scalar*, Memory>("gradsum::step::norm_parts",
                                           2 * std::size_t(first_.back()));
    host_ = Kokkos::create_mirror_view(parts_);
    bounds_.resize(first_.size());
    for (std::size_t k = 0; k < first_.size(); ++k) bounds_[k] = 2 * first_[k];
  }

  /// Sums body(j, acc) over the parts of blocks [first, last) and copies
  /// their sums to the host. Blocking.
  template <class Space, class Body>
  void sum_blocks(const Space& space, const std::string& label, int first, int last,
                  const Body& body) const {
    using Starts = Kokkos::View<std::int64_t*, Memory>;
    using Parts = Kokkos::View<Scalar*, Memory>;
    const std::int64_t begin = first_[std::size_t(first)], end = first_[std::size_t(last)];
    Kokkos::parallel_for(
        label, Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, begin, end),
        PartSums<Body, Starts, Parts>{body, starts_, parts_});
    const auto values = Kokkos::make_pair(std::size_t(2 * begin), std::size_t(2 * end));
    Kokkos::deep_copy(space, Kokkos::subview(host_, values), Kokkos::subview(parts_, values));
    space.fence();
  }

  /// The host array of the parts' sums, two values per part, block k's at
  /// [block_bounds()[k], block_bounds()[k + 1]).
  Scalar* host_parts() const { return host_.data(); }
  const std::vector<std::int64_t>& block_bounds() const { return bounds_; }

  /// The two totals of every part's sums on the host, in part order.
  template <class HostOut>
  void totals(const HostOut& out) const {
    double sums[2] = {0, 0};
    for (std::int64_t c = 0; c < first_.back(); ++c) {
      sums[0] += double(host_(std::size_t(2 * c)));
      sums[1] += double(host_(std::size_t(2 * c + 1)));
    }
    out(0) = typename HostOut::non_const_value_type(sums[0]);
    out(1) = typename HostOut::non_const_value_type(sums[1]);
  }

 private:
  std::vector<std::int64_t> first_;   // each block's first part; the part count last
  std::vector<std::int64_t> bounds_;  // first_ in values (two per part)
  Kokkos::View<std::int64_t*, Memory> starts_;  // each part's first coordinate; P last
  Kokkos::View<Scalar*, Memory> parts_;
  typename Kokkos::View<Scalar*, Memory>::HostMirror host_;
};

}  // namespace detail
}  // namespace gradsum
