// SPDX-License-Identifier: Apache-2.0
#pragma once

// How a step asks its aggregation for sharded optimizer state (ZeRO stage
// 1): aggregations that offer it (Allreduce::shard_optimizer) provide
// optimizer_shard(P), gather_shards(space, view) and collect_shards(…),
// and may reduce-scatter the gradient (reduce_scatter_next); the others
// update every parameter on every worker.

#include <gradsum/core/shards.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/optimizer/detail/checks.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradsum {
namespace detail {

template <class A, class = void>
struct has_optimizer_shards : std::false_type {};
template <class A>
struct has_optimizer_shards<
    A, std::void_t<decltype(std::declval<const A&>().optimizer_shard(std::int64_t(1))),
                   decltype(bool(std::declval<const A&>().shards_optimizer()))>>
    : std::true_type {};

/// Whether `A` can reduce-scatter a step's gradient onto the blocks'
/// owners (Allreduce::reduce_scatter_next) and gather host blocks.
template <class A, class = void>
struct has_reduce_scatter : std::false_type {};
template <class A>
struct has_reduce_scatter<
    A, std::void_t<decltype(bool(std::declval<const A&>().reduce_scatters())),
                   decltype(std::declval<A&>().reduce_scatter_next(std::size_t(1))),
                   decltype(std::declval<A&>().gather_blocks(
                       static_cast<double*>(nullptr), std::declval<const std::vector<std::int64_t>&>()))>>
    : std::true_type {};

/// The parameters whose optimizer state this worker keeps: the
/// aggregation's block, or all `num_parameters`.
template <class Aggregation>
ParameterShard optimizer_shard(const Aggregation& aggregation, std::int64_t num_parameters) {
  if constexpr (has_optimizer_shards<Aggregation>::value)
    return aggregation.optimizer_shard(num_parameters);
  else
    return ParameterShard{0, num_parameters, false};
}

/// Empty, or why `optimizer` cannot run on a shard of the parameters
/// although `aggregation` shards them.
template <class Optimizer, class Aggregation>
std::string shard_error(const Optimizer& optimizer, const Aggregation& aggregation) {
  if constexpr (has_optimizer_shards<Aggregation>::value) {
    if (aggregation.shards_optimizer() && !is_elementwise<Optimizer>::value)
      return concat("gradsum::Step: the ", optimizer.name(),
                    " optimizer does not update each parameter from its own gradient and state "
                    "alone, so its state cannot be sharded over the ranks; shard the state of "
                    "an elementwise optimizer (sgd, momentum, nesterov, adagrad, rmsprop, adam, "
                    "adamw, clipped or scheduled) or keep it whole");
  }
  (void)optimizer;
  (void)aggregation;
  return {};
}

}  // namespace detail
}  // namespace gradsum
