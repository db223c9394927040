// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gradsum/aggregation/local.hpp>
#include <gradsum/core/signature.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/limits.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/data/partition.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/optimizer/detail/learning_rate.hpp>
#include <gradsum/optimizer/sgd.hpp>
#include <gradsum/reduction/reproducible.hpp>
#include <gradsum/reduction/sum.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradsum {

/// The objective the step minimises, and how the summed gradient becomes
/// the gradient the optimizer sees.
///
///     J(theta) = (1/N) sum_i l(f(theta, x_i), y_i) + (l2 / 2) ||W||^2
///
/// with N the global number of samples in the batch (over every worker)
/// and W the regularised parameters (biases excluded). With `mean = false`
/// the sum is not divided by N.
/// What a step does when the aggregated loss or gradient is not finite
/// (a NaN or infinity from any worker): decided once, after aggregation,
/// the same way on every rank.
enum class NonFinite {
  throw_error,  ///< every rank throws gradsum::Error naming the rank and row
  skip          ///< the parameters stay as they are; the result says so
};

struct Objective {
  /// L2 penalty coefficient, >= 0 and finite.
  double l2 = 0;
  /// Divide the summed loss and gradient once by the global sample count.
  bool mean = true;
  /// What to do with a non-finite loss or gradient.
  NonFinite on_nonfinite = NonFinite::throw_error;

  /// Rejects a negative or non-finite penalty.
  void validate() const {
    if (!(l2 >= 0) || !std::isfinite(l2))
      detail::fail("gradsum::Objective: l2 must be non-negative and finite, "
                   "got ",
                   l2);
  }
};

/// What a step reports; the same on every rank.
struct StepResult {
  /// The objective J at the parameters the gradient was taken at.
  double loss = 0;
  /// Euclidean norm of the gradient of J (what the optimizer used).
  double gradient_norm = 0;
  /// Number of samples in the batch, over all workers.
  std::int64_t count = 0;
  /// True when the loss or gradient was not finite and the step was
  /// skipped (NonFinite::skip): the parameters were not updated.
  bool skipped = false;

  /// Worker statistics, measured after Step::measure_workers(parts): the
  /// workers (parts of every rank's rows) that held samples; the rest are
  /// NaN without measurement or with fewer than two such workers.
  std::int64_t workers = 0;
  /// Standard deviation over the workers of each worker's mean loss (the
  /// objective without its L2 term): how much mini-batch losses scatter.
  double worker_loss_spread = std::nan("");
  /// Unbiased estimate of tr(Sigma), the summed variance of one sample's
  /// loss gradient, from E ||g_b||^2 = ||G||^2 + tr(Sigma) / b at the
  /// workers' batch sizes b_w and the whole batch's B (McCandlish et al.,
  /// "An Empirical Model of Large-Batch Training", 2018):
  ///
  ///     tr(Sigma) = (sum_w ||S_w||^2 / b_w - ||S||^2 / B) / (W - 1),
  ///
  /// with S_w a worker's summed loss gradient and S = sum_w S_w.
  double noise_trace = std::nan("");
  /// Unbiased estimate of ||G||^2, the squared norm of the true gradient
  /// of the mean objective (L2 term included): ||S / B + l2 w||^2 -
  /// tr(Sigma) / B. May come out negative when the gradient is small
  /// against the noise. Their ratio, smoothed over steps, is the gradient
  /// noise scale (NoiseScale).
  double gradient_norm2_estimate = std::nan("");
};

namespace detail {

/// Finds the first row whose target the loss rejects or whose features are
/// not finite; returns n when every row is valid.
template <class Loss, class X, class Y>
struct FirstInvalidRow {
  Loss loss;
  X x;
  Y y;
  int num_outputs;

  KOKKOS_FUNCTION void operator()(std::int64_t r, std::int64_t& first) const {
    bool ok = loss.is_valid_target(y(r), num_outputs);
    for (std::size_t j = 0; j < x.extent(1); ++j) ok = ok && math::isfinite(x(r, j));
    if (!ok && r < first) first = r;
  }
};

/// g(j) = scale * sum(j) + l2 * theta(j) on regularised j; accumulates
/// ||g||^2 and ||W||^2.
template <class Model, class Scalar, class Sums, class Theta, class G>
struct Finalize {
  using value_type = Scalar[];
  using size_type = int;
  int value_count;  // 2
  Model model;
  Sums sums;
  Theta theta;
  G g;
  Scalar scale;
  Scalar l2;

  KOKKOS_FUNCTION void operator()(int j, Scalar* acc) const {
    const Scalar w = model.is_regularized(j) ? theta(j) : Scalar(0);
    const Scalar gj = scale * sums(j) + l2 * w;
    g(j) = gj;
    acc[0] += gj * gj;
    acc[1] += w * w;
  }
  KOKKOS_FUNCTION void init(Scalar* acc) const { acc[0] = acc[1] = 0; }
  KOKKOS_FUNCTION void join(Scalar* dst, const Scalar* src) const {
    dst[0] += src[0];
    dst[1] += src[1];
  }
};

/// One sample's Hessian contribution J^T (d^2 l / dz^2) J.
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct HessianBody : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  KOKKOS_FUNCTION void operator()(std::int64_t i, Scalar* acc) const {
    const std::int64_t r = this->rows(i);
    const Scalar* xi = &this->x(r, 0);
    constexpr int capacity = output_capacity<Model>::value;
    Scalar z[capacity] = {};
    Scalar d2[capacity * capacity] = {};
    this->model.forward(this->theta, xi, z);
    this->loss.second_derivative(z, this->model.num_outputs(), this->y(r), d2);
    this->model.hessian(this->theta, xi, d2, acc);
  }
};

/// Whether any of v(0 … n) is NaN or infinite. Blocking.
template <class ExecutionSpace, class View>
bool any_nonfinite(const ExecutionSpace& space, const View& v, int n) {
  int bad = 0;
  Kokkos::parallel_reduce(
      "gradsum::step::check_finite", Kokkos::RangePolicy<ExecutionSpace>(space, 0, n),
      KOKKOS_LAMBDA(int j, int& count) { count += math::isfinite(v(j)) ? 0 : 1; }, bad);
  return bad > 0;
}

/// The first selected sample whose loss or loss derivative is not finite.
template <class Model, class Loss, class Scalar, class X, class Y, class Rows>
struct FirstNonFiniteSample : PerSample<Model, Loss, Scalar, X, Y, Rows> {
  KOKKOS_FUNCTION void operator()(std::int64_t i, std::int64_t& first) const {
    const std::int64_t r = this->rows(i);
    constexpr int capacity = output_capacity<Model>::value;
    Scalar z[capacity] = {};
    Scalar dz[capacity] = {};
    const int k = this->model.num_outputs();
    this->model.forward(this->theta, &this->x(r, 0), z);
    bool ok = math::isfinite(this->loss.value(z, k, this->y(r)));
    this->loss.derivative(z, k, this->y(r), dz);
    for (int c = 0; c < k; ++c) ok = ok && math::isfinite(dz[c]);
    if (!ok && i < first) first = i;
  }
};

/// Whether a model names its architecture beyond its sizes (MLP: widths
/// and activations), for the workers' signature.
template <class M, class = void>
struct has_architecture : std::false_type {};
template <class M>
struct has_architecture<M, std::void_t<decltype(std::int64_t(std::declval<const M&>().architecture()))>>
    : std::true_type {};

/// Routes a gradient policy's reduce() call to a binned reduction's
/// reduce_bins() into the step's bin buffer.
template <class Reduction, class Scalar, class Bins>
struct BinsTarget {
  static constexpr bool binned = true;  // each sample's contribution on its own
  static constexpr bool rank_one_blocks = takes_rank_one_blocks<Reduction>::value;
  const Reduction& reduction;
  Bins bins;
  template <class ExecutionSpace, class Body, class OutView>
  void reduce(const ExecutionSpace& space, const std::string& label, std::int64_t n, int width,
              const Body& body, const OutView&) const {
    reduction.template reduce_bins<Scalar>(space, label, n, width, body, bins);
  }
};

/// Whether a gradient or aggregation policy combines workers by something
/// other than the plain sum (`bool robust() const`; false when absent).
template <class T, class = void>
struct has_robust : std::false_type {};
template <class T>
struct has_robust<T, std::void_t<decltype(bool(std::declval<const T&>().robust()))>>
    : std::true_type {};
template <class T>
bool combines_robustly(const T& policy) {
  if constexpr (has_robust<T>::value) return policy.robust();
  else return false;
}

/// Aggregates the step's buffer: an aggregation offering
/// `aggregate(space, buffer, count)` combines the first `count` entries
/// (the gradient) its own way and sums the rest (loss, count, flags).
template <class A, class Space, class View, class = void>
struct has_aggregate_leading : std::false_type {};
template <class A, class Space, class View>
struct has_aggregate_leading<A, Space, View,
                             std::void_t<decltype(std::declval<A&>().aggregate(
                                 std::declval<const Space&>(), std::declval<const View&>(),
                                 std::int64_t(0)))>> : std::true_type {};
template <class A, class Space, class View>
void aggregate_leading(A& aggregation, const Space& space, const View& buffer, std::int64_t count) {
  if constexpr (has_aggregate_leading<A, Space, View>::value)
    aggregation.aggregate(space, buffer, count);
  else
    aggregation.aggregate(space, buffer);
}

/// Analytic, or a wrapper of it (`inner_gradient`) that passes the
/// reduction through when it does not combine robustly.
template <class G, class = void>
struct is_analytic_based : std::is_same<G, Analytic> {};
template <class G>
struct is_analytic_based<G, std::void_t<typename G::inner_gradient>>
    : is_analytic_based<typename G::inner_gradient> {};

// The Reproducible path's kernels, as free functions of the space and
// the views only, so that every Step of a space shares one instance of
// each (as members they would be compiled again per model and optimizer).

/// Marks the `width` binned accumulators in `bins` empty. Asynchronous.
template <class ExecutionSpace, class Bins>
void binned_clear(const ExecutionSpace& space, const Bins& bins, int width) {
  constexpr int w = binned_width;
  Kokkos::parallel_for(
      "gradsum::step::binned_empty", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j) {
        bins(w * j) = empty_window;
        for (int k = 1; k < w; ++k) bins(w * j + k) = 0;
      });
}

/// Copies the window of each of the `width` accumulators in `work` into
/// `windows`; returns how many are poisoned (NaN or infinity). Blocking.
template <class ExecutionSpace, class Bins>
int binned_windows(const ExecutionSpace& space, const Bins& work, const Bins& windows, int width) {
  constexpr int w = binned_width;
  int poisoned = 0;
  Kokkos::parallel_reduce(
      "gradsum::step::binned_windows", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j, int& bad) {
        windows(j) = work(w * j);
        bad += windows(j) == poisoned_window ? 1 : 0;
      },
      poisoned);
  return poisoned;
}

/// Moves each accumulator of `work` to the agreed window `windows(j)` and
/// writes its bins, then the count, failure and non-finite flags, into
/// `message`. Asynchronous.
template <class ExecutionSpace, class Bins>
void binned_align(const ExecutionSpace& space, const Bins& work, const Bins& windows,
                  const Bins& message, int width, std::int64_t count, std::int64_t failed,
                  std::int64_t nonfinite) {
  constexpr int w = binned_width;
  Kokkos::parallel_for(
      "gradsum::step::binned_align", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j) {
        std::int64_t acc[w];
        for (int k = 0; k < w; ++k) acc[k] = work(w * j + k);
        const std::int64_t t = windows(j);
        if (t == poisoned_window || t == empty_window) {
          for (int k = 1; k < w; ++k) acc[k] = 0;
        } else if (acc[0] == empty_window || acc[0] == poisoned_window) {
          for (int k = 1; k < w; ++k) acc[k] = 0;  // a poisoned rank poisons t
        } else {
          raise_window(acc, t);
        }
        message(w * j) = 0;  // the window travels in `windows`
        for (int k = 1; k < w; ++k) message(w * j + k) = acc[k];
        if (j == 0) {
          message(w * width) = count;
          message(w * width + 1) = failed;
          message(w * width + 2) = nonfinite;
        }
      });
}

/// Rounds the aggregated bins of `message` (windows in `windows`) once into
/// sums(0 … width), and the count and flags after them. Asynchronous.
template <class ExecutionSpace, class Bins, class Sums>
void binned_round(const ExecutionSpace& space, const Bins& windows, const Bins& message,
                  const Sums& sums, int width) {
  using Scalar = typename Sums::non_const_value_type;
  constexpr int w = binned_width;
  Kokkos::parallel_for(
      "gradsum::step::binned_round", Kokkos::RangePolicy<ExecutionSpace>(space, 0, width),
      KOKKOS_LAMBDA(int j) {
        std::int64_t acc[w];
        acc[0] = windows(j);
        for (int k = 1; k < w; ++k) acc[k] = message(w * j + k);
        sums(j) = Scalar(binned_value(acc));
        if (j == 0) {
          sums(width) = Scalar(message(w * width));
          sums(width + 1) = Scalar(message(w * width + 1));
          sums(width + 2) = Scalar(message(w * width + 2));
        }
      });
}

template <class O, class = void>
struct needs_hessian : std::false_type {};
template <class O>
struct needs_hessian<O, std::enable_if_t<O::needs_hessian>> : std::true_type {};
template <class O, class = void>
struct has_uses_hessian : std::false_type {};
template <class O>
struct has_uses_hessian<O, std::void_t<decltype(std::declval<const O&>().uses_hessian())>>
    : std::true_type {};

/// Whether the step must hold the Hessian buffers for this optimizer: a
/// static `needs_hessian`, or a run-time `uses_hessian()` (a line-search
/// choice), so that they are allocated with everything else.
template <class O>
bool optimizer_uses_hessian(const O& optimizer) {
  if constexpr (needs_hessian<O>::value) return true;
  else if constexpr (has_uses_hessian<O>::value) return optimizer.uses_hessian();
  else return false;
}

}  // namespace detail

/// What an optimizer's update sees: the parameters to update in place,
/// the gradient of J there, its own state vectors, and (for line searches
/// and second-order methods) evaluations of J at other points over the
/// same rows, all aggregated over every worker. Created by Step::operator().
template <class StepType, class Theta, class Data, class Rows>
class UpdateContext {
 public:
  using execution_space = typename StepType::execution_space;
  using memory_space = typename StepType::memory_space;
  using scalar_type = typename StepType::scalar_type;
  using parameters_view = typename StepType::parameters_view;

  UpdateContext(StepType& step, const Theta& theta, const Data& data, const Rows& rows,
                const StepResult& result)
      : step_(step), theta_(theta), data_(data), rows_(rows), result_(result) {}

  /// The execution space and a RangePolicy over the P parameters.
  const execution_space& space() const { return step_.space(); }
  Kokkos::RangePolicy<execution_space> policy() const {
    return Kokkos::RangePolicy<execution_space>(step_.space(), 0, num_parameters());
  }
  int num_parameters() const { return step_.num_parameters(); }
  /// The parameters theta, to be updated in place.
  const Theta& parameters() const { return theta_; }
  /// The gradient of J (at theta until evaluate() is called).
  parameters_view gradient() const { return step_.gradient(); }
  /// The optimizer's state vectors, state_size(P) x P.
  typename StepType::state_view state() const { return step_.optimizer_state(); }
  /// J, its gradient norm and the count at theta.
  const StepResult& result() const { return result_; }
  /// J and its gradient at `point` over the same rows; the gradient lands
  /// in gradient(). Blocking; collective.
  template <class Point>
  StepResult evaluate(const Point& point) {
    return step_.evaluate(point, data_, rows_);
  }
  /// Copies a P-vector of the step's memory space into `out` on the host
  /// (through a host buffer the step allocated once; `out` is resized only
  /// when its length differs). Blocking.
  template <class View>
  void to_host(const View& v, std::vector<double>& out) {
    step_.copy_to_host(v, out);
  }
  /// Copies host values into a P-vector of the step's memory space. Blocking.
  template <class View>
  void from_host(const std::vector<double>& in, const View& v) {
    step_.copy_from_host(in, v);
  }
  /// Whether hessian() is available for this model and loss.
  static constexpr bool has_hessian = StepType::has_hessian;
  /// The Hessian of J at `point`, P x P row-major on the host. Blocking;
  /// collective. Throws when the model or loss has no second derivatives.
  template <class Point>
  const std::vector<double>& hessian(const Point& point) {
    if constexpr (has_hessian) {
      return step_.hessian(point, data_, rows_);
    } else {
      detail::fail("gradsum::Step: this optimizer needs the Hessian, which model ",
                   step_.model().name(), " with loss ", step_.loss().name(),
                   " does not provide");
    }
  }
  /// Whether the loss declares J quadratic in the outputs (squared error).
  static constexpr bool is_quadratic = detail::is_quadratic_loss<typename StepType::loss_type>::value;

 private:
  StepType& step_;
  const Theta& theta_;
  const Data& data_;
  const Rows& rows_;
  StepResult result_;
};

/// One data-parallel training step, composed of compile-time policies.
///
///     local  = Reduction over my rows of Gradient(Model, Loss)  (on the space)
///     global = Aggregation(local) across workers                (MPI or none)
///     g      = global / N + l2 W                                (Objective)
///     theta  = Optimizer(theta, g)
///
/// Template parameters: the Kokkos `ExecutionSpace` the kernels run on, the
/// `Scalar` type of data and parameters, and one type per policy role
/// (see DESIGN.md §3 and core/requirements.hpp). Parameters, gradients and
/// optimizer state live in `ExecutionSpace::memory_space`; the data may live
/// in any memory space the execution space can access.
///
/// All buffers are allocated by the constructor; evaluating and stepping
/// allocate nothing. Both are blocking (they return host values) and, with
/// a distributed Aggregation, collective: every worker must call them in
/// the same order.
template <class ExecutionSpace, class Scalar, class Model, class Loss,
          class Optimizer = SGD, class Gradient = Analytic,
          class Reduction = Sum, class Aggregation = Local>
class Step {
  static_assert(Kokkos::is_execution_space<ExecutionSpace>::value,
                "gradsum::Step: ExecutionSpace must be a Kokkos execution space");
  static_assert(std::is_floating_point<Scalar>::value,
                "gradsum::Step: Scalar must be float or double");
  static_assert(detail::has_num_features<Model>::value,
                "gradsum::Step: the Model must provide `int num_features() const`");
  static_assert(detail::has_num_outputs<Model>::value,
                "gradsum::Step: the Model must provide `int num_outputs() const`");
  static_assert(detail::has_num_parameters<Model>::value,
                "gradsum::Step: the Model must provide `int num_parameters() const`");
  static_assert(detail::has_is_regularized<Model>::value,
                "gradsum::Step: the Model must provide `bool is_regularized(int j) const`");
  static_assert(detail::has_name<Model>::value,
                "gradsum::Step: the Model must provide `name()`");
  static_assert(detail::has_forward<Model, Scalar>::value,
                "gradsum::Step: the Model must provide `forward(const Scalar* "
                "theta, const Scalar* x, Scalar* z) const`");
  static_assert(detail::has_backward<Model, Scalar>::value,
                "gradsum::Step: the Model must provide `backward(const Scalar* "
                "theta, const Scalar* x, const Scalar* dz, Scalar* g) const`");
  static_assert(detail::has_name<Loss>::value,
                "gradsum::Step: the Loss must provide `name()`");
  static_assert(detail::has_supports_outputs<Loss>::value,
                "gradsum::Step: the Loss must provide `bool supports_outputs(int k) const`");
  static_assert(detail::has_is_valid_target<Loss, Scalar>::value,
                "gradsum::Step: the Loss must provide `bool is_valid_target(Scalar y, int k) const`");
  static_assert(detail::has_value<Loss, Scalar>::value,
                "gradsum::Step: the Loss must provide `Scalar value(const Scalar* z, int k, Scalar y) const`");
  static_assert(detail::has_derivative<Loss, Scalar>::value,
                "gradsum::Step: the Loss must provide `void derivative(const "
                "Scalar* z, int k, Scalar y, Scalar* dz) const`");
  static_assert(detail::has_name<Optimizer>::value,
                "gradsum::Step: the Optimizer must provide `name()`");
  static_assert(detail::has_validate<Optimizer>::value,
                "gradsum::Step: the Optimizer must provide `void validate() const`");
  static_assert(detail::has_state_size<Optimizer>::value,
                "gradsum::Step: the Optimizer must provide `int state_size(int P) const` "
                "(the number of P-vectors of state it keeps)");
  static_assert(is_gradient_v<Gradient>,
                "gradsum::Step: the Gradient policy must provide name(), "
                "validate() and workspace_size(P)");
  static_assert(is_reduction_v<Reduction, Scalar>,
                "gradsum::Step: the Reduction must provide name() and "
                "reduce(space, label, n, width, body, out)");
  static_assert(detail::has_aggregate<Aggregation, Scalar>::value,
                "gradsum::Step: the Aggregation must provide `aggregate(space, buffer)`");
  static_assert(detail::has_agree<Aggregation>::value,
                "gradsum::Step: the Aggregation must provide `void agree(const "
                "Signature&, const std::string& local_error)`");
  static_assert(detail::has_first_error<Aggregation>::value,
                "gradsum::Step: the Aggregation must provide `std::string "
                "first_error(const std::string& local_error)`");
  static_assert(detail::has_allocate<Aggregation, Scalar>::value,
                "gradsum::Step: the Aggregation must provide `template <class "
                "Scalar, class MemorySpace> void allocate(std::size_t n)`");

  // The aggregated buffer: P gradient sums, then the loss sum, the sample
  // count, the number of failed and of non-finite workers, and the worker
  // statistics (sum of ||S_w||^2 / b_w, workers, sum of mean losses and of
  // their squares), so one message carries all.
  static constexpr int slots = 8;
  // Whether the reduction keeps integer bins that the step aggregates.
  static constexpr bool binned = detail::is_binned_reduction<Reduction>::value;
  using bins_view = Kokkos::View<std::int64_t*, typename ExecutionSpace::memory_space>;

 public:
  using execution_space = ExecutionSpace;
  using memory_space = typename ExecutionSpace::memory_space;
  using scalar_type = Scalar;
  using parameters_view = Kokkos::View<Scalar*, memory_space>;
  /// Optimizer state: state_size(P) rows of P values, zeros at the start.
  using state_view = Kokkos::View<Scalar**, Kokkos::LayoutRight, memory_space>;
  using model_type = Model;
  using loss_type = Loss;
  using optimizer_type = Optimizer;
  using gradient_type = Gradient;
  using reduction_type = Reduction;
  using aggregation_type = Aggregation;

  /// Builds the step and allocates every buffer it will use. Validates the
  /// run-time knobs of every policy and the model/loss pairing.
  Step(const ExecutionSpace& space, const Model& model, const Loss& loss,
       const Optimizer& optimizer = {}, const Objective& objective = {},
       const Gradient& gradient = {}, const Reduction& reduction = {},
       const Aggregation& aggregation = {})
      : space_(space),
        model_(model),
        loss_(loss),
        optimizer_(optimizer),
        objective_(objective),
        gradient_(gradient),
        reduction_(reduction),
        aggregation_(aggregation) {
    // A value one worker rejects must fail every worker, not leave the
    // others waiting in a collective: local errors travel with the
    // agreement on the signature.
    std::string local_error;
    try {
      validate_policies();
    } catch (const Error& e) {
      local_error = e.what();
    }
    aggregation_.agree(signature(), local_error);
    const int P = model_.num_parameters();
    sums_ = parameters_view("gradsum::step::sums", std::size_t(P) + slots);
    gradient_view_ = parameters_view("gradsum::step::gradient", std::size_t(P));
    accumulated_ = parameters_view("gradsum::step::accumulated", std::size_t(P) + 1);
    work_ = parameters_view("gradsum::step::workspace",
                            gradient_.workspace_size(P));
    host_tail_ = Kokkos::View<Scalar[2], Kokkos::HostSpace>("gradsum::step::tail");
    host_norms_ = Kokkos::View<Scalar[2], Kokkos::HostSpace>("gradsum::step::norms");
    host_read_ = Kokkos::View<Scalar[slots], Kokkos::HostSpace>("gradsum::step::read");
    host_vector_ = Kokkos::View<Scalar*, Kokkos::HostSpace>("gradsum::step::host_vector",
                                                            std::size_t(P));
    host_write_ = Kokkos::View<Scalar[slots - 1], Kokkos::HostSpace>("gradsum::step::write");
    state_ = state_view("gradsum::step::optimizer_state",
                        std::size_t(optimizer_.state_size(P)), std::size_t(P));
    aggregation_.template allocate<Scalar, memory_space>(std::size_t(P) + slots);
    if constexpr (binned) {
      const std::size_t width = std::size_t(P) + 1;
      bin_work_ = bins_view("gradsum::step::bins", detail::binned_work_size(width));
      bin_message_ = bins_view("gradsum::step::bins_message", width * detail::binned_width + 3);
      windows_ = bins_view("gradsum::step::bin_windows", width);
      norm_bins_ = bins_view("gradsum::step::norm_bins", detail::binned_work_size(2));
      host_norm_bins_ = Kokkos::create_mirror_view(Kokkos::HostSpace(), norm_bins_);
      aggregation_.template allocate<std::int64_t, memory_space>(bin_message_.extent(0));
    }
    if (detail::optimizer_uses_hessian(optimizer_)) allocate_hessian();
  }

  /// What every worker must agree on: sizes, scalar type, policy names,
  /// the objective and the learning rate. Compared across workers by the step's constructor.
  Signature signature() const {
    Signature sig;
    sig.add("number of parameters", model_.num_parameters());
    sig.add("number of features", model_.num_features());
    sig.add("number of outputs", model_.num_outputs());
    if constexpr (detail::has_architecture<Model>::value)
      sig.add("model architecture", model_.architecture());
    sig.add("scalar size in bytes", std::int64_t(sizeof(Scalar)));
    sig.add_hash("policies", detail::concat(model_.name(), '/', loss_.name(), '/',
                                            gradient_.name(), '/', reduction_.name(), '/',
                                            aggregation_.name(), '/', optimizer_.name()));
    sig.add("objective mean", objective_.mean ? 1 : 0);
    sig.add_bits("objective l2", objective_.l2);
    sig.add("non-finite policy", objective_.on_nonfinite == NonFinite::skip ? 1 : 0);
    // Ranks updating with different rates would drift apart silently.
    const double lr = detail::learning_rate(optimizer_);
    if (!std::isnan(lr)) sig.add_bits("learning rate", lr);
    return sig;
  }

  /// Number of parameters P.
  int num_parameters() const { return model_.num_parameters(); }

  /// A new parameter vector of length P in the step's memory space, zeros.
  parameters_view make_parameters() const {
    return parameters_view("gradsum::parameters",
                           std::size_t(num_parameters()));
  }

  /// The objective and its gradient at `theta` over the rows `rows` of
  /// `data`, summed over every worker, without updating. Afterwards
  /// `gradient()` holds the gradient of J and `sums()` the summed
  /// gradient, loss and count. Blocking; collective.
  ///
  /// Throws gradsum::Error when theta or data do not fit the model, when a
  /// target or feature is invalid (checked once per data set), and when
  /// the batch holds no sample on any worker.
  template <class Theta, class Data, class Rows>
  StepResult evaluate(const Theta& theta, const Data& data, const Rows& rows) {
    static_assert(
        Kokkos::SpaceAccessibility<ExecutionSpace,
                                   typename Data::memory_space>::accessible,
        "gradsum::Step::evaluate: the data's memory space is not accessible "
        "from the step's execution space; copy the data with "
        "Kokkos::create_mirror_view_and_copy first");
    static_assert(
        Kokkos::SpaceAccessibility<ExecutionSpace,
                                   typename Theta::memory_space>::accessible,
        "gradsum::Step::evaluate: the parameters' memory space is not "
        "accessible from the step's execution space");
    static_assert(std::is_same<typename Data::scalar_type, Scalar>::value,
                  "gradsum::Step::evaluate: the data's scalar type differs "
                  "from the step's Scalar");
    const int P = num_parameters();
    // Errors found on this worker do not throw here: they are counted in
    // the buffer's last slot, which every worker sees after aggregation.
    std::string local_error = check_shapes(theta, data, rows);
    if (local_error.empty()) local_error = check_rows_once(data);
    bool local_nonfinite = false;
    // A robust combination of parts or ranks needs each worker's rounded
    // sum, so the bins then stay inside each worker.
    bool bins = false;
    if constexpr (binned) {
      bins = uses_bins();
      if (bins) {
        if constexpr (is_micro_batches<Rows>::value) {
          if (rows.parts.size() == 1)
            local_nonfinite = binned_sums(theta, data, rows.parts[0], local_error.empty());
          else
            local_nonfinite = binned_sums(theta, data, RowRange{}, false);  // local_error is set
        } else {
          local_nonfinite = binned_sums(theta, data, rows, local_error.empty());
        }
      }
    }
    if (!bins) {
      {
        detail::ScopedRegion region("gradsum::step::gradient");
        auto tail = Kokkos::subview(sums_, Kokkos::make_pair(P + 1, P + slots));
        for (double& v : worker_totals_) v = 0;
        if (local_error.empty()) {
          local_sums(theta, data, rows);
          local_nonfinite = detail::any_nonfinite(space_, sums_, P + 1);
          host_write_(0) = Scalar(rows.size());
          host_write_(1) = Scalar(0);
        } else {
          Kokkos::deep_copy(space_, sums_, Scalar(0));
          host_write_(0) = Scalar(0);
          host_write_(1) = Scalar(1);
        }
        host_write_(2) = Scalar(local_nonfinite ? 1 : 0);
        for (int k = 0; k < 4; ++k) host_write_(3 + k) = Scalar(worker_totals_[k]);
        Kokkos::deep_copy(space_, tail, host_write_);
      }
      detail::ScopedRegion region("gradsum::step::aggregate");
      detail::aggregate_leading(aggregation_, space_, sums_, P);
    }
    detail::ScopedRegion region("gradsum::step::finalize");
    Kokkos::deep_copy(space_, host_read_, Kokkos::subview(sums_, Kokkos::make_pair(P, P + slots)));
    space_.fence();
    if (host_read_(2) > Scalar(0)) throw Error(aggregation_.first_error(local_error));
    const double loss_sum = double(host_read_(0));
    const auto count = std::int64_t(host_read_(1));
    if (host_read_(3) > Scalar(0)) {
      // Every worker is here: the count of non-finite workers was summed.
      if (objective_.on_nonfinite == NonFinite::skip) {
        StepResult skipped;
        skipped.loss = skipped.gradient_norm = std::nan("");
        skipped.count = count;
        skipped.skipped = true;
        return skipped;
      }
      throw Error(aggregation_.first_error(
          local_nonfinite ? describe_nonfinite(theta, data, rows) : std::string()));
    }
    if (count <= 0)
      detail::fail("gradsum::Step::evaluate: the batch holds no samples on "
                   "any worker (empty data set or empty row selection); a "
                   "gradient needs at least one sample");
    const double scale = objective_.mean ? 1.0 / double(count) : 1.0;
    using Functor = detail::Finalize<Model, Scalar, parameters_view, Theta,
                                     parameters_view>;
    Kokkos::View<Scalar*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        norms(host_norms_.data(), 2);
    const Functor finalize{2, model_, sums_, theta, gradient_view_, Scalar(scale),
                           Scalar(objective_.l2)};
    if constexpr (binned) {
      // The norms too are the same bits whatever the thread count.
      reduction_.template reduce_bins<Scalar>(space_, "gradsum::step::finalize", P, 2,
                                              finalize, norm_bins_);
      Kokkos::deep_copy(space_, host_norm_bins_, norm_bins_);
      space_.fence();
      norms(0) = Scalar(detail::binned_value(host_norm_bins_.data()));
      norms(1) = Scalar(detail::binned_value(host_norm_bins_.data() + detail::binned_width));
    } else {
      Kokkos::parallel_reduce("gradsum::step::finalize",
                              Kokkos::RangePolicy<ExecutionSpace>(space_, 0, P), finalize, norms);
    }
    StepResult result;
    result.loss = loss_sum * scale + objective_.l2 / 2 * double(norms(1));
    result.gradient_norm = std::sqrt(double(norms(0)));
    result.count = count;
    if (worker_parts_ > 0 && !bins) worker_statistics(theta, result);
    if (!std::isfinite(result.loss) || !std::isfinite(result.gradient_norm)) {
      // Finite on every worker but not in total: the sum overflowed. Every
      // rank holds the same values, so every rank decides the same way.
      if (objective_.on_nonfinite == NonFinite::skip) {
        result.skipped = true;
        return result;
      }
      detail::fail("gradsum::Step::evaluate: the objective or its gradient is not finite "
                   "after summing over workers (loss ", result.loss, ", gradient norm ",
                   result.gradient_norm, "); every worker's own sum was finite");
    }
    return result;
  }

  /// evaluate() over every row of `data`.
  template <class Theta, class Data>
  StepResult evaluate(const Theta& theta, const Data& data) {
    return evaluate(theta, data, data.all_rows());
  }

  /// One training step: evaluate() at `theta`, then the optimizer's update
  /// of `theta` in place. The result describes `theta` before the update.
  /// Blocking; collective.
  template <class Theta, class Data, class Rows>
  StepResult operator()(const Theta& theta, const Data& data, const Rows& rows) {
    const StepResult result = evaluate(theta, data, rows);
    if (result.skipped) {
      ++skipped_;
      return result;
    }
    detail::ScopedRegion region("gradsum::step::update");
    UpdateContext<Step, Theta, Data, Rows> context(*this, theta, data, rows, result);
    optimizer_.update(context);
    space_.fence();
    return result;
  }

  /// Whether the model and loss provide second derivatives (Newton, exact
  /// line search): Model::hessian and Loss::second_derivative.
  static constexpr bool has_hessian =
      detail::has_model_hessian<Model, Scalar>::value &&
      detail::has_second_derivative<Loss, Scalar>::value;

  /// The Hessian of the objective J at `theta` over `rows`, summed over
  /// every worker like the gradient: a host P x P row-major matrix. The
  /// P x P buffers are allocated by the constructor when the optimizer
  /// declares `needs_hessian` or its `uses_hessian()` is true, else on the
  /// first call. Blocking; collective.
  template <class Theta, class Data, class Rows>
  const std::vector<double>& hessian(const Theta& theta, const Data& data, const Rows& rows) {
    static_assert(has_hessian,
                  "gradsum::Step::hessian: the Model must provide `hessian(theta, x, d2, H)` "
                  "and the Loss `second_derivative(z, k, y, d2)` (Linear and Softmax with "
                  "the library's losses do)");
    if constexpr (has_hessian) {
      const int P = num_parameters();
      const std::size_t PP = std::size_t(P) * std::size_t(P);
      if (hessian_sums_.extent(0) == 0) allocate_hessian();
      std::string local_error = check_shapes(theta, data, rows);
      if (local_error.empty()) local_error = check_rows_once(data);
      detail::ScopedRegion region("gradsum::step::hessian");
      auto tail = Kokkos::subview(hessian_sums_, Kokkos::make_pair(PP, PP + 2));
      if (local_error.empty()) {
        using Body = detail::HessianBody<Model, Loss, Scalar, typename Data::features_view,
                                         typename Data::targets_view, Rows>;
        const Body body{{model_, loss_, theta.data(), data.features(), data.targets(), rows}};
        bool in_bins = false;
        if constexpr (binned) {
          // In the step's own bins: Reproducible::reduce would allocate them per call.
          in_bins = detail::bins_in_use(reduction_);
          if (in_bins) {
            reduction_.template reduce_bins<Scalar>(space_, "gradsum::step::hessian", rows.size(),
                                                    int(PP), body, hessian_bins_);
            detail::round_binned(space_, hessian_bins_, int(PP), hessian_sums_);
          }
        }
        if (!in_bins)
          reduction_.reduce(space_, "gradsum::step::hessian", rows.size(), int(PP), body,
                            hessian_sums_);
        host_tail_(0) = Scalar(rows.size());
        host_tail_(1) = Scalar(0);
      } else {
        Kokkos::deep_copy(space_, hessian_sums_, Scalar(0));
        host_tail_(0) = Scalar(0);
        host_tail_(1) = Scalar(1);
      }
      Kokkos::deep_copy(space_, tail, host_tail_);
      detail::aggregate_leading(aggregation_, space_, hessian_sums_, std::int64_t(PP));
      Kokkos::deep_copy(space_, host_hessian_sums_, hessian_sums_);
      space_.fence();
      if (host_hessian_sums_(PP + 1) > Scalar(0))
        throw Error(aggregation_.first_error(local_error));
      const double count = double(host_hessian_sums_(PP));
      if (!(count > 0))
        detail::fail("gradsum::Step::hessian: the batch holds no samples on any worker");
      const double scale = objective_.mean ? 1.0 / count : 1.0;
      hessian_.resize(PP);
      for (std::size_t e = 0; e < PP; ++e) hessian_[e] = scale * double(host_hessian_sums_(e));
      for (int j = 0; j < P; ++j)
        if (model_.is_regularized(j)) hessian_[std::size_t(j) * P + j] += objective_.l2;
    }
    return hessian_;
  }

  /// One training step over every row of `data`.
  template <class Theta, class Data>
  StepResult operator()(const Theta& theta, const Data& data) {
    return (*this)(theta, data, data.all_rows());
  }

  /// Host round trips for optimizers that solve on the host (Newton,
  /// exact line search), through one host buffer allocated by the
  /// constructor. Blocking.
  template <class View>
  void copy_to_host(const View& v, std::vector<double>& out) {
    Kokkos::deep_copy(space_, host_vector_, v);
    space_.fence();
    out.resize(host_vector_.extent(0));
    for (std::size_t j = 0; j < out.size(); ++j) out[j] = double(host_vector_(j));
  }
  template <class View>
  void copy_from_host(const std::vector<double>& in, const View& v) {
    for (std::size_t j = 0; j < host_vector_.extent(0); ++j) host_vector_(j) = Scalar(in[j]);
    Kokkos::deep_copy(space_, v, host_vector_);
    space_.fence();
  }

  /// Part of evaluate() (public only because CUDA lambdas cannot live in
  /// private members): the summed gradient and loss over my rows into
  /// sums(0 … P+1); for MicroBatches the parts one after the other, added
  /// up in a buffer the constructor allocated, before any aggregation.
  template <class Theta, class Data, class Rows>
  void local_sums(const Theta& theta, const Data& data, const Rows& rows) {
    if constexpr (is_micro_batches<Rows>::value) {
      if (rows.parts.size() == 1) return local_sums(theta, data, rows.parts[0]);
      auto total = accumulated_;
      auto sums = sums_;
      Kokkos::deep_copy(space_, total, Scalar(0));
      for (const auto& part : rows.parts) {
        gradient_.sum(space_, model_, loss_, reduction_, theta, data, part, sums_, work_);
        if (worker_parts_ > 0) add_worker(part.size());
        Kokkos::parallel_for(
            "gradsum::step::accumulate",
            Kokkos::RangePolicy<ExecutionSpace>(space_, 0, int(total.extent(0))),
            KOKKOS_LAMBDA(int j) { total(j) += sums(j); });
      }
      Kokkos::deep_copy(space_, Kokkos::subview(sums_, Kokkos::make_pair(0, int(total.extent(0)))),
                        total);
    } else if (worker_parts_ > 1) {  // the rows in parts, each one worker
      MicroBatches<Rows> parts;
      for (int k = 0; k < worker_parts_; ++k) parts.parts.push_back(partition(rows, worker_parts_, k));
      local_sums(theta, data, parts);
    } else {
      gradient_.sum(space_, model_, loss_, reduction_, theta, data, rows, sums_, work_);
      if (worker_parts_ > 0) add_worker(rows.size());
    }
  }

  /// Part of evaluate() (public only because CUDA lambdas cannot live in
  /// private members): adds the part of `b` samples whose sums sums() holds
  /// to this rank's worker statistics.
  void add_worker(std::int64_t b) {
    if (b <= 0) return;  // a worker without samples says nothing about the noise
    const int P = num_parameters();
    auto sums = sums_;
    double norm2 = 0;
    Kokkos::parallel_reduce(
        "gradsum::step::worker_norm", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, P),
        KOKKOS_LAMBDA(int j, double& acc) { acc += double(sums(j)) * double(sums(j)); }, norm2);
    Kokkos::deep_copy(space_, host_scalar_, Kokkos::subview(sums_, P));
    space_.fence();
    const double loss = double(host_scalar_()) / double(b);
    worker_totals_[0] += norm2 / double(b);
    worker_totals_[1] += 1;
    worker_totals_[2] += loss;
    worker_totals_[3] += loss * loss;
  }

  /// Part of evaluate() (public for CUDA lambdas): the worker statistics
  /// of `result` from the aggregated buffer (see StepResult::noise_trace).
  template <class Theta>
  void worker_statistics(const Theta& theta, StepResult& result) {
    const double W = double(host_read_(5)), B = double(result.count);
    result.workers = std::int64_t(W);
    if (W < 2) return;
    const double mean = double(host_read_(6)) / W;
    result.worker_loss_spread =
        std::sqrt(std::fmax(0.0, (double(host_read_(7)) - W * mean * mean) / (W - 1)));
    const int P = num_parameters();
    auto sums = sums_;
    const Model model = model_;
    const double l2 = objective_.l2;
    double sum2 = 0, mean2 = 0;  // ||S||^2 and ||S / B + l2 w||^2
    Kokkos::parallel_reduce(
        "gradsum::step::worker_statistics", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, P),
        KOKKOS_LAMBDA(int j, double& acc) { acc += double(sums(j)) * double(sums(j)); }, sum2);
    Kokkos::parallel_reduce(
        "gradsum::step::worker_statistics", Kokkos::RangePolicy<ExecutionSpace>(space_, 0, P),
        KOKKOS_LAMBDA(int j, double& acc) {
          const double g = double(sums(j)) / B + (model.is_regularized(j) ? l2 * double(theta(j)) : 0.0);
          acc += g * g;
        },
        mean2);
    result.noise_trace = (double(host_read_(4)) - sum2 / B) / (W - 1);
    result.gradient_norm2_estimate = mean2 - result.noise_trace / B;
  }

  /// Measures worker statistics from the next evaluation on (see
  /// StepResult::workers and below): every rank sums its rows in
  /// `parts_per_rank` contiguous parts, each part one worker (with
  /// MicroBatches, every micro-batch is one worker instead). It costs one
  /// norm over the P sums per worker and four more values in the message
  /// the step sends anyway: never a second pass over the data, nor
  /// another collective. With the same global batch and the same parts,
  /// the estimates are the same whatever the number of ranks (up to
  /// rounding): use parts_per_rank = W / ranks for W workers in all.
  /// 0 stops measuring. Needs a reduction without integer bins (Sum,
  /// Compensated). Call it on every rank with the same value.
  void measure_workers(int parts_per_rank) {
    if (parts_per_rank < 0 || parts_per_rank > (1 << 20))
      detail::fail("gradsum::Step::measure_workers: parts_per_rank must be in [0, 2^20], got ",
                   parts_per_rank);
    if (parts_per_rank > 0 &&
        (detail::combines_robustly(gradient_) || detail::combines_robustly(aggregation_)))
      detail::fail("gradsum::Step::measure_workers: a robust combination of workers (median, "
                   "trimmed mean, norm clipping) does not sum their gradients, so the noise "
                   "estimates would not hold; measure with the plain sum of workers");
    if (parts_per_rank > 0 && uses_bins())
      detail::fail("gradsum::Step::measure_workers: the ", reduction_.name(), " reduction "
                   "aggregates integer bins, not per-worker sums; measure with the sum or "
                   "compensated reduction");
    if (host_scalar_.data() == nullptr)
      host_scalar_ = Kokkos::View<Scalar, Kokkos::HostSpace>("gradsum::step::worker_loss");
    worker_parts_ = parts_per_rank;
  }
  /// Parts per rank measure_workers() set (0: not measuring).
  int worker_parts() const { return worker_parts_; }

  /// The Hessian over a single micro-batch; with several (gradient
  /// accumulation) every rank throws the same gradsum::Error before any
  /// collective: Newton and exact line search need one batch.
  template <class Theta, class Data, class Rows>
  const std::vector<double>& hessian(const Theta& theta, const Data& data,
                                     const MicroBatches<Rows>& micro) {
    if (micro.parts.size() == 1) return hessian(theta, data, micro.parts[0]);
    detail::fail("gradsum::Step::hessian: optimizer ", optimizer_.name(),
                 " needs the Hessian, which gradient accumulation (MicroBatches) does not "
                 "provide; use accumulate = 1");
  }

  /// Part of evaluate() with the Reproducible reduction (public only
  /// because CUDA lambdas cannot live in private members): integer bins per
  /// coordinate, their windows agreed across workers (one small
  /// max-collective), the bins summed across workers as integers in one
  /// message with the count and failure count, then rounded once into
  /// sums(). Collective.
  template <class Theta, class Data, class Rows>
  bool binned_sums(const Theta& theta, const Data& data, const Rows& rows, bool ok) {
    static_assert(detail::is_analytic_based<Gradient>::value,
                  "gradsum::Step: the Reproducible reduction needs the Analytic gradient policy "
                  "(or VirtualWorkers<Analytic>)");
    static_assert(detail::has_aggregate_max<Aggregation>::value,
                  "gradsum::Step: the Reproducible reduction needs an Aggregation with "
                  "`aggregate_max(space, values)`");
    const int width = num_parameters() + 1;
    {
      detail::ScopedRegion region("gradsum::step::gradient");
      if (ok) {
        detail::BinsTarget<Reduction, Scalar, bins_view> target{reduction_, bin_work_};
        gradient_.sum(space_, model_, loss_, target, theta, data, rows, sums_, work_);
      } else {
        detail::binned_clear(space_, bin_work_, width);
      }
    }
    detail::ScopedRegion region("gradsum::step::aggregate");
    const int poisoned = detail::binned_windows(space_, bin_work_, windows_, width);
    aggregation_.aggregate_max(space_, windows_);
    detail::binned_align(space_, bin_work_, windows_, bin_message_, width,
                         ok ? std::int64_t(rows.size()) : 0, ok ? 0 : 1, poisoned > 0 ? 1 : 0);
    aggregation_.aggregate(space_, bin_message_);
    detail::binned_round(space_, windows_, bin_message_, sums_, width);
    return poisoned > 0;
  }

  /// The gradient of J from the last evaluation (length P).
  parameters_view gradient() const { return gradient_view_; }
  /// The summed gradient (P values), then the summed loss, the sample
  /// count and the number of failed workers (0), from the last
  /// evaluation, over every worker. Counts are exact up to 2^53 samples in
  /// double and 2^24 in float.
  parameters_view sums() const { return sums_; }

  const ExecutionSpace& space() const { return space_; }
  const Model& model() const { return model_; }
  const Loss& loss() const { return loss_; }
  Optimizer& optimizer() { return optimizer_; }
  /// The gradient and reduction policies (run-time knobs included).
  const Gradient& gradient_policy() const { return gradient_; }
  const Reduction& reduction() const { return reduction_; }
  /// Steps skipped because of a non-finite loss or gradient (NonFinite::skip).
  std::int64_t skipped_steps() const { return skipped_; }
  /// The optimizer's state vectors (state_size(P) x P).
  state_view optimizer_state() const { return state_; }
  const Objective& objective() const { return objective_; }
  Aggregation& aggregation() { return aggregation_; }

 private:
  void allocate_hessian() {
    const std::size_t P = std::size_t(num_parameters());
    hessian_sums_ = parameters_view("gradsum::step::hessian", P * P + 2);
    host_hessian_sums_ = Kokkos::create_mirror_view(Kokkos::HostSpace(), hessian_sums_);
    if constexpr (binned) {
      if (detail::bins_in_use(reduction_))
        hessian_bins_ = bins_view("gradsum::step::hessian_bins", detail::binned_work_size(P * P));
    }
    aggregation_.template allocate<Scalar, memory_space>(P * P + 2 > P + slots ? P * P + 2
                                                                               : P + slots);
  }

  void validate_policies() const {
    const int k = model_.num_outputs();
    if (!loss_.supports_outputs(k))
      detail::fail("gradsum::Step: loss ", loss_.name(),
                   " cannot take a model with ", k, " output(s) (model ",
                   model_.name(), ")");
    if (k > detail::output_capacity<Model>::value)
      detail::fail("gradsum::Step: model ", model_.name(), " has ", k,
                   " outputs, more than the per-sample limit of ",
                   detail::output_capacity<Model>::value,
                   " (define GRADSUM_MAX_OUTPUTS to raise it)");
    objective_.validate();
    gradient_.validate();
    optimizer_.validate();
  }

  // Returns what is wrong with the arguments, or an empty string.
  template <class Theta, class Data, class Rows>
  std::string check_shapes(const Theta& theta, const Data& data, const Rows& rows) const {
    if (std::int64_t(theta.extent(0)) != model_.num_parameters())
      return detail::concat("gradsum::Step::evaluate: theta has ", theta.extent(0),
                            " entries but model ", model_.name(), " has ",
                            model_.num_parameters(), " parameters");
    if (data.num_features() != model_.num_features())
      return detail::concat("gradsum::Step::evaluate: the data have ",
                            data.num_features(), " features but model ",
                            model_.name(), " expects ", model_.num_features());
    if (rows.size() > 0 &&
        (rows.begin < 0 || rows.end > std::int64_t(row_limit(data, rows))))
      return detail::concat("gradsum::Step::evaluate: rows [", rows.begin, ", ",
                            rows.end, ") are outside the ", row_limit(data, rows),
                            " available");
    return {};
  }

  // Whether this evaluation sums into integer bins: a binned reduction
  // that uses them now, with no robust combination of workers (which needs
  // each worker's rounded sum).
  bool uses_bins() const {
    if constexpr (binned)
      return detail::bins_in_use(reduction_) && !detail::combines_robustly(gradient_) &&
             !detail::combines_robustly(aggregation_);
    else
      return false;
  }

  template <class Theta, class Data, class Rows>
  std::string check_shapes(const Theta& theta, const Data& data,
                           const MicroBatches<Rows>& micro) const {
    if constexpr (binned) {
      // Several micro-batches cannot share the bins; one is a plain batch.
      if (micro.parts.size() > 1 && uses_bins())
        return "gradsum::Step::evaluate: gradient accumulation (MicroBatches) does not work with "
               "the Reproducible reduction; use accumulate = 1 or the Sum reduction";
    }
    for (const auto& part : micro.parts) {
      const std::string error = check_shapes(theta, data, part);
      if (!error.empty()) return error;
    }
    return check_shapes(theta, data, RowRange{});
  }

  template <class Data>
  static std::int64_t row_limit(const Data& data, const RowRange&) {
    return data.num_samples();
  }
  template <class Data, class Memory>
  static std::int64_t row_limit(const Data&, const RowList<Memory>& rows) {
    return std::int64_t(rows.index.extent(0));
  }

  // Targets and features are checked once per data set (identified by its
  // Views); returns what is wrong with the first bad row, or "".
  template <class Data>
  std::string check_rows_once(const Data& data) {
    const void* id = data.targets().data();
    if (id == checked_data_ && data.num_samples() == checked_rows_) return {};
    const std::int64_t n = data.num_samples();
    std::int64_t first = n;
    using Functor = detail::FirstInvalidRow<Loss, typename Data::features_view,
                                            typename Data::targets_view>;
    Kokkos::parallel_reduce(
        "gradsum::step::check_data",
        Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space_, 0, n),
        Functor{loss_, data.features(), data.targets(), model_.num_outputs()},
        Kokkos::Min<std::int64_t>(first));
    if (first < n)
      return detail::concat("gradsum::Step::evaluate: row ", first,
                            " of the data has a target the loss ", loss_.name(),
                            " rejects for ", model_.num_outputs(),
                            " output(s), or a non-finite feature",
                            describe_row(data, first));
    checked_data_ = id;
    checked_rows_ = n;
    return {};
  }

  // On the failure path only: the first selected row whose loss or loss
  // derivative is not finite at theta.
  template <class Theta, class Data, class Rows>
  std::string describe_nonfinite(const Theta& theta, const Data& data, const Rows& rows) const {
    std::int64_t first = INT64_MAX;
    using Functor = detail::FirstNonFiniteSample<Model, Loss, Scalar, typename Data::features_view,
                                                 typename Data::targets_view, Rows>;
    Kokkos::parallel_reduce(
        "gradsum::step::find_nonfinite",
        Kokkos::RangePolicy<ExecutionSpace, Kokkos::IndexType<std::int64_t>>(space_, 0, rows.size()),
        Functor{{model_, loss_, theta.data(), data.features(), data.targets(), rows}},
        Kokkos::Min<std::int64_t>(first));
    if (first == INT64_MAX)
      return "gradsum::Step::evaluate: the summed gradient is not finite (it overflowed; no "
             "single sample is)";
    return detail::concat("gradsum::Step::evaluate: the loss or its gradient is not finite for "
                          "sample ", first, " of the selected rows (its features and target "
                          "are finite: the parameters or the model's outputs overflow)");
  }

  template <class Theta, class Data, class Rows>
  std::string describe_nonfinite(const Theta& theta, const Data& data,
                                 const MicroBatches<Rows>& micro) const {
    std::string message;
    for (std::size_t k = 0; k < micro.parts.size(); ++k) {
      message = describe_nonfinite(theta, data, micro.parts[k]);
      if (message.find(" for sample ") != std::string::npos)
        return detail::concat(message, " (in micro-batch ", k, ")");
    }
    return message;
  }

  template <class Data>
  std::string describe_row(const Data& data, std::int64_t row) const {
    auto y = Kokkos::create_mirror_view_and_copy(
        Kokkos::HostSpace(), Kokkos::subview(data.targets(), Kokkos::make_pair(row, row + 1)));
    auto x = Kokkos::create_mirror_view_and_copy(
        Kokkos::HostSpace(), Kokkos::subview(data.features(), row, Kokkos::ALL()));
    for (std::size_t j = 0; j < x.extent(0); ++j)
      if (!std::isfinite(double(x(j))))
        return detail::concat(": feature ", j, " is ", double(x(j)));
    return detail::concat(": target is ", double(y(0)));
  }

  ExecutionSpace space_;
  Model model_;
  Loss loss_;
  Optimizer optimizer_;
  Objective objective_;
  Gradient gradient_;
  Reduction reduction_;
  Aggregation aggregation_;
  parameters_view sums_;
  parameters_view gradient_view_;
  parameters_view accumulated_;  // gradient accumulation: P sums and the loss
  parameters_view work_;
  Kokkos::View<Scalar[2], Kokkos::HostSpace> host_tail_;
  Kokkos::View<Scalar[2], Kokkos::HostSpace> host_norms_;
  Kokkos::View<Scalar[slots], Kokkos::HostSpace> host_read_;       // the buffer's tail
  Kokkos::View<Scalar[slots - 1], Kokkos::HostSpace> host_write_;  // the tail after the loss
  int worker_parts_ = 0;       // measure_workers(): parts per rank, 0 when not measuring
  double worker_totals_[4] = {};  // this rank's worker statistics of this evaluation
  Kokkos::View<Scalar, Kokkos::HostSpace> host_scalar_;
  std::int64_t skipped_ = 0;
  Kokkos::View<Scalar*, Kokkos::HostSpace> host_vector_;
  state_view state_;
  bins_view bin_work_, bin_message_, windows_, norm_bins_;
  typename bins_view::HostMirror host_norm_bins_;
  parameters_view hessian_sums_;
  typename parameters_view::HostMirror host_hessian_sums_;
  bins_view hessian_bins_;  // the Hessian's bins while bins_in_use(reduction_)
  std::vector<double> hessian_;
  const void* checked_data_ = nullptr;
  std::int64_t checked_rows_ = -1;
};

/// Builds a Step, deducing the policy types from the arguments:
/// `auto step = gradsum::make_step<double>(space, Linear(d), SquaredError{}, SGD{0.1});`
template <class Scalar, class ExecutionSpace, class Model, class Loss,
          class Optimizer = SGD, class Gradient = Analytic,
          class Reduction = Sum, class Aggregation = Local>
Step<ExecutionSpace, Scalar, Model, Loss, Optimizer, Gradient, Reduction,
     Aggregation>
make_step(const ExecutionSpace& space, const Model& model, const Loss& loss,
          const Optimizer& optimizer = {}, const Objective& objective = {},
          const Gradient& gradient = {}, const Reduction& reduction = {},
          const Aggregation& aggregation = {}) {
  return {space, model, loss, optimizer, objective, gradient, reduction,
          aggregation};
}

}  // namespace gradsum
