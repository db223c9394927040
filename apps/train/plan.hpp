// SPDX-License-Identifier: Apache-2.0
#pragma once

// `gradsum-train --plan`: "should I distribute?" for the two classic cases
// or for a job described on the command line, answered by
// gradsum/plan/report.hpp. Needs neither Kokkos nor MPI.

#include <string>
#include <vector>

namespace gradsum_train {

/// `gradsum-train --plan …` (the arguments after --plan). Returns the exit
/// status: 0 answered, 2 bad command line.
int run_plan(const std::vector<std::string>& args);

}  // namespace gradsum_train
