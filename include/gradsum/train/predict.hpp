// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Inference: a model's outputs, predicted classes and class probabilities
/// for every row of a features View.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/train/detail/model_outputs.hpp>

#include <cstdint>
#include <type_traits>
#include <utility>

namespace gradsum {
namespace detail {

/// Whether a loss turns outputs into class probabilities
/// (`probabilities(z, k, p)`: SoftmaxCrossEntropy, BinaryCrossEntropy).
template <class L, class S, class = void>
struct has_probabilities : std::false_type {};
template <class L, class S>
struct has_probabilities<L, S,
                         std::void_t<decltype(std::declval<const L&>().probabilities(
                             std::declval<const S*>(), 0, std::declval<S*>()))>>
    : std::true_type {};

template <class Out>
void check_out(const char* who, const char* what, const Out& out, std::int64_t n, int k) {
  const bool matrix = int(Out::rank) == 2;
  if (std::int64_t(out.extent(0)) != n || (matrix && std::int64_t(out.extent(1)) != k))
    fail(who, ": ", what, " has ", out.extent(0), " rows",
         matrix ? concat(" and ", out.extent(1), " columns") : std::string(), "; expected ", n,
         matrix ? concat(" and ", k) : std::string(), " (a row per row of the features",
         matrix ? ", a column per model output)" : ")");
}

template <class Space, class Out>
constexpr bool check_out_types(int rank) {
  static_assert(Kokkos::is_view<Out>::value,
                "gradsum::predict: the output must be a Kokkos View");
  static_assert(Kokkos::SpaceAccessibility<Space, typename Out::memory_space>::accessible,
                "gradsum::predict: the output's memory space is not accessible from the "
                "execution space");
  return int(Out::rank) == rank;
}

}  // namespace detail

/// The model's k outputs (scores, logits) at `theta` for every row of the
/// n x d `features` (a Dataset's features(), or any View of the
/// parameters' scalar type whose rows are contiguous: LayoutRight, or
/// LayoutStride with column stride 1), into the n x k View `out`. A
/// network beyond the per-sample limits is applied layer by layer. Throws
/// gradsum::Error naming the argument whose shape does not fit. Blocking;
/// local to this process.
template <class ExecutionSpace, class Model, class Theta, class Features, class Out>
void predict(const ExecutionSpace& space, const Model& model, const Theta& theta,
             const Features& features, const Out& out) {
  using Scalar = typename Theta::non_const_value_type;
  static_assert(detail::check_features_types<ExecutionSpace, Theta, Features>(), "");
  static_assert(detail::check_out_types<ExecutionSpace, Out>(2),
                "gradsum::predict: out must be a rank-2 View (n x k)");
  detail::check_features("gradsum::predict", model, theta, features);
  const int k = model.num_outputs();
  detail::check_out("gradsum::predict", "out", out, std::int64_t(features.extent(0)), k);
  detail::reduce_outputs<int>(
      space, model, theta, features,
      KOKKOS_LAMBDA(std::int64_t r, const Scalar* z, int&) {
        for (int c = 0; c < k; ++c) out(r, c) = z[c];
      },
      "gradsum::predict", "gradsum::predict::outputs");
}

/// The class the classifier `loss` predicts (its predict_class of the
/// model's outputs) for every row of `features`, into the n View
/// `classes` (of any integer or floating type). Otherwise as predict().
/// Blocking; local to this process.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Features,
          class Classes>
void predict_classes(const ExecutionSpace& space, const Model& model, const Loss& loss,
                     const Theta& theta, const Features& features, const Classes& classes) {
  using Scalar = typename Theta::non_const_value_type;
  static_assert(is_classifier_loss_v<Loss, Scalar>,
                "gradsum::predict_classes: the Loss must provide `int predict_class(const "
                "Scalar* z, int k) const` (a classifier)");
  static_assert(detail::check_features_types<ExecutionSpace, Theta, Features>(), "");
  static_assert(detail::check_out_types<ExecutionSpace, Classes>(1),
                "gradsum::predict_classes: classes must be a rank-1 View (n)");
  detail::check_features("gradsum::predict_classes", model, theta, features);
  const int k = model.num_outputs();
  detail::check_out("gradsum::predict_classes", "classes", classes,
                    std::int64_t(features.extent(0)), k);
  using Class = typename Classes::non_const_value_type;
  detail::reduce_outputs<int>(
      space, model, theta, features,
      KOKKOS_LAMBDA(std::int64_t r, const Scalar* z, int&) {
        classes(r) = Class(loss.predict_class(z, k));
      },
      "gradsum::predict_classes", "gradsum::predict::classes");
}

/// The class probabilities for every row of `features`, into `out`: n x k
/// for SoftmaxCrossEntropy (softmax of the k logits), n x 1 for
/// BinaryCrossEntropy (sigmoid of the logit: the probability of class 1).
/// `loss` must provide `probabilities(z, k, p)`. Otherwise as predict().
/// Blocking; local to this process.
template <class ExecutionSpace, class Model, class Loss, class Theta, class Features, class Out>
void predict_probabilities(const ExecutionSpace& space, const Model& model, const Loss& loss,
                           const Theta& theta, const Features& features, const Out& out) {
  using Scalar = typename Theta::non_const_value_type;
  static_assert(detail::has_probabilities<Loss, Scalar>::value,
                "gradsum::predict_probabilities: the Loss must provide `void "
                "probabilities(const Scalar* z, int k, Scalar* p) const`");
  static_assert(detail::check_features_types<ExecutionSpace, Theta, Features>(), "");
  static_assert(detail::check_out_types<ExecutionSpace, Out>(2),
                "gradsum::predict_probabilities: out must be a rank-2 View (n x k)");
  detail::check_features("gradsum::predict_probabilities", model, theta, features);
  const int k = model.num_outputs();
  detail::check_out("gradsum::predict_probabilities", "out", out,
                    std::int64_t(features.extent(0)), k);
  detail::reduce_outputs<int>(
      space, model, theta, features,
      KOKKOS_LAMBDA(std::int64_t r, const Scalar* z, int&) {
        Scalar p[detail::output_capacity<Model>::value] = {};
        loss.probabilities(z, k, p);
        for (int c = 0; c < k; ++c) out(r, c) = p[c];
      },
      "gradsum::predict_probabilities", "gradsum::predict::probabilities");
}

/// predict() on the default execution space.
template <class Model, class Theta, class Features, class Out>
void predict(const Model& model, const Theta& theta, const Features& features, const Out& out) {
  predict(Kokkos::DefaultExecutionSpace(), model, theta, features, out);
}
/// predict_classes() on the default execution space.
template <class Model, class Loss, class Theta, class Features, class Classes>
void predict_classes(const Model& model, const Loss& loss, const Theta& theta,
                     const Features& features, const Classes& classes) {
  predict_classes(Kokkos::DefaultExecutionSpace(), model, loss, theta, features, classes);
}
/// predict_probabilities() on the default execution space.
template <class Model, class Loss, class Theta, class Features, class Out>
void predict_probabilities(const Model& model, const Loss& loss, const Theta& theta,
                           const Features& features, const Out& out) {
  predict_probabilities(Kokkos::DefaultExecutionSpace(), model, loss, theta, features, out);
}

}  // namespace gradsum
