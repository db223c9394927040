// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <string>

namespace gradsum {
namespace mpi {

/// Throws gradsum::Error naming the MPI call and MPI's own explanation when
/// `code` is not MPI_SUCCESS.
inline void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  fail("gradsum::mpi: ", call, " failed with error ", code, ": ",
               std::string(text, std::size_t(length)));
}

/// The MPI datatype of a C++ arithmetic type.
template <class T>
MPI_Datatype datatype();
template <>
inline MPI_Datatype datatype<double>() { return MPI_DOUBLE; }
template <>
inline MPI_Datatype datatype<float>() { return MPI_FLOAT; }
template <>
inline MPI_Datatype datatype<std::int64_t>() { return MPI_INT64_T; }
template <>
inline MPI_Datatype datatype<std::uint64_t>() { return MPI_UINT64_T; }
template <>
inline MPI_Datatype datatype<int>() { return MPI_INT; }

/// A duplicate of a user's communicator, owned and freed by gradsum.
///
/// gradsum's messages never mix with the user's, whatever communicator
/// the user passes (MPI_COMM_WORLD or any other). Errors on the duplicate
/// return codes instead of aborting, so they become gradsum::Error.
/// Copies share one duplicate.
class Communicator {
 public:
  /// Duplicates `comm`. Collective over `comm`. MPI must be initialised.
  explicit Communicator(MPI_Comm comm) {
    int initialized = 0;
    check(MPI_Initialized(&initialized), "MPI_Initialized");
    if (!initialized)
      fail("gradsum::mpi::Communicator: MPI is not initialised; call "
                   "MPI_Init first or create a gradsum::Environment");
    if (comm == MPI_COMM_NULL)
      fail("gradsum::mpi::Communicator: the communicator is MPI_COMM_NULL");
    auto handle = std::shared_ptr<MPI_Comm>(new MPI_Comm(MPI_COMM_NULL), [](MPI_Comm* c) {
      int finalized = 0;
      MPI_Finalized(&finalized);
      if (!finalized && *c != MPI_COMM_NULL) MPI_Comm_free(c);
      delete c;
    });
    check(MPI_Comm_dup(comm, handle.get()), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(*handle, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(*handle, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(*handle, &size_), "MPI_Comm_size");
    comm_ = std::move(handle);
  }

  /// This process's rank in the communicator.
  int rank() const { return rank_; }
  /// Number of processes in the communicator.
  int size() const { return size_; }
  /// The duplicated communicator.
  MPI_Comm get() const { return *comm_; }

 private:
  std::shared_ptr<MPI_Comm> comm_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace mpi
}  // namespace gradsum
