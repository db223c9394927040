// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/optimizer/lbfgs.hpp>
#include <gradsum/optimizer/newton.hpp>
#include <gradsum/optimizer/steepest_descent.hpp>

#include <type_traits>
#include <variant>
#include <vector>

namespace gradsum {

/// One of the methods that search along a direction or solve with the
/// Hessian (Newton, SteepestDescent, LBFGS), chosen at run time (a
/// command-line flag), so that one compiled step serves all three, as
/// FirstOrder does for the first-order optimizers. It updates, validates,
/// names itself and checkpoints exactly as the method it holds: a
/// checkpoint written by `Step<…, LBFGS, …>` resumes in
/// `Step<…, LineSearchMethod, …>` holding an LBFGS, and back.
///
///     gradsum::LineSearchMethod optimizer = gradsum::LBFGS{};
///
/// Holding Newton (or SteepestDescent with its exact line search), it asks
/// for the Hessian at run time (uses_hessian()): a step of a model or loss
/// without second derivatives then refuses it when it is built, with the
/// same message as for Newton itself.
class LineSearchMethod {
 public:
  /// Any of the three methods.
  using Policy = std::variant<Newton, SteepestDescent, LBFGS>;

  /// Holds `method`.
  template <class Method,
            class = std::enable_if_t<std::is_constructible<Policy, const Method&>::value>>
  LineSearchMethod(const Method& method)  // NOLINT: implicit on purpose
      : policy_(method) {}

  /// The held method's name ("newton", "steepest", "lbfgs").
  const char* name() const {
    return std::visit([](const auto& o) { return o.name(); }, policy_);
  }
  /// The held method's checks.
  void validate() const {
    std::visit([](const auto& o) { o.validate(); }, policy_);
  }
  /// The held method's state vectors.
  int state_size(int num_parameters) const {
    return std::visit([num_parameters](const auto& o) { return o.state_size(num_parameters); },
                      policy_);
  }
  /// Whether the held method needs the Hessian (Newton; steepest descent's
  /// exact line search).
  bool uses_hessian() const {
    return std::visit([](const auto& o) { return detail::optimizer_uses_hessian(o); }, policy_);
  }

  /// The held method's update.
  template <class Context>
  void update(Context& ctx) {
    std::visit([&ctx](auto& o) { o.update(ctx); }, policy_);
  }

  /// Host-side state the checkpoint keeps: L-BFGS's history bookkeeping,
  /// as a checkpoint of LBFGS itself keeps it.
  std::vector<double> host_state() const {
    if (const auto* lbfgs = std::get_if<LBFGS>(&policy_)) return lbfgs->host_state();
    return {};
  }
  /// Restores what host_state() returned, checked as the held method
  /// checks it; throws gradsum::Error naming the value otherwise.
  void restore_host_state(const std::vector<double>& state) {
    if (auto* lbfgs = std::get_if<LBFGS>(&policy_)) return lbfgs->restore_host_state(state);
    if (!state.empty())
      fail("the ", name(), " optimizer's saved state holds ", state.size(),
                   " values, expected none");
  }

  /// The held method.
  const Policy& policy() const { return policy_; }

 private:
  Policy policy_;
};

}  // namespace gradsum
