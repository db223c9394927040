// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// check_model(): one call that checks a model of your own before you train
/// it: its gradient against central differences, coordinate by coordinate,
/// at several random points; that backward adds into g rather than
/// assigning; and that forward, the loss and backward stay finite.

#include <gradsum/aggregation/local.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/limits.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/data/dataset.hpp>
#include <gradsum/data/feature_rows.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/diagnostics/detail/check_network.hpp>
#include <gradsum/diagnostics/detail/model_check.hpp>
#include <gradsum/diagnostics/gradient_report.hpp>
#include <gradsum/gradient/analytic.hpp>
#include <gradsum/optimizer/sgd.hpp>
#include <gradsum/reduction/sum.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace gradsum {

/// What check_model() looks at, and how hard.
struct CheckModelOptions {
  int points = 3;                 ///< random parameter vectors, >= 1
  std::int64_t rows = 4;          ///< samples the loss is summed over, >= 1
  /// Up to this many parameters every coordinate is checked; beyond it,
  /// `sampled` of them (the last ones, the first, an even spread, random).
  int max_full = 2000;
  int sampled = 500;              ///< coordinates checked beyond max_full, >= 1
  double theta_scale = 0.5;       ///< theta_j drawn uniformly from [-s, s], s > 0
  double x_scale = 1.0;           ///< generated features uniform in [-s, s], s > 0
  std::uint64_t seed = 0;         ///< the draws of theta, rows and coordinates
  /// Central-difference step relative to max(1, |theta_j|); 0: the scalar
  /// type's (GradientTolerance<Scalar>::step).
  double step = 0;
  /// Per-coordinate threshold; 0: the scalar type's
  /// (GradientTolerance<Scalar>::tolerance).
  double tolerance = 0;

  /// Throws gradsum::Error naming the first knob out of range.
  void validate() const {
    if (points < 1) fail("gradsum::check_model: points must be >= 1, got ", points);
    if (rows < 1) fail("gradsum::check_model: rows must be >= 1, got ", rows);
    if (max_full < 0) fail("gradsum::check_model: max_full must be >= 0, got ", max_full);
    if (sampled < 1) fail("gradsum::check_model: sampled must be >= 1, got ", sampled);
    if (!(theta_scale > 0) || !std::isfinite(theta_scale))
      fail("gradsum::check_model: theta_scale must be finite and > 0, got ", theta_scale);
    if (!(x_scale > 0) || !std::isfinite(x_scale))
      fail("gradsum::check_model: x_scale must be finite and > 0, got ", x_scale);
    if (!(step >= 0) || !std::isfinite(step))
      fail("gradsum::check_model: step must be finite and >= 0 (0: the default), got ",
                   step);
    if (!(tolerance >= 0) || !std::isfinite(tolerance))
      fail("gradsum::check_model: tolerance must be finite and >= 0 (0: the default), "
                   "got ", tolerance);
  }
};

/// Checks a model of your own before training it, on `options.rows` rows
/// of `data` drawn at random (all of them when it has fewer), at
/// `options.points` random parameter vectors theta_j ~ U[-theta_scale,
/// theta_scale]:
///
/// - finiteness: forward's outputs, the loss, its derivative dz and
///   backward's contribution (the first non-finite value is named);
/// - the accumulate rule: each sample's backward into g prefilled with
///   random values, twice; both increments must equal the contribution
///   computed into zeros (a backward that assigns fails here);
/// - the gradient: the sum over the rows of backward(theta, x, dz, g) with
///   dz = dl/dz, against two-sided central differences of the summed loss
///   (step h_j = step * max(1, |theta_j|)), coordinate by coordinate
///   (GradientTolerance<Scalar>): every coordinate up to max_full
///   parameters, `sampled` of them beyond.
///
/// Returns the report; `passed` is false and `diagnosis` says what is
/// wrong on the first failed check. The model runs in small kernels on
/// `space`, as it does in training (so forward and backward must be
/// KOKKOS_FUNCTION for a GPU space). Memory: 2 rows x P values per sample
/// and up to about 4M values of perturbed parameters. Blocking; not
/// collective. Throws gradsum::Error for a knob out of range, data of the
/// wrong width, no rows, a target of a drawn row the loss rejects, or a
/// loss that cannot take the model's outputs.
/// A model with kinks (ReLU) may fail near one: central differences are
/// wrong across a kink.
///
/// A network of layers (Network) is checked through a step instead, the
/// loss being the mean over every position of the rows: the gradient of
/// that mean against its central differences, and the accumulate rule as
/// the gradient of the rows in panels of one row each against the
/// gradient in one panel. Its `samples` are rows (windows of text).
template <class ExecutionSpace, class Model, class Loss, class Data>
GradientReport check_model(const ExecutionSpace& space, const Model& model, const Loss& loss,
                           const Data& data, const CheckModelOptions& options = {}) {
  using Scalar = typename Data::scalar_type;
  if constexpr (detail::is_network<Model>::value) {
    options.validate();
    if (data.num_features() != model.num_features())
      fail("gradsum::check_model: data has ", data.num_features(), " features but the "
           "network expects ", model.num_features());
    const std::int64_t n = data.num_samples();
    if (n < 1) fail("gradsum::check_model: data has no rows; expected at least 1");
    return detail::check_network<Scalar>(
        space, model, loss, data, detail::draw_rows(n, std::min(n, options.rows), options.seed),
        options);
  } else {
    static_assert(detail::check_step_policies<ExecutionSpace, Scalar, Model, Loss, SGD, Analytic,
                                              Sum, Local>(),
                  "gradsum::check_model: the model or loss misses a member");
    static_assert(Kokkos::SpaceAccessibility<ExecutionSpace, typename Data::memory_space>::accessible,
                  "gradsum::check_model: the execution space cannot read the data's memory space");
    options.validate();
    const int k = model.num_outputs();
    if (model.num_parameters() < 1)
      fail("gradsum::check_model: model ", model.name(), " has ", model.num_parameters(),
                   " parameters; expected at least 1");
    if (k < 1 || k > detail::output_capacity<Model>::value)
      fail("gradsum::check_model: model ", model.name(), " has ", k,
                   " outputs; expected 1 to ", detail::output_capacity<Model>::value,
                   " (Model::output_capacity, else GRADSUM_MAX_OUTPUTS)");
    if (!loss.supports_outputs(k))
      fail("gradsum::check_model: loss ", loss.name(), " cannot take a model with ", k,
                   " output(s) (model ", model.name(), ")");
    if (data.num_features() != model.num_features())
      fail("gradsum::check_model: data has ", data.num_features(), " features but model ",
                   model.name(), " expects ", model.num_features());
    const std::string limit = detail::gather_limit("gradsum::check_model", data.features());
    if (!limit.empty()) fail(limit);
    const std::int64_t n = data.num_samples();
    if (n < 1) fail("gradsum::check_model: data has no rows; expected at least 1");
    const auto rows = detail::draw_rows(n, std::min(n, options.rows), options.seed);
    const auto targets = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), data.targets());
    for (std::int64_t i : rows)
      if (!loss.is_valid_target(targets(i), k))
        fail("gradsum::check_model: target ", targets(i), " of row ", i,
                     " is not valid for loss ", loss.name(), " with ", k, " output(s)");
    using X = std::decay_t<decltype(data.features())>;
    using Y = std::decay_t<decltype(data.targets())>;
    return detail::ModelCheck<Scalar, ExecutionSpace, Model, Loss, X, Y, CheckModelOptions>(
               space, model, loss, data.features(), data.targets(), rows, options)
        .run();
  }
}

/// check_model on `options.rows` generated samples: features uniform in
/// [-x_scale, x_scale] and, per sample, the first target the loss accepts
/// (is_valid_target) among a uniform value in [-1, 1] and a class in
/// 0 … max(k, 2) - 1. Scalar is the type to check (double unless given:
/// `check_model<float>(space, model, loss)`). Throws gradsum::Error as the
/// overload with data does, and when the loss accepts neither kind of target.
template <class Scalar = double, class ExecutionSpace, class Model, class Loss>
GradientReport check_model(const ExecutionSpace& space, const Model& model, const Loss& loss,
                           const CheckModelOptions& options = {}) {
  options.validate();
  const int d = model.num_features(), k = model.num_outputs();
  if (!loss.supports_outputs(k))  // before drawing targets for it
    fail("gradsum::check_model: loss ", loss.name(), " cannot take a model with ", k,
                 " output(s) (model ", model.name(), ")");
  detail::SplitMix64 rng(options.seed ^ 0xa4093822299f31d0ULL);
  std::vector<double> x(std::size_t(options.rows) * std::size_t(d > 0 ? d : 0)), y;
  if constexpr (detail::is_network<Model>::value) {
    if (model.windows()) {  // windows of token ids, each row's last id its target
      for (auto& v : x) v = double(rng.below(std::uint64_t(model.vocabulary())));
      for (std::int64_t i = 0; i < options.rows; ++i) y.push_back(x[std::size_t((i + 1) * d - 1)]);
      const auto data = Dataset<Scalar, typename ExecutionSpace::memory_space>::from_host(
          options.rows, d, x, y);
      return check_model(space, model, loss, data, options);
    }
  }
  for (auto& v : x) v = detail::uniform_in(rng, options.x_scale);
  for (std::int64_t i = 0; i < options.rows; ++i) {
    const double real = detail::uniform_in(rng, 1.0);
    const double label = double(rng.below(std::uint64_t(std::max(k, 2))));
    if (loss.is_valid_target(Scalar(real), k)) y.push_back(real);
    else if (loss.is_valid_target(Scalar(label), k)) y.push_back(label);
    else
      fail("gradsum::check_model: loss ", loss.name(), " accepts neither target ", real,
                   " nor ", label, " for ", k, " output(s); pass data with valid targets");
  }
  const auto data = Dataset<Scalar, typename ExecutionSpace::memory_space>::from_host(
      options.rows, d, x, y);
  return check_model(space, model, loss, data, options);
}

}  // namespace gradsum
