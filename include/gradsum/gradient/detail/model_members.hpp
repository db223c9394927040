// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Which class declares a model's members, so that a model's faster paths
/// are taken only where they compute what its own forward and backward
/// would (a class derived from a library model may redefine either).

#include <type_traits>

namespace gradsum {
namespace detail {

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
/// declares M's forward and backward. A model's fast paths (layer-wise,
/// sample_gradient, block_residuals) compute what forward and backward
/// would: a class derived from a library model that redefines either must
/// not take the base's fast path, which would silently bypass them.
template <class M, class Pointer>
struct declares_model_with
    : std::bool_constant<
          std::is_same<typename forward_owner<M>::type,
                       typename member_owner<Pointer>::type>::value &&
          std::is_same<typename backward_owner<M>::type,
                       typename member_owner<Pointer>::type>::value> {};

}  // namespace detail
}  // namespace gradsum
