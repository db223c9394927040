// SPDX-License-Identifier: Apache-2.0
#pragma once

namespace gradsum {

#ifndef GRADSUM_MAX_OUTPUTS
/// Largest number of model outputs (classes) the per-sample path supports;
/// each thread keeps two arrays of this many values on its stack. Define
/// GRADSUM_MAX_OUTPUTS before including gradsum to change it.
#define GRADSUM_MAX_OUTPUTS 64
#endif

/// See GRADSUM_MAX_OUTPUTS.
constexpr int max_outputs = GRADSUM_MAX_OUTPUTS;

}  // namespace gradsum
