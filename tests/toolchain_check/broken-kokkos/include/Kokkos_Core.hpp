// SPDX-License-Identifier: Apache-2.0
// Stand-in for the test of gradsum's toolchain check: a View whose
// destruction crashes, as a miscompiled one does.
#pragma once
#include <cstdlib>
namespace Kokkos {
struct HostSpace {};
template <class T, class... Properties>
struct View {
  ~View() { std::abort(); }
};
}  // namespace Kokkos
