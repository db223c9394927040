// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <type_traits>

namespace gradsum {

#ifndef GRADSUM_MAX_OUTPUTS
/// Largest number of model outputs (classes) the per-sample path supports;
/// each thread keeps two arrays of this many values on its stack. Define
/// GRADSUM_MAX_OUTPUTS before including gradsum to change it.
#define GRADSUM_MAX_OUTPUTS 64
#endif

/// See GRADSUM_MAX_OUTPUTS.
constexpr int max_outputs = GRADSUM_MAX_OUTPUTS;

namespace detail {

/// Room for a model's outputs in per-sample arrays: `Model::output_capacity`
/// when the model declares a fixed bound (Linear: 1), else max_outputs.
template <class Model, class = void>
struct output_capacity {
  static constexpr int value = max_outputs;
};
template <class Model>
struct output_capacity<Model, std::void_t<decltype(Model::output_capacity)>> {
  static constexpr int value = Model::output_capacity;
};

}  // namespace detail

}  // namespace gradsum
