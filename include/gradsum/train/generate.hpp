// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Text from a Network over windows of text (a GPT): generate() extends a
/// prompt one token at a time, each drawn from the softmax of the logits at
/// the last position of the window of the latest `context` tokens.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/gradient/detail/network.hpp>
#include <gradsum/model/initializers.hpp>
#include <gradsum/model/network.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace gradsum {

namespace detail {

/// The most likely of the V logits z (the first of equals) at temperature
/// 0, else one drawn from softmax(z / temperature) by `rng`, with p as
/// room for V weights.
template <class Logits>
int draw_token(const Logits& z, int V, double temperature, SplitMix64& rng,
               std::vector<double>& p) {
  int pick = 0;
  for (int v = 1; v < V; ++v)
    if (z(v) > z(pick)) pick = v;
  if (temperature == 0) return pick;
  double total = 0;
  for (int v = 0; v < V; ++v) {
    p[std::size_t(v)] = std::exp((double(z(v)) - double(z(pick))) / temperature);
    total += p[std::size_t(v)];
  }
  double u = uniform01(rng) * total;
  for (pick = 0; pick + 1 < V && u >= p[std::size_t(pick)]; ++pick) u -= p[std::size_t(pick)];
  return pick;
}

}  // namespace detail

/// The `prompt`'s token ids followed by `count` more, each drawn from
/// softmax(z / temperature), z the logits at the last position of the
/// latest min(context, length) tokens, with draws from SplitMix64 seeded
/// with `seed` (the same text for the same seed, on every compiler);
/// temperature 0 takes the most likely token (the first of equals). Its
/// buffers are allocated once per call. Throws gradsum::Error for a network
/// that is not over text, an empty prompt, an id outside the vocabulary, a
/// negative count, or a temperature below 0 or not finite. Blocking.
template <class Space, class Body, class Theta>
std::vector<std::int32_t> generate(const Space& space, const Network<Body>& net,
                                   const Theta& theta, const std::vector<std::int32_t>& prompt,
                                   int count, double temperature, std::uint64_t seed) {
  using Scalar = typename Theta::non_const_value_type;
  using Memory = typename Space::memory_space;
  const char* who = "gradsum::generate";
  if (!net.windows()) fail(who, ": the network is not over windows of text");
  if (prompt.empty()) fail(who, ": the prompt is empty; give it at least one token");
  if (count < 0) fail(who, ": ", count, " tokens asked for; expected 0 or more");
  if (!(temperature >= 0) || !std::isfinite(temperature))
    fail(who, ": temperature ", temperature, "; expected a finite number >= 0");
  if (std::int64_t(theta.extent(0)) != net.num_parameters())
    fail(who, ": theta has ", theta.extent(0), " values; the network has ", net.num_parameters(),
         " parameters");
  for (std::size_t i = 0; i < prompt.size(); ++i)
    if (prompt[i] < 0 || prompt[i] >= net.vocabulary())
      fail(who, ": token ", i, " of the prompt is ", prompt[i], ", outside the vocabulary of ",
           net.vocabulary());
  const int T = net.context(), V = net.num_outputs(), C = net.body_width();
  using Vector = Kokkos::View<Scalar*, Memory, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using Matrix = detail::Panel<Scalar, Memory>;
  using CMatrix = detail::Panel<const Scalar, Memory>;
  Kokkos::View<Scalar*, Memory> work(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::generate::work"),
      detail::network_layout(net, 1).total);
  Kokkos::View<Scalar*, Memory> logits("gradsum::generate::logits", std::size_t(V));
  Kokkos::View<Scalar*, Kokkos::HostSpace> ids("gradsum::generate::ids", std::size_t(T));
  const auto host_logits = Kokkos::create_mirror_view(logits);
  detail::SplitMix64 rng(seed ^ 0xa4093822299f31d0ULL);
  std::vector<std::int32_t> text = prompt;
  std::vector<double> p(static_cast<std::size_t>(V));
  for (int k = 0; k < count; ++k) {
    // The window of the latest L tokens, through the body; the logits of
    // its last position.
    const int L = int(text.size()) < T ? int(text.size()) : T;
    const auto l = detail::network_layout(net, 1, L);
    for (int i = 0; i < L; ++i)
      ids(i) = Scalar(text[text.size() - std::size_t(L) + std::size_t(i)]);
    Kokkos::deep_copy(space, Vector(work.data() + l.input, std::size_t(L)),
                      Kokkos::subview(ids, Kokkos::make_pair(0, L)));
    net.body().forward(space, theta.data(), Tokens{1, L}, CMatrix(work.data() + l.input, L, 1),
                       Matrix(work.data() + l.body_out, L, C), work.data() + l.body_work);
    Scalar* last = work.data() + l.body_out + std::size_t(L - 1) * std::size_t(C);
    if (net.tied())
      gemm(space, 'N', 'T', Scalar(1), CMatrix(last, 1, C), CMatrix(theta.data(), V, C),
           Scalar(0), Matrix(logits.data(), 1, V));
    else
      Kokkos::deep_copy(space, logits, Vector(last, std::size_t(V)));
    Kokkos::deep_copy(space, host_logits, logits);
    space.fence();
    text.push_back(detail::draw_token(host_logits, V, temperature, rng, p));
  }
  return text;
}

}  // namespace gradsum
