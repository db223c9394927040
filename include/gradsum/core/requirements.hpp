// SPDX-License-Identifier: Apache-2.0
#pragma once

/// Requirement traits: one trait per member of each policy contract, so
/// that a policy missing a member is reported by a static_assert naming that
/// member, and `is_model`, `is_loss`, … combining them. The contracts are
/// written out at each trait below; docs/own-model.md shows them at work
/// on a model of one's own, and docs/design.md says where each is used.
/// What a model may offer beyond its contract: core/model_members.hpp.

#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/signature.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

template <class T>
using host_view = Kokkos::View<T*, Kokkos::HostSpace>;

// Model members.
template <class M, class = void>
struct has_num_features : std::false_type {};
template <class M>
struct has_num_features<M, std::void_t<decltype(int(std::declval<const M&>().num_features()))>>
    : std::true_type {};
template <class M, class = void>
struct has_num_outputs : std::false_type {};
template <class M>
struct has_num_outputs<M, std::void_t<decltype(int(std::declval<const M&>().num_outputs()))>>
    : std::true_type {};
template <class M, class = void>
struct has_num_parameters : std::false_type {};
template <class M>
struct has_num_parameters<M, std::void_t<decltype(int(std::declval<const M&>().num_parameters()))>>
    : std::true_type {};
template <class M, class = void>
struct has_is_regularized : std::false_type {};
template <class M>
struct has_is_regularized<M, std::void_t<decltype(bool(std::declval<const M&>().is_regularized(0)))>>
    : std::true_type {};
template <class M, class S, class = void>
struct has_forward : std::false_type {};
template <class M, class S>
struct has_forward<M, S, std::void_t<decltype(std::declval<const M&>().forward(
                             std::declval<const S*>(), std::declval<const S*>(),
                             std::declval<S*>()))>> : std::true_type {};
template <class M, class S, class = void>
struct has_backward : std::false_type {};
template <class M, class S>
struct has_backward<M, S, std::void_t<decltype(std::declval<const M&>().backward(
                              std::declval<const S*>(), std::declval<const S*>(),
                              std::declval<const S*>(), std::declval<S*>()))>>
    : std::true_type {};
template <class P, class = void>
struct has_name : std::false_type {};
template <class P>
struct has_name<P, std::void_t<decltype(std::declval<const P&>().name())>>
    : std::true_type {};

// Loss members.
template <class L, class S, class = void>
struct has_value : std::false_type {};
template <class L, class S>
struct has_value<L, S, std::void_t<decltype(S(std::declval<const L&>().value(
                           std::declval<const S*>(), 1, std::declval<S>())))>>
    : std::true_type {};
template <class L, class S, class = void>
struct has_derivative : std::false_type {};
template <class L, class S>
struct has_derivative<L, S, std::void_t<decltype(std::declval<const L&>().derivative(
                                std::declval<const S*>(), 1, std::declval<S>(),
                                std::declval<S*>()))>> : std::true_type {};
template <class L, class S, class = void>
struct has_is_valid_target : std::false_type {};
template <class L, class S>
struct has_is_valid_target<L, S, std::void_t<decltype(bool(
                                     std::declval<const L&>().is_valid_target(
                                         std::declval<S>(), 1)))>>
    : std::true_type {};
template <class L, class = void>
struct has_supports_outputs : std::false_type {};
template <class L>
struct has_supports_outputs<L, std::void_t<decltype(bool(std::declval<const L&>().supports_outputs(1)))>>
    : std::true_type {};
template <class L, class S, class = void>
struct has_predict_class : std::false_type {};
template <class L, class S>
struct has_predict_class<L, S, std::void_t<decltype(int(std::declval<const L&>().predict_class(
                                   std::declval<const S*>(), 1)))>>
    : std::true_type {};

// Members shared by gradient, optimizer policies.
template <class P, class = void>
struct has_validate : std::false_type {};
template <class P>
struct has_validate<P, std::void_t<decltype(std::declval<const P&>().validate())>>
    : std::true_type {};

// Gradient policy.
template <class G, class = void>
struct has_workspace_size : std::false_type {};
template <class G>
struct has_workspace_size<G, std::void_t<decltype(std::size_t(std::declval<const G&>().workspace_size(1)))>>
    : std::true_type {};

/// Whether a gradient policy calls the model's backward(): its own
/// `static constexpr bool needs_backward`, else that of the policy it wraps
/// (`inner_gradient`, VirtualWorkers), else true: a policy that does not
/// say is taken to need the whole Model contract.
template <class G, class = void>
struct declares_needs_backward : std::false_type {};
template <class G>
struct declares_needs_backward<G, std::void_t<decltype(bool(G::needs_backward))>>
    : std::true_type {};
template <class G, class = void>
struct wraps_gradient : std::false_type {};
template <class G>
struct wraps_gradient<G, std::void_t<typename G::inner_gradient>> : std::true_type {};
template <class G>
constexpr bool gradient_needs_backward() {
  if constexpr (declares_needs_backward<G>::value) return G::needs_backward;
  else if constexpr (wraps_gradient<G>::value)
    return gradient_needs_backward<typename G::inner_gradient>();
  else return true;
}

// Optimizer policy.
template <class O, class = void>
struct has_state_size : std::false_type {};
template <class O>
struct has_state_size<O, std::void_t<decltype(int(std::declval<const O&>().state_size(1)))>>
    : std::true_type {};
template <class L, class S, class = void>
struct has_second_derivative : std::false_type {};
template <class L, class S>
struct has_second_derivative<L, S, std::void_t<decltype(std::declval<const L&>().second_derivative(
                                       std::declval<const S*>(), 1, std::declval<S>(),
                                       std::declval<S*>()))>> : std::true_type {};
template <class L, class = void>
struct is_quadratic_loss : std::false_type {};
template <class L>
struct is_quadratic_loss<L, std::enable_if_t<L::is_quadratic>> : std::true_type {};

template <class O, class S, class = void>
struct has_allocate : std::false_type {};
template <class O, class S>
struct has_allocate<O, S, std::void_t<decltype(std::declval<O&>().template allocate<S, Kokkos::HostSpace>(1))>>
    : std::true_type {};
// Reduction policy.
template <class S>
struct NullBody {
  KOKKOS_FUNCTION void operator()(std::int64_t, S*) const {}
};
template <class R, class S, class = void>
struct has_reduce : std::false_type {};
template <class R, class S>
struct has_reduce<R, S, std::void_t<decltype(std::declval<const R&>().reduce(
                            std::declval<const Kokkos::DefaultHostExecutionSpace&>(),
                            std::declval<const std::string&>(), std::int64_t(0), 1,
                            std::declval<const NullBody<S>&>(),
                            std::declval<const host_view<S>&>()))>>
    : std::true_type {};

// Aggregation policy.
template <class A, class S, class = void>
struct has_aggregate : std::false_type {};
template <class A, class S>
struct has_aggregate<A, S, std::void_t<decltype(std::declval<A&>().aggregate(
                               std::declval<const Kokkos::DefaultHostExecutionSpace&>(),
                               std::declval<const host_view<S>&>()))>>
    : std::true_type {};
template <class A, class = void>
struct has_aggregate_max : std::false_type {};
template <class A>
struct has_aggregate_max<A, std::void_t<decltype(std::declval<A&>().aggregate_max(
                                std::declval<const Kokkos::DefaultHostExecutionSpace&>(),
                                std::declval<const host_view<std::int64_t>&>()))>>
    : std::true_type {};
template <class A, class = void>
struct has_agree : std::false_type {};
template <class A>
struct has_agree<A, std::void_t<decltype(std::declval<A&>().agree(
                        std::declval<const Signature&>(), std::declval<const std::string&>()))>>
    : std::true_type {};
template <class A, class = void>
struct has_first_error : std::false_type {};
template <class A>
struct has_first_error<A, std::void_t<decltype(std::string(std::declval<A&>().first_error(
                              std::declval<const std::string&>())))>>
    : std::true_type {};

// Reductions.
/// Whether a reduction needs every sample's contribution on its own
/// (Reproducible: a block's floating-point partial sum would depend on how
/// rows fall into blocks, and so on the partition).
template <class R, class = void>
struct is_binned_reduction : std::false_type {};
template <class R>
struct is_binned_reduction<R, std::enable_if_t<R::binned>> : std::true_type {};

/// Whether a reduction that needs each sample's contribution takes them a
/// block at a time in rank-one form (`rank_one_blocks`; Reproducible).
template <class R, class = void>
struct takes_rank_one_blocks : std::false_type {};
template <class R>
struct takes_rank_one_blocks<R, std::enable_if_t<R::rank_one_blocks>> : std::true_type {};

/// Whether a reduction needs each sample's contribution now: a binned
/// reduction, unless it is one chosen at run time (`bool bins() const`)
/// that is not binning. (Exactly bool: the step's BinsTarget has a view
/// named bins, whose operator() would pass a looser test.)
template <class R, class = void>
struct has_bins_switch : std::false_type {};
template <class R>
struct has_bins_switch<R, std::enable_if_t<std::is_same<
                              decltype(std::declval<const R&>().bins()), bool>::value>>
    : std::true_type {};
template <class R>
bool bins_in_use(const R& reduction) {
  if constexpr (has_bins_switch<R>::value) return reduction.bins();
  else return true;
}

/// Whether a reduction adds plainly, as the layer-wise path does: Sum
/// (`static constexpr bool plain`), and a reduction chosen at run time
/// while it is the sum (`bool plain() const`).
template <class R, class = void>
struct has_plain_switch : std::false_type {};
template <class R>
struct has_plain_switch<R, std::void_t<decltype(bool(std::declval<const R&>().plain()))>>
    : std::true_type {};
template <class R, class = void>
struct is_plain_reduction : std::false_type {};
template <class R>
struct is_plain_reduction<R, std::enable_if_t<R::plain>> : std::true_type {};
template <class R>
bool sums_plainly(const R& reduction) {
  if constexpr (has_plain_switch<R>::value) return reduction.plain();
  else return is_plain_reduction<R>::value;
}

// Policies that combine workers, optimizers that need the Hessian.
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
/// (the gradient) its own way and sums the rest (loss, count, flags); one
/// offering `aggregate(space, buffer, count, count_at)` is also told that
/// buffer(count_at) holds each worker's sample count (a clipping bound per
/// sample needs it).
template <class A, class Space, class View, class = void>
struct has_aggregate_leading : std::false_type {};
template <class A, class Space, class View>
struct has_aggregate_leading<A, Space, View,
                             std::void_t<decltype(std::declval<A&>().aggregate(
                                 std::declval<const Space&>(), std::declval<const View&>(),
                                 std::int64_t(0)))>> : std::true_type {};
template <class A, class Space, class View, class = void>
struct has_aggregate_counted : std::false_type {};
template <class A, class Space, class View>
struct has_aggregate_counted<A, Space, View,
                             std::void_t<decltype(std::declval<A&>().aggregate(
                                 std::declval<const Space&>(), std::declval<const View&>(),
                                 std::int64_t(0), std::int64_t(0)))>> : std::true_type {};
template <class A, class Space, class View>
void aggregate_leading(A& aggregation, const Space& space, const View& buffer, std::int64_t count,
                       std::int64_t count_at) {
  if constexpr (has_aggregate_counted<A, Space, View>::value)
    aggregation.aggregate(space, buffer, count, count_at);
  else if constexpr (has_aggregate_leading<A, Space, View>::value)
    aggregation.aggregate(space, buffer, count);
  else
    aggregation.aggregate(space, buffer);
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

/// Whether M meets the Model contract without the backward pass, for data
/// of type S: num_features(), num_outputs(), num_parameters(),
/// is_regularized(j), name() and forward(theta, x, z) on S pointers. That
/// is all a step with the CentralDifference gradient needs. Kernels call
/// num_outputs(), num_parameters(), is_regularized(j) and forward, so those
/// must be KOKKOS_FUNCTION (a CUDA build rejects host-only ones).
template <class M, class S = double>
struct is_forward_model
    : std::conjunction<detail::has_num_features<M>, detail::has_num_outputs<M>,
                       detail::has_num_parameters<M>,
                       detail::has_is_regularized<M>, detail::has_name<M>,
                       detail::has_forward<M, S>> {};
template <class M, class S = double>
inline constexpr bool is_forward_model_v = is_forward_model<M, S>::value;

/// Whether M meets the whole Model contract: is_forward_model and
/// backward(theta, x, dz, g) (KOKKOS_FUNCTION), which adds dz . dz/dtheta
/// into g. The Analytic gradient (the default) needs it.
template <class M, class S = double>
struct is_model : std::conjunction<is_forward_model<M, S>, detail::has_backward<M, S>> {};
template <class M, class S = double>
inline constexpr bool is_model_v = is_model<M, S>::value;

/// Whether L meets the Loss contract: name(), supports_outputs(k),
/// is_valid_target(y, k), value(z, k, y), derivative(z, k, y, dz).
template <class L, class S = double>
struct is_loss
    : std::conjunction<detail::has_name<L>, detail::has_supports_outputs<L>,
                       detail::has_is_valid_target<L, S>,
                       detail::has_value<L, S>, detail::has_derivative<L, S>> {};
template <class L, class S = double>
inline constexpr bool is_loss_v = is_loss<L, S>::value;

/// Whether a loss also names a predicted class (for accuracy).
template <class L, class S = double>
inline constexpr bool is_classifier_loss_v =
    detail::has_predict_class<L, S>::value;

/// Whether G meets the Gradient contract: name(), validate(),
/// workspace_size(P) and sum(...) (the last is checked where it is called).
template <class G>
struct is_gradient
    : std::conjunction<detail::has_name<G>, detail::has_validate<G>,
                       detail::has_workspace_size<G>> {};
template <class G>
inline constexpr bool is_gradient_v = is_gradient<G>::value;

/// Whether R meets the Reduction contract: name() and
/// reduce(space, label, n, width, body, out).
template <class R, class S = double>
struct is_reduction
    : std::conjunction<detail::has_name<R>, detail::has_reduce<R, S>> {};
template <class R, class S = double>
inline constexpr bool is_reduction_v = is_reduction<R, S>::value;

/// Whether A meets the Aggregation contract: name(), allocate<S, M>(n),
/// aggregate(space, buffer), agree(signature, local_error) and
/// first_error(local_error).
template <class A, class S = double>
struct is_aggregation
    : std::conjunction<detail::has_name<A>, detail::has_allocate<A, S>,
                       detail::has_aggregate<A, S>, detail::has_agree<A>,
                       detail::has_first_error<A>> {};
template <class A, class S = double>
inline constexpr bool is_aggregation_v = is_aggregation<A, S>::value;

/// Whether O meets the Optimizer contract as far as it can be checked
/// without a step: name(), validate() and state_size(P); update(context)
/// is checked where the step calls it.
template <class O>
struct is_optimizer
    : std::conjunction<detail::has_name<O>, detail::has_validate<O>,
                       detail::has_state_size<O>> {};
template <class O>
inline constexpr bool is_optimizer_v = is_optimizer<O>::value;

namespace detail {

/// The Model's part of check_step_policies, for the Gradient policy.
template <class Scalar, class Model, class Gradient>
constexpr bool check_model_policy() {
  static_assert(has_num_features<Model>::value,
                "gradsum::Step: the Model must provide `int num_features() const`");
  static_assert(has_num_outputs<Model>::value,
                "gradsum::Step: the Model must provide `int num_outputs() const`");
  static_assert(has_num_parameters<Model>::value,
                "gradsum::Step: the Model must provide `int num_parameters() const`");
  static_assert(has_is_regularized<Model>::value,
                "gradsum::Step: the Model must provide `bool is_regularized(int j) const`");
  static_assert(has_name<Model>::value, "gradsum::Step: the Model must provide `name()`");
  // A Network (model/network.hpp) has no per-sample forward: the Analytic
  // gradient's network path runs its layers.
  static_assert(is_network<Model>::value || has_forward<Model, Scalar>::value,
                "gradsum::Step: the Model must provide `forward(const Scalar* theta, const "
                "Scalar* x, Scalar* z) const`");
  static_assert(!is_network<Model>::value || gradient_needs_backward<Gradient>(),
                "gradsum::Step: a Network (a composition of layers) trains with the Analytic "
                "gradient (or VirtualWorkers of it): it has no per-sample forward for "
                "CentralDifference to perturb");
  // Only a gradient policy that calls backward needs it (Analytic does,
  // CentralDifference does not).
  static_assert(is_network<Model>::value || !gradient_needs_backward<Gradient>() ||
                    has_backward<Model, Scalar>::value,
                "gradsum::Step: the Model must provide `backward(const Scalar* theta, const "
                "Scalar* x, const Scalar* dz, Scalar* g) const` for this Gradient policy "
                "(Analytic); a model with forward only trains with CentralDifference");
  return true;
}

/// The checks of gradsum::Step<ExecutionSpace, Scalar, Model, …>: one
/// static_assert per member a policy lacks, whose message names the role
/// and the member. Returns true (for a static_assert at the call).
template <class ExecutionSpace, class Scalar, class Model, class Loss, class Optimizer,
          class Gradient, class Reduction, class Aggregation>
constexpr bool check_step_policies() {
  static_assert(Kokkos::is_execution_space<ExecutionSpace>::value,
                "gradsum::Step: ExecutionSpace must be a Kokkos execution space");
  static_assert(std::is_floating_point<Scalar>::value,
                "gradsum::Step: Scalar must be float or double");
  static_assert(check_model_policy<Scalar, Model, Gradient>());
  static_assert(has_name<Loss>::value, "gradsum::Step: the Loss must provide `name()`");
  static_assert(has_supports_outputs<Loss>::value,
                "gradsum::Step: the Loss must provide `bool supports_outputs(int k) const`");
  static_assert(has_is_valid_target<Loss, Scalar>::value,
                "gradsum::Step: the Loss must provide `bool is_valid_target(Scalar y, int k) "
                "const`");
  static_assert(has_value<Loss, Scalar>::value,
                "gradsum::Step: the Loss must provide `Scalar value(const Scalar* z, int k, "
                "Scalar y) const`");
  static_assert(has_derivative<Loss, Scalar>::value,
                "gradsum::Step: the Loss must provide `void derivative(const Scalar* z, int k, "
                "Scalar y, Scalar* dz) const`");
  static_assert(has_name<Optimizer>::value,
                "gradsum::Step: the Optimizer must provide `name()`");
  static_assert(has_validate<Optimizer>::value,
                "gradsum::Step: the Optimizer must provide `void validate() const`");
  static_assert(has_state_size<Optimizer>::value,
                "gradsum::Step: the Optimizer must provide `int state_size(int P) const` (the "
                "number of P-vectors of state it keeps)");
  // Newton (needs_hessian) solves with second derivatives; a policy that
  // needs them only for some knobs (uses_hessian()) is refused at run time.
  static_assert(!needs_hessian<Optimizer>::value || has_model_hessian<Model, Scalar>::value,
                "gradsum::Step: the Optimizer needs the Hessian, so the Model must provide "
                "`hessian(const Scalar* theta, const Scalar* x, const Scalar* d2, Scalar* H) "
                "const` (adds J^T d2 J into the P x P matrix H); use a first-order optimizer "
                "or LBFGS otherwise");
  static_assert(!needs_hessian<Optimizer>::value || has_second_derivative<Loss, Scalar>::value,
                "gradsum::Step: the Optimizer needs the Hessian, so the Loss must provide "
                "`second_derivative(const Scalar* z, int k, Scalar y, Scalar* d2) const` (the "
                "k x k matrix d^2 l / dz^2); use a first-order optimizer or LBFGS otherwise");
  static_assert(has_name<Gradient>::value,
                "gradsum::Step: the Gradient policy must provide `name()`");
  static_assert(has_validate<Gradient>::value,
                "gradsum::Step: the Gradient policy must provide `void validate() const`");
  static_assert(has_workspace_size<Gradient>::value,
                "gradsum::Step: the Gradient policy must provide `std::size_t "
                "workspace_size(int P) const`");
  static_assert(has_name<Reduction>::value,
                "gradsum::Step: the Reduction must provide `name()`");
  static_assert(has_reduce<Reduction, Scalar>::value,
                "gradsum::Step: the Reduction must provide `reduce(space, label, n, width, body, "
                "out)`");
  static_assert(has_name<Aggregation>::value,
                "gradsum::Step: the Aggregation must provide `name()`");
  static_assert(has_aggregate<Aggregation, Scalar>::value,
                "gradsum::Step: the Aggregation must provide `aggregate(space, buffer)`");
  static_assert(has_agree<Aggregation>::value,
                "gradsum::Step: the Aggregation must provide `void agree(const Signature&, "
                "const std::string& local_error)`");
  static_assert(has_first_error<Aggregation>::value,
                "gradsum::Step: the Aggregation must provide `std::string first_error(const "
                "std::string& local_error)`");
  static_assert(has_allocate<Aggregation, Scalar>::value,
                "gradsum::Step: the Aggregation must provide `template <class Scalar, class "
                "MemorySpace> void allocate(std::size_t n)`");
  return true;
}

}  // namespace detail
}  // namespace gradsum
