// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/core/error.hpp>
#include <gradsum/core/restored.hpp>
#include <gradsum/train/step.hpp>

#include <cmath>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace gradsum {

/// When to stop training. Every rule reads only aggregated values (the
/// StepResult, equal on every rank), so every rank stops at the same step.
///
///  - max_steps > 0: after that many steps;
///  - grad_tol > 0: when ||grad J|| <= grad_tol, a critical point (grad J = 0)
///    to that tolerance;
///  - loss_tol > 0: when |J_k - J_{k-1}| <= loss_tol max(|J_{k-1}|, tiny),
///    the relative change of the objective between evaluations.
struct StoppingRules {
  std::int64_t max_steps = 0;
  double grad_tol = 0;
  double loss_tol = 0;

  void validate() const {
    if (max_steps < 0) fail("gradsum::StoppingRules: max_steps must be >= 0, got ", max_steps);
    if (!(grad_tol >= 0) || !std::isfinite(grad_tol))
      fail("gradsum::StoppingRules: grad_tol must be non-negative and finite, got ", grad_tol);
    if (!(loss_tol >= 0) || !std::isfinite(loss_tol))
      fail("gradsum::StoppingRules: loss_tol must be non-negative and finite, got ", loss_tol);
  }
};

/// Why training stopped.
enum class StopReason { none, max_steps, gradient_norm, loss_change };

/// A stop reason in words, for messages: "maximum number of steps
/// reached", "gradient norm below tolerance (critical point)", "relative
/// change of the objective below tolerance", or "not stopped" (none: no
/// stopping rule ended training; a callback may have, see
/// FitResult::stopped_by).
inline const char* describe(StopReason reason) {
  switch (reason) {
    case StopReason::max_steps: return "maximum number of steps reached";
    case StopReason::gradient_norm: return "gradient norm below tolerance (critical point)";
    case StopReason::loss_change: return "relative change of the objective below tolerance";
    case StopReason::none: break;
  }
  return "not stopped";
}

/// The same words as describe(reason), as a std::string.
inline std::string to_string(StopReason reason) { return describe(reason); }

/// Writes describe(reason): `std::cout << result.reason`.
inline std::ostream& operator<<(std::ostream& out, StopReason reason) {
  return out << describe(reason);
}

/// Applies StoppingRules to a sequence of evaluations.
class Stopper {
 public:
  explicit Stopper(const StoppingRules& rules) : rules_(rules) { rules_.validate(); }

  /// Records the evaluation after step `steps_done` (>= 0) and says whether
  /// to stop, and why.
  StopReason check(std::int64_t steps_done, const StepResult& result) {
    StopReason reason = StopReason::none;
    if (rules_.grad_tol > 0 && result.gradient_norm <= rules_.grad_tol)
      reason = StopReason::gradient_norm;
    else if (rules_.loss_tol > 0 && has_previous_ &&
             std::fabs(result.loss - previous_) <=
                 rules_.loss_tol * std::fmax(std::fabs(previous_), 1e-300))
      reason = StopReason::loss_change;
    else if (rules_.max_steps > 0 && steps_done >= rules_.max_steps)
      reason = StopReason::max_steps;
    previous_ = result.loss;
    has_previous_ = true;
    return reason;
  }

  /// Appends the state check() carries between calls (the previous
  /// objective) to a loop state (see FitState::loop_state).
  void save_state(std::vector<double>& out) const {
    out.insert(out.end(), {tag, has_previous_ ? 1.0 : 0.0, previous_});
  }
  /// Reads back, from in[at …], what save_state wrote, advancing `at`.
  void restore_state(const std::vector<double>& in, std::size_t& at) {
    if (at >= in.size() || in[at] != tag || in.size() - at < 3)
      fail("gradsum::fit: the checkpoint's loop state does not begin with the stopping "
                   "rules' state (value ", at, " of ", in.size(), ")");
    has_previous_ = detail::restored_flag(in[at + 1], "gradsum::fit: the saved stopping-rule "
                                          "flag 'has a previous objective'");
    previous_ = in[at + 2];  // any loss, NaN included, is compared only by <=
    at += 3;
  }

 private:
  static constexpr double tag = 1;  // a loop-state record's kind
  StoppingRules rules_;
  double previous_ = 0;
  bool has_previous_ = false;
};

}  // namespace gradsum
