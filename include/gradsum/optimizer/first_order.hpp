// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/restored.hpp>
#include <gradsum/optimizer/adagrad.hpp>
#include <gradsum/optimizer/adam.hpp>
#include <gradsum/optimizer/adamw.hpp>
#include <gradsum/optimizer/momentum.hpp>
#include <gradsum/optimizer/nesterov.hpp>
#include <gradsum/optimizer/rmsprop.hpp>
#include <gradsum/optimizer/sgd.hpp>

#include <cstdint>
#include <type_traits>
#include <variant>
#include <vector>

namespace gradsum {

/// One of the first-order optimizers (SGD, Momentum, Nesterov, AdaGrad,
/// RMSProp, Adam, AdamW), chosen at run time (a command-line flag), so that
/// one compiled step serves all seven. It updates, validates, names itself
/// and checkpoints exactly as the optimizer it holds, so a checkpoint
/// written by `Step<…, Adam, …>` resumes in `Step<…, FirstOrder, …>` holding
/// an Adam, and back. Costs the compile time of the seven updates once,
/// instead of one whole Step per optimizer.
///
///     gradsum::FirstOrder optimizer = gradsum::Adam{0.01};
///
/// `lr` is the held optimizer's learning rate, kept here so that wrappers
/// such as Scheduled can change it between updates.
class FirstOrder {
 public:
  /// Any of the seven optimizers.
  using Policy = std::variant<SGD, Momentum, Nesterov, AdaGrad, RMSProp, Adam, AdamW>;

  /// Holds `optimizer`, with its learning rate.
  template <class Optimizer,
            class = std::enable_if_t<std::is_constructible<Policy, const Optimizer&>::value>>
  FirstOrder(const Optimizer& optimizer)  // NOLINT: implicit on purpose
      : lr(optimizer.lr), policy_(optimizer) {}

  /// All seven update each parameter from its own gradient and state.
  static constexpr bool elementwise = true;

  /// Learning rate of the held optimizer, > 0.
  double lr;

  /// The held optimizer's name ("sgd", "adam", …).
  const char* name() const {
    return std::visit([](const auto& o) { return o.name(); }, policy_);
  }
  /// The held optimizer's checks, with this learning rate.
  void validate() const {
    std::visit(
        [this](auto o) {
          o.lr = lr;
          o.validate();
        },
        policy_);
  }
  /// The held optimizer's state vectors.
  int state_size(int num_parameters) const {
    return std::visit([num_parameters](const auto& o) { return o.state_size(num_parameters); },
                      policy_);
  }

  /// The held optimizer's state row of squares, never negative (-1: none).
  int squares_row() const {
    return std::visit([](const auto& o) { return detail::squares_row(o); }, policy_);
  }

  /// The held optimizer's update with this learning rate.
  template <class Context>
  void update(Context& ctx) {
    std::visit(
        [this, &ctx](auto& o) {
          o.lr = lr;
          o.update(ctx);
        },
        policy_);
  }

  /// Host-side state the checkpoint keeps: Adam's and AdamW's update
  /// counter t, as a checkpoint of Adam or AdamW itself keeps it.
  std::vector<double> host_state() const {
    if (const auto* adam = std::get_if<Adam>(&policy_)) return {double(adam->t)};
    if (const auto* adamw = std::get_if<AdamW>(&policy_)) return {double(adamw->t)};
    return {};
  }
  /// Restores what host_state() returned, checked first (the count t is an
  /// integer >= 0); throws gradsum::Error naming the value otherwise (the
  /// caller names the file).
  void restore_host_state(const std::vector<double>& state) {
    if (state.size() != host_state().size())
      fail("the ", name(), " optimizer's saved state holds ", state.size(),
                   " values, expected ", host_state().size());
    if (state.empty()) return;
    const std::int64_t t = detail::restored_update_count(state[0], name());
    if (auto* adam = std::get_if<Adam>(&policy_)) adam->t = t;
    if (auto* adamw = std::get_if<AdamW>(&policy_)) adamw->t = t;
  }

  /// The held optimizer (its lr is the one of the last update).
  const Policy& policy() const { return policy_; }

 private:
  Policy policy_;
};

}  // namespace gradsum
