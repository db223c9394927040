// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The parameters of a model as named tensors, the form save_model writes
/// them in (train/model_file.hpp): PyTorch's names and layouts, so that a
/// PyTorch model of the same shape loads them with load_state_dict. A
/// model of the user's own, or a future composition of layers, takes part
/// by offering `std::vector<ParameterTensor> parameter_tensors() const`
/// (and `describe()` with `static from_description(text)` to be rebuilt).

#include <gradsum/core/error.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/model/linear.hpp>
#include <gradsum/model/mlp.hpp>
#include <gradsum/model/softmax.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gradsum {

/// One named tensor of a model's parameters and where its elements lie in
/// the flat parameter vector: the element at index (i_0, …, i_{r-1}) of a
/// tensor of `shape` (row-major in a file) is theta[offset + sum_k i_k
/// strides[k]].
struct ParameterTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::int64_t offset = 0;
  std::vector<std::int64_t> strides;

  /// The number of elements.
  std::int64_t size() const {
    std::int64_t n = 1;
    for (const std::int64_t e : shape) n *= e;
    return n;
  }
  /// Where element `j` (row-major) lies in theta.
  std::int64_t position(std::int64_t j) const {
    std::int64_t at = offset;
    for (std::size_t k = shape.size(); k-- > 0;) {
      at += (j % shape[k]) * strides[k];
      j /= shape[k];
    }
    return at;
  }
};

/// Linear regression as PyTorch's nn.Linear(d, 1): "weight" [1, d], "bias" [1].
inline std::vector<ParameterTensor> parameter_tensors(const Linear& model) {
  const int d = model.num_features();
  return {{"weight", {1, d}, 0, {d + 1, 1}}, {"bias", {1}, d, {1}}};
}

/// Softmax regression as nn.Linear(d, C): "weight" [C, d] (row c: w_c),
/// "bias" [C].
inline std::vector<ParameterTensor> parameter_tensors(const Softmax& model) {
  const int d = model.num_features(), c = model.num_outputs();
  return {{"weight", {c, d}, 0, {d + 1, 1}}, {"bias", {c}, d, {d + 1}}};
}

/// An MLP as an nn.ModuleList named `layers` of nn.Linear, its activations
/// applied between them: "layers.L.weight" [outputs, inputs] (W_l
/// transposed) and "layers.L.bias" [outputs] for L = 0, 1, ….
inline std::vector<ParameterTensor> parameter_tensors(const MLP& model) {
  std::vector<ParameterTensor> out;
  for (int l = 0; l < model.num_layers(); ++l) {
    const std::string prefix = "layers." + std::to_string(l) + ".";
    const int in = model.layer_inputs(l), units = model.layer_outputs(l);
    out.push_back({prefix + "weight", {units, in}, model.weight_offset(l), {1, units}});
    out.push_back({prefix + "bias", {units}, model.bias_offset(l), {1}});
  }
  return out;
}

/// The tensors of a model that names its own (a user's model, a
/// composition of layers).
template <class Model, class = std::enable_if_t<detail::has_parameter_tensors<Model>::value>>
std::vector<ParameterTensor> parameter_tensors(const Model& model) {
  return model.parameter_tensors();
}

namespace detail {

/// Checks that `tensors` cover each of `model`'s parameters exactly once:
/// a model's own parameter_tensors() is a contract the file relies on.
template <class Model>
void check_tensor_cover(const Model& model, const std::vector<ParameterTensor>& tensors) {
  const std::int64_t n = model.num_parameters();
  std::vector<char> seen(std::size_t(n), 0);
  for (const ParameterTensor& t : tensors) {
    std::int64_t size = 1;  // at most n + 1, so the product cannot overflow
    for (const std::int64_t e : t.shape) size = e >= 1 && e <= n && size <= n ? size * e : n + 1;
    if (t.strides.size() != t.shape.size() || size > n)
      fail("gradsum::parameter_tensors: tensor '", t.name, "' has ", t.shape.size(),
           " extents, ", t.strides.size(), " strides and more elements than the model's ", n,
           " parameters, or an extent below 1");
    for (std::int64_t j = 0; j < size; ++j) {
      const std::int64_t at = t.position(j);
      if (at < 0 || at >= n || seen[std::size_t(at)]++)
        fail("gradsum::parameter_tensors: tensor '", t.name, "' element ", j, " maps to "
             "parameter ", at, ", outside [0, ", n, ") or named twice");
    }
  }
  for (std::int64_t j = 0; j < n; ++j)
    if (!seen[std::size_t(j)])
      fail("gradsum::parameter_tensors: parameter ", j, " of ", n, " belongs to no tensor");
}

}  // namespace detail
}  // namespace gradsum
