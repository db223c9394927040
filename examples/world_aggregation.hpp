// SPDX-License-Identifier: Apache-2.0
#pragma once

// The aggregation the example programs use: Allreduce over MPI_COMM_WORLD
// when gradsum was built with MPI, else Local.

#include <gradsum/gradsum.hpp>

namespace gradsum_examples {

#if GRADSUM_ENABLE_MPI
using Aggregation = gradsum::Allreduce;
inline Aggregation make_aggregation() { return Aggregation(MPI_COMM_WORLD); }
#else
using Aggregation = gradsum::Local;
inline Aggregation make_aggregation() { return Aggregation{}; }
#endif

}  // namespace gradsum_examples
