// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Network<Body>: a composition of layers (model/layer.hpp) as a model the
/// step, fit() and MPI accept like any other. It has no per-sample forward
/// (a layer runs kernels over a whole panel): the Analytic gradient sums it
/// on its own path, the network path (gradient/detail/network.hpp), which
/// runs panels of the batch through the body's forward, the loss at every
/// position and the body's backward, writing straight into the step's one
/// gradient buffer.
///
/// Two kinds of data:
/// - rows of a table (`Network(body)`): a row of d = body.input_width()
///   features is one sample; the body's outputs are the model's; the
///   target is the row's.
/// - windows of text (`Network(body, context, vocabulary)`): a row holds
///   context + 1 token ids (TextWindows::dataset); the first `context` are
///   the input, a panel of windows of `context` tokens, and the last
///   `context` the targets, one at every position. The loss is summed over
///   every position and the step divides by the count of positions
///   (positions_per_row() per row), so the mean is per token and the
///   summed-gradient identity holds token by token. With
///   Output::tied_embedding the logits are h E^T, h the body's output
///   (width C) and E the first vocabulary x C parameters (the body's token
///   embedding, its first layer): the output layer shares the embedding's
///   weights, and its gradient adds into theirs.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/model/layer.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace gradsum {

/// Where a Network's outputs come from: the body's own outputs, or
/// products with the token embedding's table (tied weights).
enum class NetworkOutput { body, tied_embedding };

/// A composition of layers as a model (see the file's comment).
template <class Body>
class Network {
 public:
  /// Tells the step and the gradient that this model has the network path
  /// and no per-sample one.
  static constexpr bool is_network = true;
  using body_type = Body;

  /// Rows of a table: each row of body.input_width() features is one
  /// sample, the body's outputs the model's.
  explicit Network(const Body& body) : body_(body) { check_body(); }

  /// Windows of text: rows of context + 1 token ids in [0, vocabulary).
  /// The body takes one id per row (its input width must be 1); its
  /// outputs are the vocabulary's logits (NetworkOutput::body) or vectors
  /// whose products with the first vocabulary x C parameters are
  /// (tied_embedding). Throws gradsum::Error for shapes that do not fit.
  Network(const Body& body, int context, int vocabulary,
          NetworkOutput output = NetworkOutput::tied_embedding)
      : body_(body), context_(context), vocabulary_(vocabulary), output_(output) {
    check_body();
    if (context < 1) fail("gradsum::Network: a context of ", context, " tokens; expected 1 or more");
    if (vocabulary < 1)
      fail("gradsum::Network: a vocabulary of ", vocabulary, " tokens; expected 1 or more");
    if (body.input_width() != 1)
      fail("gradsum::Network: over windows of text the body takes one token id per row, but ",
           body.describe(), " takes ", body.input_width());
    if (output == NetworkOutput::body && body.output_width() != vocabulary)
      fail("gradsum::Network: the body gives ", body.output_width(),
           " values per token but the vocabulary has ", vocabulary,
           " tokens; give it an output layer of that width, or tie the output to the embedding");
    if (output == NetworkOutput::tied_embedding &&
        std::int64_t(vocabulary) * body.output_width() > std::int64_t(body.num_parameters()))
      fail("gradsum::Network: a tied output reads a ", vocabulary, " x ", body.output_width(),
           " embedding table from the first parameters, but the body has only ",
           body.num_parameters());
  }

  /// The composition.
  const Body& body() const { return body_; }
  /// Tokens per window (0 for rows of a table).
  int context() const { return context_; }
  /// Distinct tokens (0 for rows of a table).
  int vocabulary() const { return vocabulary_; }
  /// Whether the data are windows of text.
  bool windows() const { return context_ > 0; }
  NetworkOutput output() const { return output_; }
  bool tied() const { return windows() && output_ == NetworkOutput::tied_embedding; }

  const char* name() const { return "network"; }
  /// Values per data row: context + 1 ids, or the body's input width.
  int num_features() const { return windows() ? context_ + 1 : body_.input_width(); }
  /// Outputs per position: the vocabulary, or the body's output width.
  int num_outputs() const { return windows() ? vocabulary_ : body_.output_width(); }
  int num_parameters() const { return body_.num_parameters(); }
  /// Loss terms per data row: context for windows, 1 for rows. The step
  /// divides by rows x this.
  int positions_per_row() const { return windows() ? context_ : 1; }
  /// Every parameter takes the objective's L2 term (and AdamW's decay).
  KOKKOS_FUNCTION bool is_regularized(int /*j*/) const { return true; }
  /// Values of the body's output per position (C under a tied output).
  int body_width() const { return body_.output_width(); }

  /// "network(rows, body)" or "network(text,T,V,tied|body, body)".
  std::string describe() const {
    if (!windows()) return "network(rows, " + body_.describe() + ")";
    return "network(text," + std::to_string(context_) + "," + std::to_string(vocabulary_) +
           (tied() ? ",tied, " : ",body, ") + body_.describe() + ")";
  }
  /// A hash of describe(), which every worker must agree on.
  std::int64_t architecture() const {
    std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (const char c : describe()) h = (h ^ std::uint64_t(static_cast<unsigned char>(c))) * 1099511628211ULL;
    return std::int64_t(h >> 1);
  }

  /// Most rows (tokens) in one panel of the network path; its buffers are
  /// sized for this many (or fewer, to stay within panel_scalars). A batch
  /// of more rows takes several panels, one after the other.
  std::int64_t panel_tokens = 2048;
  /// Most scalars of buffers the network path keeps for one panel.
  std::int64_t panel_scalars = std::int64_t(1) << 26;

 private:
  void check_body() const {
    if (body_.input_width() < 1 || body_.output_width() < 1)
      fail("gradsum::Network: the body ", body_.describe(), " takes ", body_.input_width(),
           " and gives ", body_.output_width(), " values per row; expected 1 or more of each");
  }

  Body body_;
  int context_ = 0;
  int vocabulary_ = 0;
  NetworkOutput output_ = NetworkOutput::body;
};

}  // namespace gradsum
