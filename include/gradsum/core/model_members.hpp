// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// What a model may offer beyond the contract of core/requirements.hpp:
/// one trait per optional member, detected here and nowhere else, in the
/// order of docs/own-model.md's two lists: members any model may offer,
/// then the library models' faster paths, which gradient/path.hpp chooses
/// among. A faster path computes what forward and backward would, so it is
/// taken only from a class that declares it together with its forward and
/// backward (declares_model_with): a class derived from a library model
/// that redefines either keeps the per-sample path.

#include <gradsum/core/limits.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

// Which class declares a member.

/// The class a const member function pointer's function is declared in.
template <class T>
struct member_owner {};
template <class R, class C, class... A>
struct member_owner<R (C::*)(A...) const> {
  using type = C;
};
template <class R, class C, class... A>
struct member_owner<R (C::*)(A...) const noexcept> {
  using type = C;
};

/// The class that declares M's forward (or backward): a member template
/// (the library's models) or a plain member; void where neither can be
/// named (overloads).
#define GRADSUM_DETAIL_MODEL_MEMBER_OWNER(member)                                        \
  template <class M, class = void>                                                      \
  struct member##_owner_plain {                                                         \
    using type = void;                                                                  \
  };                                                                                    \
  template <class M>                                                                    \
  struct member##_owner_plain<M, std::void_t<decltype(&M::member)>> {                   \
    using type = typename member_owner<decltype(&M::member)>::type;                     \
  };                                                                                    \
  template <class M, class = void>                                                      \
  struct member##_owner : member##_owner_plain<M> {};                                   \
  template <class M>                                                                    \
  struct member##_owner<M, std::void_t<decltype(&M::template member<double>)>> {        \
    using type = typename member_owner<decltype(&M::template member<double>)>::type;    \
  };
GRADSUM_DETAIL_MODEL_MEMBER_OWNER(forward)
GRADSUM_DETAIL_MODEL_MEMBER_OWNER(backward)
#undef GRADSUM_DETAIL_MODEL_MEMBER_OWNER

/// Whether the class that declares the member `Pointer` points to also
/// declares M's forward and backward.
template <class M, class Pointer>
struct declares_model_with
    : std::bool_constant<
          std::is_same<typename forward_owner<M>::type,
                       typename member_owner<Pointer>::type>::value &&
          std::is_same<typename backward_owner<M>::type,
                       typename member_owner<Pointer>::type>::value> {};

// Members any model may offer (docs/own-model.md, "Optional members").

/// `hessian(theta, x, d2, H)`: H += J^T d2 J for one sample (Newton, exact
/// line searches, exact curvature).
template <class M, class S, class = void>
struct has_model_hessian : std::false_type {};
template <class M, class S>
struct has_model_hessian<M, S, std::void_t<decltype(std::declval<const M&>().hessian(
                                   std::declval<const S*>(), std::declval<const S*>(),
                                   std::declval<const S*>(), std::declval<S*>()))>>
    : std::true_type {};

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

/// `std::string describe() const`: the shape in checkpoints (MLP).
template <class M, class = void>
struct has_describe : std::false_type {};
template <class M>
struct has_describe<M, std::void_t<decltype(std::declval<const M&>().describe())>>
    : std::true_type {};

/// `static M from_description(const std::string&)`: the model that
/// describe() described, rebuilt by load_model (MLP).
template <class M, class = void>
struct has_from_description : std::false_type {};
template <class M>
struct has_from_description<M, std::void_t<decltype(M::from_description(std::string()))>>
    : std::true_type {};

/// `std::vector<ParameterTensor> parameter_tensors() const`: the named
/// tensors save_model writes the parameters as (model/tensors.hpp).
template <class M, class = void>
struct has_parameter_tensors : std::false_type {};
template <class M>
struct has_parameter_tensors<
    M, std::void_t<decltype(std::declval<const M&>().parameter_tensors())>> : std::true_type {};

/// `std::int64_t architecture() const`: the shape beyond the sizes, for the
/// workers' signature (MLP: widths and activations).
template <class M, class = void>
struct has_architecture : std::false_type {};
template <class M>
struct has_architecture<M, std::void_t<decltype(std::int64_t(std::declval<const M&>().architecture()))>>
    : std::true_type {};

/// `sample_gradient(loss, theta, x, y, g)`: one sample's loss and gradient
/// in one call, the forward pass kept for the backward one (MLP).
template <class M, class L, class S, class = void>
struct has_sample_gradient : std::false_type {};
template <class M, class L, class S>
struct has_sample_gradient<M, L, S, std::void_t<decltype(S(std::declval<const M&>().sample_gradient(
                                        std::declval<const L&>(), std::declval<const S*>(),
                                        std::declval<const S*>(), std::declval<S>(),
                                        std::declval<S*>())))>>
    : declares_model_with<M, decltype(&M::template sample_gradient<L, S>)> {};

// The library models' faster paths (docs/own-model.md, "The library's own models").

/// Whether model.block_gradient(loss, theta, xs, ys, m, g) can be called.
template <class M, class L, class S, class = void>
struct block_gradient_callable : std::false_type {};
template <class M, class L, class S>
struct block_gradient_callable<
    M, L, S,
    std::void_t<decltype(S(std::declval<const M&>().block_gradient(
        std::declval<const L&>(), std::declval<const S*>(), std::declval<const S* const*>(),
        std::declval<const S*>(), 1, std::declval<S*>())))>> : std::true_type {};

/// Whether M declares block_gradient<L, S> itself rather than inheriting it.
template <class M, class L, class S, class = void>
struct declares_block_gradient : std::false_type {};
template <class M, class L, class S>
struct declares_block_gradient<M, L, S,
                               std::void_t<decltype(&M::template block_gradient<L, S>)>>
    : std::is_same<typename member_owner<decltype(&M::template block_gradient<L, S>)>::type,
                   M> {};

/// `block_gradient(loss, theta, xs, ys, m, g)`: the loss and gradient of a
/// block of up to Model::block_size samples (Linear, Softmax), declared by
/// M itself: a class derived from Linear, perhaps to change backward,
/// would have the base's batched path bypass it.
template <class M, class L, class S>
struct has_block_gradient
    : std::bool_constant<block_gradient_callable<M, L, S>::value &&
                         declares_block_gradient<M, L, S>::value> {};

/// Whether block_gradient also takes an `Ahead` to call once per sample,
/// block_gradient(loss, theta, xs, ys, m, g, ahead) (Linear; see
/// detail::NoPrefetch).
template <class M, class L, class S, class Ahead, class = void>
struct block_gradient_takes_ahead : std::false_type {};
template <class M, class L, class S, class Ahead>
struct block_gradient_takes_ahead<
    M, L, S, Ahead,
    std::void_t<decltype(S(std::declval<const M&>().block_gradient(
        std::declval<const L&>(), std::declval<const S*>(), std::declval<const S* const*>(),
        std::declval<const S*>(), 1, std::declval<S*>(), std::declval<const Ahead&>())))>>
    : std::true_type {};

/// `block_residuals(loss, theta, xs, ys, m, dz, value)`: each sample's
/// dl/dz and loss from the block arithmetic, for reductions that take each
/// sample's contribution dz (x, 1) (Linear with Reproducible).
template <class M, class L, class S, class = void>
struct has_block_residuals : std::false_type {};
template <class M, class L, class S>
struct has_block_residuals<
    M, L, S,
    std::void_t<decltype(std::declval<const M&>().block_residuals(
        std::declval<const L&>(), std::declval<const S*>(), std::declval<const S* const*>(),
        std::declval<const S*>(), 1, std::declval<S*>(), std::declval<S*>()))>>
    : declares_model_with<M, decltype(&M::template block_residuals<L, S>)> {};

/// `bool batched`: whether the block paths above may be taken.
template <class M, class = void>
struct has_batched_switch : std::false_type {};
template <class M>
struct has_batched_switch<M, std::void_t<decltype(bool(std::declval<const M&>().batched))>>
    : std::true_type {};

/// `static constexpr int block_classes`: on host spaces, a model of at
/// most this many outputs takes its block path before the layer-wise one
/// (Softmax: products that thin are slower).
template <class M, class = void>
struct has_block_classes : std::false_type {};
template <class M>
struct has_block_classes<M, std::void_t<decltype(int(M::block_classes))>> : std::true_type {};

/// `dense_layers()` and `bool layerwise`: the network as dense layers, for
/// the layer-wise path (MLP, Softmax), declared with forward and backward.
template <class M, class = void>
struct has_dense_layers : std::false_type {};
template <class M>
struct has_dense_layers<M, std::void_t<decltype(std::declval<const M&>().dense_layers()),
                                       decltype(bool(std::declval<const M&>().layerwise))>>
    : declares_model_with<M, decltype(&M::dense_layers)> {};

/// Whether M is a composition of layers (model/network.hpp: `static
/// constexpr bool is_network`): the network path, and no per-sample one.
template <class M, class = void>
struct is_network : std::false_type {};
template <class M>
struct is_network<M, std::enable_if_t<M::is_network>> : std::true_type {};

/// Loss terms per data row (a Network over windows of text: its context),
/// else 1: the step divides by rows x this.
template <class M>
std::int64_t positions_per_row(const M& model) {
  if constexpr (is_network<M>::value) return model.positions_per_row();
  else {
    (void)model;
    return 1;
  }
}

/// `std::string per_sample_limits() const`: why the per-sample path (per-
/// thread stack arrays) cannot take this instance, or "" when it can (MLP).
template <class M, class = void>
struct has_per_sample_limits : std::false_type {};
template <class M>
struct has_per_sample_limits<
    M, std::void_t<decltype(std::string(std::declval<const M&>().per_sample_limits()))>>
    : std::true_type {};
template <class M>
std::string per_sample_limits(const M& model) {
  if constexpr (has_per_sample_limits<M>::value) return model.per_sample_limits();
  else return {};
}

}  // namespace detail
}  // namespace gradsum
