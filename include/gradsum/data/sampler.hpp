// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/partition.hpp>
#include <gradsum/data/rows.hpp>

#include <cstdint>
#include <vector>

namespace gradsum {
namespace detail {

/// SplitMix64's output function of its state: a bijection of 64-bit
/// integers (each step can be undone), usable in kernels.
KOKKOS_INLINE_FUNCTION std::uint64_t splitmix64_output(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// SplitMix64 (Steele, Lea & Flood, OOPSLA 2014): a small generator whose
/// sequence is fixed by its definition, so shuffles are the same with every
/// compiler and standard library (std::shuffle's are not).
class SplitMix64 {
 public:
  /// What each draw adds to the state.
  static constexpr std::uint64_t increment = 0x9e3779b97f4a7c15ULL;
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return splitmix64_output(state_ += increment); }
  /// Uniform integer in [0, bound), bound > 0, without modulo bias.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t limit = ~std::uint64_t(0) - (~std::uint64_t(0) % bound);
    std::uint64_t r;
    do {
      r = next();
    } while (r >= limit);
    return r % bound;
  }

 private:
  std::uint64_t state_;
};

}  // namespace detail

/// Draws mini-batches from a seeded global order of n samples.
///
/// Epoch e's order is a Fisher–Yates shuffle driven by SplitMix64 seeded
/// from (seed, e): the same on every rank and with any number of workers,
/// so the sequence of mini-batches does not depend on how many workers
/// share each one. A batch size of 0 means full batch: one batch holding
/// every sample in its stored order. The order lives in `MemorySpace`
/// (allocated once); `shuffle` fills it and fences.
template <class MemorySpace>
class MiniBatchSampler {
 public:
  using memory_space = MemorySpace;

  /// `num_samples` >= 0 samples in batches of `batch_size` (0 = full batch).
  MiniBatchSampler(std::int64_t num_samples, std::int64_t batch_size,
                   std::uint64_t seed)
      : n_(num_samples),
        batch_(batch_size == 0 ? num_samples : batch_size),
        seed_(seed),
        shuffled_(batch_size != 0),
        order_(Kokkos::view_alloc(Kokkos::WithoutInitializing,
                                  "gradsum::sampler::order"),
               std::size_t(num_samples < 0 ? 0 : num_samples)),
        host_order_(std::size_t(num_samples < 0 ? 0 : num_samples)) {
    if (num_samples < 0)
      fail("gradsum::MiniBatchSampler: num_samples must be >= 0, got ",
                   num_samples);
    if (batch_size < 0)
      fail("gradsum::MiniBatchSampler: batch_size must be >= 0 "
                   "(0 = full batch), got ",
                   batch_size);
    shuffle(0);
  }

  /// Sets the order of epoch `epoch`. Blocking.
  void shuffle(std::int64_t epoch) {
    for (std::int64_t i = 0; i < n_; ++i) host_order_[std::size_t(i)] = i;
    if (shuffled_) {
      detail::SplitMix64 rng(seed_ ^ (0x6a09e667f3bcc909ULL *
                                      (std::uint64_t(epoch) + 1)));
      for (std::int64_t i = n_ - 1; i > 0; --i) {
        const auto j = std::int64_t(rng.below(std::uint64_t(i) + 1));
        std::swap(host_order_[std::size_t(i)], host_order_[std::size_t(j)]);
      }
    }
    Kokkos::View<const std::int64_t*, Kokkos::HostSpace,
                 Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        host(host_order_.data(), host_order_.size());
    Kokkos::deep_copy(order_, host);
  }

  /// Number of mini-batches per epoch (the last may be smaller).
  std::int64_t num_batches() const {
    // n_ / batch_ rounded up, without n_ + batch_ overflowing for a huge batch.
    return batch_ == 0 ? 0 : n_ / batch_ + (n_ % batch_ != 0 ? 1 : 0);
  }
  /// Samples per full mini-batch.
  std::int64_t batch_size() const { return batch_; }

  /// Mini-batch `b` of the current epoch.
  RowList<MemorySpace> batch(std::int64_t b) const {
    if (b < 0 || b >= num_batches())
      fail("gradsum::MiniBatchSampler::batch: batch index must be in "
                   "[0, ",
                   num_batches(), "), got ", b);
    const std::int64_t begin = b * batch_;
    const std::int64_t end = batch_ < n_ - begin ? begin + batch_ : n_;
    return RowList<MemorySpace>{order_, begin, end};
  }

  /// Worker `part`'s contiguous share of mini-batch `b` split over `parts`
  /// workers (see gradsum::partition).
  RowList<MemorySpace> batch(std::int64_t b, int parts, int part) const {
    return partition(batch(b), parts, part);
  }

  /// The current epoch's order on the host.
  const std::vector<std::int64_t>& order() const { return host_order_; }

 private:
  std::int64_t n_;
  std::int64_t batch_;
  std::uint64_t seed_;
  bool shuffled_;
  Kokkos::View<std::int64_t*, MemorySpace> order_;
  std::vector<std::int64_t> host_order_;
};

}  // namespace gradsum
