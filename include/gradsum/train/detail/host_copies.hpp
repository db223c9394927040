// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Host round trips of a P-vector through a host buffer allocated once
/// (Step::copy_to_host, Step::copy_from_host).

#include <gradsum/core/kokkos_compat.hpp>

#include <cstddef>
#include <vector>

namespace gradsum {
namespace detail {

/// `out` = the values of `v`, through `host` (its length). Blocking.
template <class Space, class Host, class View>
void copy_to_host(const Space& space, const Host& host, const View& v, std::vector<double>& out) {
  Kokkos::deep_copy(space, host, v);
  space.fence();
  out.resize(host.extent(0));
  for (std::size_t j = 0; j < out.size(); ++j) out[j] = double(host(j));
}

/// `v` = the values of `in`, through `host` (its length). Blocking.
template <class Space, class Host, class View>
void copy_from_host(const Space& space, const Host& host, const std::vector<double>& in,
                    const View& v) {
  using Scalar = typename Host::non_const_value_type;
  for (std::size_t j = 0; j < host.extent(0); ++j) host(j) = Scalar(in[j]);
  Kokkos::deep_copy(space, v, host);
  space.fence();
}

}  // namespace detail
}  // namespace gradsum
