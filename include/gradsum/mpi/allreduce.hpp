// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/signature.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/mpi/messages.hpp>

#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI && __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gradsum {

namespace detail {

/// Whether `message` starts with "rank N: " (N decimal digits), the prefix
/// Allreduce::first_error adds.
inline bool has_rank_prefix(const std::string& message) {
  if (message.rfind("rank ", 0) != 0) return false;
  std::size_t i = 5;
  while (i < message.size() && message[i] >= '0' && message[i] <= '9') ++i;
  return i > 5 && message.compare(i, 2, ": ") == 0;
}

}  // namespace detail

/// How Allreduce hands device memory to MPI.
enum class DeviceBuffers {
  automatic,  ///< directly when the host can access it or MPI reports GPU support, else staged
  direct,     ///< always pass the buffer itself (the MPI library must be GPU-aware)
  staged      ///< always copy through a host buffer allocated once
};

namespace mpi {

/// Whether the MPI library reports that it accepts CUDA device pointers
/// (Open MPI's MPIX_Query_cuda_support); false when it cannot tell.
inline bool reports_device_support() {
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
  return MPIX_Query_cuda_support() == 1;
#else
  return false;
#endif
}

}  // namespace mpi

/// Aggregation across MPI processes by one in-place MPI_Allreduce (MPI_SUM)
/// per step over the step's single contiguous buffer: every parameter
/// block, the loss sum, the sample count and the failure count travel in
/// one message. The MPI datatype follows the scalar type.
///
/// Takes any communicator and works on a duplicate of it. The step's
/// constructor, evaluate() and operator() become collective over it.
/// Memory the host cannot access is staged through a host buffer allocated
/// once by allocate(), unless MPI is GPU-aware (see DeviceBuffers).
class Allreduce {
 public:
  /// Aggregates over the processes of `comm` (duplicated; collective).
  explicit Allreduce(MPI_Comm comm, DeviceBuffers device_buffers = DeviceBuffers::automatic)
      : comm_(comm), mode_(device_buffers) {}

  /// Short name used in messages and command lines.
  static const char* name() { return "allreduce"; }
  /// This process's rank.
  int rank() const { return comm_.rank(); }
  /// Number of processes.
  int size() const { return comm_.size(); }
  /// The (duplicated) communicator gradsum uses.
  MPI_Comm communicator() const { return comm_.get(); }
  /// Number of aggregations (MPI_Allreduce calls of gradients) so far.
  std::int64_t calls() const { return *calls_; }
  /// Whether buffers go to MPI directly (after allocate()).
  bool direct() const { return direct_; }

  /// Decides how buffers of `length` Scalars in `MemorySpace` reach MPI and
  /// allocates the host staging buffer when they need one.
  template <class Scalar, class MemorySpace>
  void allocate(std::size_t length) {
    const bool host_accessible =
        Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;
    direct_ = mode_ == DeviceBuffers::direct ||
              (mode_ == DeviceBuffers::automatic &&
               (host_accessible || mpi::reports_device_support()));
    if (!direct_ && staging_.size() < length * sizeof(Scalar))
      staging_.resize(length * sizeof(Scalar));
  }

  /// Sums `buffer` over all processes, in place. Fences `space` first.
  /// Blocking; collective.
  template <class ExecutionSpace, class View>
  void aggregate(const ExecutionSpace& space, const View& buffer) {
    ++*calls_;
    allreduce(space, buffer, MPI_SUM);
  }

  /// Element-wise maximum of `values` over all processes, in place (the
  /// bin windows of the Reproducible reduction). Blocking; collective.
  template <class ExecutionSpace, class View>
  void aggregate_max(const ExecutionSpace& space, const View& values) {
    allreduce(space, values, MPI_MAX);
  }

  /// Checks in two small collectives that every process built the same
  /// step (the same signature: its fields, then their values) and that none
  /// failed locally; otherwise every process throws the same
  /// gradsum::AgreedError. Collective.
  void agree(const Signature& signature, const std::string& local_error) {
    std::string names;
    for (const auto& field : signature.fields) names += field.first + '\n';
    Signature shape = signature;
    shape.fields.clear();
    shape.add("local failure", local_error.empty() ? 0 : 1);
    shape.add("number of signature fields", std::int64_t(signature.fields.size()));
    shape.add_hash("names of the signature fields", names);
    std::vector<std::int64_t> lo, hi;
    min_max(shape, lo, hi);
    if (hi[0] > 0) throw AgreedError(first_error(local_error));
    std::string error = shape.disagreement("gradsum::Allreduce", size(), lo.data(), hi.data());
    if (error.empty()) {
      min_max(signature, lo, hi);
      error = signature.disagreement("gradsum::Allreduce", size(), lo.data(), hi.data());
    }
    if (!error.empty()) throw AgreedError(error);
  }

  /// The error message of the lowest-ranked process whose `local_error` is
  /// not empty, prefixed with its rank (unless it already starts with
  /// "rank N: ", an error agreed on before and reported again by an
  /// enclosing collective); empty when no process failed. Collective.
  std::string first_error(const std::string& local_error) {
    int failing = local_error.empty() ? size() : rank();
    mpi::check(MPI_Allreduce(MPI_IN_PLACE, &failing, 1, MPI_INT, MPI_MIN, comm_.get()),
               "MPI_Allreduce");
    if (failing == size()) return {};
    std::int64_t length = rank() == failing ? std::int64_t(local_error.size()) : 0;
    mpi::check(MPI_Bcast(&length, 1, MPI_INT64_T, failing, comm_.get()), "MPI_Bcast");
    std::string message = rank() == failing ? local_error : std::string(std::size_t(length), ' ');
    if (length > 0)
      mpi::broadcast(&message[0], std::size_t(length), MPI_CHAR, 1, failing, comm_.get());
    if (detail::has_rank_prefix(message)) return message;
    return detail::concat("rank ", failing, ": ", message);
  }

 private:
  // The smallest and largest value of every field of `s` over the ranks,
  // in one MPI_MAX (minima through bitwise complement).
  void min_max(const Signature& s, std::vector<std::int64_t>& lo, std::vector<std::int64_t>& hi) {
    const std::size_t n = s.fields.size();
    std::vector<std::int64_t> values(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      values[i] = s.fields[i].second;
      values[n + i] = ~s.fields[i].second;
    }
    mpi::allreduce_in_place(values.data(), values.size(), MPI_INT64_T, sizeof(std::int64_t),
                            MPI_MAX, comm_.get());
    lo.resize(n);
    hi.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      hi[i] = values[i];
      lo[i] = ~values[n + i];
    }
  }

  template <class ExecutionSpace, class View>
  void allreduce(const ExecutionSpace& space, const View& buffer, MPI_Op op) {
    using Value = typename View::non_const_value_type;
    space.fence();
    const auto n = buffer.extent(0);
    if (direct_) {
      mpi::allreduce_in_place(buffer.data(), n, mpi::datatype<Value>(), sizeof(Value), op,
                              comm_.get());
      return;
    }
    if (staging_.size() < n * sizeof(Value))
      fail("gradsum::Allreduce: buffer of ", n,
                   " values exceeds the staging buffer; call allocate() first");
    Kokkos::View<Value*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>> host(
        reinterpret_cast<Value*>(staging_.data()), n);
    Kokkos::deep_copy(space, host, buffer);
    space.fence();
    mpi::allreduce_in_place(host.data(), n, mpi::datatype<Value>(), sizeof(Value), op,
                            comm_.get());
    Kokkos::deep_copy(space, buffer, host);
    space.fence();
  }

  mpi::Communicator comm_;
  DeviceBuffers mode_;
  bool direct_ = true;
  std::vector<unsigned char> staging_;
  std::shared_ptr<std::int64_t> calls_ = std::make_shared<std::int64_t>(0);
};

}  // namespace gradsum
