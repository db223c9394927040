// SPDX-License-Identifier: Apache-2.0
#pragma once

// What the files of models.hpp share: the execution space --space names,
// the path --mlp-path names, and the run of a model with the optimizer.

#ifndef GRADSUM_SPACE_PART
#error "compile the model files with GRADSUM_SPACE_PART set (apps/CMakeLists.txt)"
#endif

#include "models.hpp"
#include "optimizers.hpp"

#include <cstddef>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace gradsum_train {

// Runs `run(Space())` if the space at place I of gradsum::ExecutionSpaces
// is in part `Part` and is the one `wanted`; else returns -1. The other
// parts' spaces are not even instantiated here.
template <int Part, std::size_t I, class Run>
int run_if_wanted(const std::string& wanted, const Run& run) {
  using Space = std::tuple_element_t<I, gradsum::ExecutionSpaces>;
  if constexpr (int(I % space_parts) != Part) return -1;
  else return gradsum::space_name<Space>() == wanted ? run(Space()) : -1;
}

template <int Part, class Run, std::size_t... I>
int on_space_of(const std::string& wanted, const Run& run, std::index_sequence<I...>) {
  int status = -1;
  ((status = status >= 0 ? status : run_if_wanted<Part, I>(wanted, run)), ...);
  return status;
}

/// Calls `run(Space())` for the execution space --space names (else
/// Kokkos' default) if it is in part `Part`, and returns its result; else -1.
template <int Part, class Run>
int on_space(const Options& o, const Run& run) {
  return on_space_of<Part>(
      wanted_space(o), run, std::make_index_sequence<std::tuple_size<gradsum::ExecutionSpaces>::value>());
}

/// --mlp-path: MLP and softmax regression by matrix products (the
/// layer-wise path) or per sample; auto, the library's choice (for softmax
/// on CPU threads, blocks of samples up to 16 classes).
template <class Model>
Model on_path(Model model, const Options& o) {
  model.layerwise = o.mlp_path != "per-sample";
  if constexpr (std::is_same<Model, gradsum::Softmax>::value)
    if (o.mlp_path == "matrix") model.batched = false;
  if constexpr (std::is_same<Model, gradsum::MLP>::value)
    if (!model.per_sample_limits().empty() && (o.mlp_path == "per-sample" || o.reduce != "sum"))
      gradsum::fail_agreed("--mlp-path ", o.mlp_path, " with --reduce ", o.reduce, ": ",
                           model.per_sample_limits(),
                           "; --mlp-path matrix with --reduce sum has no such limits");
  return model;
}

/// Trains the model `make()` returns with a `Loss` on the space --space
/// names if it is in part `Part` (the model is made there, once the space
/// is known to be enabled); else returns -1.
template <int Part, class Loss, class Make>
int train_model(const Context& context, const Aggregation& aggregation, const Make& make) {
  return on_space<Part>(context.options, [&](auto space) {
    return with_optimizer<decltype(space)>(context, make(), Loss{}, aggregation);
  });
}

}  // namespace gradsum_train
