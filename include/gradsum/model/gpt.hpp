// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// A small GPT as a composition of layers: token and position embeddings,
/// `layers` pre-norm transformer blocks (layer norm, causal multi-head
/// self-attention, a residual add; layer norm, a GELU feed-forward of four
/// times the width, a residual add), a final layer norm, and logits tied to
/// the token embedding: lnf(x) wte^T. Its parameters, in the order of the
/// flat vector, carry the names and shapes of the reference PyTorch model
/// (gpt_parameter_tensors; docs/layers.md).

#include <gradsum/core/error.hpp>
#include <gradsum/core/text.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/model/activation.hpp>
#include <gradsum/model/initializers.hpp>
#include <gradsum/model/layers/attention.hpp>
#include <gradsum/model/layers/dense.hpp>
#include <gradsum/model/layers/embedding.hpp>
#include <gradsum/model/layers/layer_norm.hpp>
#include <gradsum/model/layers/position_embedding.hpp>
#include <gradsum/model/layers/repeated.hpp>
#include <gradsum/model/layers/residual.hpp>
#include <gradsum/model/layers/sequential.hpp>
#include <gradsum/model/network.hpp>
#include <gradsum/model/tensors.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace gradsum {

/// The shape of a GPT: V tokens, windows of T, L blocks of H heads, width C.
struct GptShape {
  int vocabulary = 0;  ///< V
  int context = 0;     ///< T
  int layers = 0;      ///< L
  int heads = 0;       ///< H
  int width = 0;       ///< C, divisible by H

  /// Throws gradsum::Error naming the first size that does not fit.
  void validate() const {
    const char* names[] = {"vocabulary", "context", "layers", "heads", "width"};
    const int values[] = {vocabulary, context, layers, heads, width};
    for (int k = 0; k < 5; ++k)
      if (values[k] < 1) fail("gradsum::GptShape: ", names[k], " is ", values[k], "; expected 1 or more");
    if (width % heads != 0)
      fail("gradsum::GptShape: width ", width, " is not divisible by heads ", heads);
    const double parameters = double(vocabulary + context) * width +
                              double(layers) * (12.0 * width * width + 13.0 * width) + 2.0 * width;
    if (parameters > 2147483647.0)
      fail("gradsum::GptShape: ", parameters, " parameters, more than an int holds (2147483647)");
  }
};

/// x + proj(attention(qkv(ln1(x)))).
using GptAttention = Residual<Sequential<LayerNorm, Dense, SelfAttention, Dense>>;
/// x + fcproj(gelu(fc(ln2(x)))).
using GptFeedForward = Residual<Sequential<LayerNorm, Dense, Dense>>;
/// One pre-norm transformer block.
using GptBlock = Sequential<GptAttention, GptFeedForward>;
/// Embeddings, blocks and the final layer norm; the tied output is the
/// Network's.
using GptBody = Sequential<TokenEmbedding, PositionEmbedding, Repeated<GptBlock>, LayerNorm>;

inline std::vector<ParameterTensor> gpt_parameter_tensors(const GptShape& shape);

/// A GPT over windows of text: the Network of its body with the output tied
/// to the token embedding, which also knows its shape. Checkpoints and
/// model files name it "gpt:vocabulary=V,context=T,layers=L,heads=H,width=C"
/// (describe(), from_description()), and its tensors carry the reference
/// PyTorch names (parameter_tensors()).
class Gpt : public Network<GptBody> {
 public:
  /// The GPT of `shape`. Throws gradsum::Error for a shape that does not fit.
  explicit Gpt(const GptShape& shape) : Network(body_of(shape), shape.context, shape.vocabulary,
                                                NetworkOutput::tied_embedding),
                                        shape_(shape) {}

  static const char* name() { return "gpt"; }
  const GptShape& shape() const { return shape_; }
  /// "vocabulary=V,context=T,layers=L,heads=H,width=C".
  std::string describe() const {
    return "vocabulary=" + std::to_string(shape_.vocabulary) +
           ",context=" + std::to_string(shape_.context) + ",layers=" + std::to_string(shape_.layers) +
           ",heads=" + std::to_string(shape_.heads) + ",width=" + std::to_string(shape_.width);
  }
  /// The GPT describe() wrote `text` for; anything else (a key missing,
  /// repeated or unknown, a value not a positive integer, a shape that
  /// does not fit) is a gradsum::Error quoting it.
  static Gpt from_description(const std::string& text) {
    const char* keys[] = {"vocabulary", "context", "layers", "heads", "width"};
    int values[5] = {0, 0, 0, 0, 0};
    auto refuse = [&](const std::string& why) {
      fail("gradsum::Gpt: the description ", detail::quote_text(text, 200), " ", why,
           "; expected vocabulary=V,context=T,layers=L,heads=H,width=C");
    };
    std::size_t at = 0;
    for (int k = 0; k < 5; ++k) {
      const std::string key = std::string(keys[k]) + "=";
      if (text.compare(at, key.size(), key) != 0) refuse("lacks " + key + " in its place");
      at += key.size();
      std::int64_t v = 0;
      const std::size_t start = at;
      while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - start < 10)
        v = v * 10 + (text[at++] - '0');
      if (at == start || v < 1 || v > 2147483647) refuse(std::string("has no positive ") + keys[k]);
      values[k] = int(v);
      if (k < 4 && (at >= text.size() || text[at++] != ',')) refuse("ends after " + key);
    }
    if (at != text.size()) refuse("holds more after width");
    return Gpt({values[0], values[1], values[2], values[3], values[4]});
  }
  /// The named tensors of gpt_parameter_tensors(shape()).
  std::vector<ParameterTensor> parameter_tensors() const { return gpt_parameter_tensors(shape_); }

 private:
  static GptBody body_of(const GptShape& shape) {
    shape.validate();
    const int C = shape.width;
    const TokenEmbedding wte{shape.vocabulary, C};
    const PositionEmbedding wpe{shape.context, C};
    const LayerNorm norm{C};
    wte.validate();
    wpe.validate();
    norm.validate();
    const GptAttention attention(Sequential<LayerNorm, Dense, SelfAttention, Dense>(
        norm, Dense(C, 3 * C), SelfAttention(C, shape.heads, true), Dense(C, C)));
    const GptFeedForward feed_forward(Sequential<LayerNorm, Dense, Dense>(
        norm, Dense(C, 4 * C, Activation::gelu), Dense(4 * C, C)));
    return GptBody(wte, wpe, Repeated<GptBlock>(shape.layers, GptBlock(attention, feed_forward)),
                   norm);
  }

  GptShape shape_;
};

/// The GPT of `shape` (Gpt(shape)). Throws gradsum::Error for a shape that
/// does not fit.
inline Gpt make_gpt(const GptShape& shape) { return Gpt(shape); }

/// The GPT's parameters as named tensors, in the order of the flat vector:
/// wte.weight [V, C], wpe.weight [T, C], for each block i blocks.i.ln1
/// (weight, bias [C]), blocks.i.qkv (weight [3C, C], bias [3C]),
/// blocks.i.proj ([C, C], [C]), blocks.i.ln2, blocks.i.fc ([4C, C], [4C]),
/// blocks.i.fcproj ([C, 4C], [C]); then lnf.weight, lnf.bias.
inline std::vector<ParameterTensor> gpt_parameter_tensors(const GptShape& shape) {
  shape.validate();
  const std::int64_t C = shape.width;
  std::vector<ParameterTensor> tensors;
  std::int64_t at = 0;
  auto add = [&](const std::string& name, std::vector<std::int64_t> dims) {
    ParameterTensor t{name, dims, at, {}};
    std::int64_t stride = 1;
    t.strides.assign(dims.size(), 1);
    for (std::size_t k = dims.size(); k-- > 0;) {
      t.strides[k] = stride;
      stride *= dims[k];
    }
    at += stride;
    tensors.push_back(std::move(t));
  };
  add("wte.weight", {shape.vocabulary, C});
  add("wpe.weight", {shape.context, C});
  for (int i = 0; i < shape.layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    add(b + "ln1.weight", {C});
    add(b + "ln1.bias", {C});
    add(b + "qkv.weight", {3 * C, C});
    add(b + "qkv.bias", {3 * C});
    add(b + "proj.weight", {C, C});
    add(b + "proj.bias", {C});
    add(b + "ln2.weight", {C});
    add(b + "ln2.bias", {C});
    add(b + "fc.weight", {4 * C, C});
    add(b + "fc.bias", {4 * C});
    add(b + "fcproj.weight", {C, 4 * C});
    add(b + "fcproj.bias", {C});
  }
  add("lnf.weight", {C});
  add("lnf.bias", {C});
  return tensors;
}

/// GPT-2's initial parameters for `shape`: layer norms' weights 1, every
/// bias 0, the other weights N(0, 0.02^2), the residual branches' last
/// products (proj, fcproj) N(0, (0.02 / sqrt(2 L))^2); drawn from
/// SplitMix64 seeded with `seed` (normals by Box–Muller), the same on every
/// rank and compiler.
inline std::vector<double> gpt_initial_parameters(const GptShape& shape, std::uint64_t seed) {
  const auto tensors = gpt_parameter_tensors(shape);
  std::vector<double> theta(std::size_t(tensors.back().offset + tensors.back().size()), 0.0);
  detail::SplitMix64 rng(seed ^ 0x13198a2e03707344ULL);
  const double residual = 0.02 / std::sqrt(2.0 * shape.layers);
  auto ends_with = [](const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (const auto& t : tensors) {
    const bool norm = t.shape.size() == 1 && ends_with(t.name, ".weight");
    const bool bias = ends_with(t.name, ".bias");
    const double s =
        ends_with(t.name, "proj.weight") ? residual : 0.02;  // proj and fcproj
    for (std::int64_t j = 0; j < t.size(); ++j)
      theta[std::size_t(t.offset + j)] =
          norm ? 1.0 : bias ? 0.0 : s * detail::standard_normal(rng);
  }
  return theta;
}

}  // namespace gradsum
