// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// A trained model in one file, for inference: save_model and load_model.
/// The file is safetensors (core/safetensors.hpp) holding the parameters
/// as the named tensors of model/tensors.hpp, in the scalar type of the
/// parameters saved (F64 for double, F32 for float), and in its
/// "__metadata__" the architecture and what applying the model needs:
///
///     gradsum.model      the model as checkpoints name it ("linear",
///                        "softmax", "mlp:13-32(tanh)-3")
///     gradsum.features   gradsum.outputs   (decimal)
///     gradsum.version    the gradsum that wrote it
///     gradsum.loss       optional: the loss trained with ("squared_error", …)
///     gradsum.scaler.mean, gradsum.scaler.scale
///                        optional: the feature scaling, comma-separated
///     gradsum.class.0 …  optional: the names of classes 0, 1, …
///     gradsum.vocabulary optional: a model over text's characters, token
///                        id 0 first, as comma-separated byte values
///                        ("10,32,33"; any byte, even one that is not text)
///
/// Neither the optimizer, nor the rank count, nor the scalar type is part
/// of the model: a file loads into any step, on any number of ranks, and
/// double parameters load into a float model (rounded to nearest).

#include <gradsum/config.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/output_file.hpp>
#include <gradsum/core/safetensors.hpp>
#include <gradsum/core/text.hpp>
#include <gradsum/data/scaling.hpp>
#include <gradsum/model/tensors.hpp>
#include <gradsum/train/checkpoint.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradsum {

/// What a model file may hold beside the architecture and the parameters:
/// what a program applying the model to raw data needs (gradsum-predict).
struct ModelNotes {
  std::string loss;      ///< the loss the model was trained with; empty: not said
  StandardScaler scaler; ///< the scaling of the features before the model; empty: none
  std::vector<std::string> class_names;  ///< names of classes 0 … C-1; empty: numbers
  /// A model over text's characters, token id 0 first (strictly increasing
  /// bytes, CharVocabulary::characters()); empty for other models.
  std::string vocabulary;
};

/// A model read by load_model: the model rebuilt from the file's
/// architecture, its parameters in `MemorySpace`, and the file's notes.
template <class Model, class Scalar, class MemorySpace>
struct LoadedModel {
  Model model;
  Kokkos::View<Scalar*, MemorySpace> theta;
  ModelNotes notes;
};

/// A model file read on the host without a model type (for programs that
/// choose the model at run time, such as gradsum-predict): the checked
/// file, the architecture it declares, and its notes.
struct ModelFile {
  std::string path;
  Safetensors content;
  std::string model;  ///< gradsum.model, e.g. "mlp:13-32(tanh)-3"
  std::int64_t num_features = 0, num_outputs = 0;
  ModelNotes notes;
};

namespace detail {

/// The most class names a model file may hold (as max_outputs bounds a
/// model's outputs).
constexpr std::int64_t model_file_max_classes = max_outputs;

inline std::string numbers_text(const std::vector<double>& values) {
  std::string out;
  char buffer[32];
  for (std::size_t j = 0; j < values.size(); ++j) {
    std::snprintf(buffer, sizeof buffer, "%.17g", values[j]);
    out += (j ? "," : "") + std::string(buffer);
  }
  return out;
}

/// Whether `text` is exactly one finite number as std::strtod reads it
/// (nothing before or after it), stored in `value`.
inline bool parse_finite(const std::string& text, double& value) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(value);
}

inline std::vector<double> parse_numbers(const std::string& path, const char* key,
                                         const std::string& text) {
  std::vector<double> out;
  for (std::size_t start = 0; !text.empty();) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string token = text.substr(start, comma - start);
    double v = 0;
    if (!parse_finite(token, v))
      fail("gradsum::load_model: '", path, "': __metadata__ ", key, " value ", out.size() + 1,
           " is ", quote_text(token), ", expected a finite number");
    out.push_back(v);
    if (comma == text.size()) break;
    start = comma + 1;
  }
  return out;
}

inline std::int64_t metadata_count(const std::string& path, const Safetensors& s,
                                   const char* key, std::int64_t most) {
  const std::string* text = s.metadata_value(key);
  if (!text) fail("gradsum::load_model: '", path, "' has no __metadata__ ", key);
  std::int64_t v = 0;
  bool digits = !text->empty() && text->size() <= 18;
  for (const char c : *text) {
    digits = digits && c >= '0' && c <= '9';
    v = v * 10 + (c - '0');
  }
  if (!digits || v < 1 || v > most)
    fail("gradsum::load_model: '", path, "': __metadata__ ", key, " is ", quote_text(*text),
         ", expected an integer in [1, ", most, "]");
  return v;
}

/// The notes of model file `s` for a model of `features` inputs, checked.
inline ModelNotes read_notes(const std::string& path, const Safetensors& s,
                             std::int64_t features) {
  const char* function = "gradsum::load_model";
  ModelNotes notes;
  if (const std::string* loss = s.metadata_value("gradsum.loss")) notes.loss = *loss;
  const std::string* mean = s.metadata_value("gradsum.scaler.mean");
  const std::string* scale = s.metadata_value("gradsum.scaler.scale");
  if (bool(mean) != bool(scale))
    fail(function, ": '", path, "' holds gradsum.scaler.", mean ? "mean" : "scale",
         " without gradsum.scaler.", mean ? "scale" : "mean");
  if (mean) {
    notes.scaler.mean = parse_numbers(path, "gradsum.scaler.mean", *mean);
    notes.scaler.scale = parse_numbers(path, "gradsum.scaler.scale", *scale);
    notes.scaler.source = path;
    notes.scaler.validate(function);
    if (std::int64_t(notes.scaler.mean.size()) != features)
      fail(function, ": '", path, "' holds a scaler of ", notes.scaler.mean.size(),
           " features for a model of ", features);
  }
  for (std::int64_t k = 0; k <= model_file_max_classes; ++k) {
    const std::string* name = s.metadata_value("gradsum.class." + std::to_string(k));
    if (!name) break;
    const std::string reason = unprintable_reason(*name);
    if (!reason.empty())
      fail(function, ": '", path, "': class name ", k, " ", quote_text(*name), " holds ",
           reason);
    notes.class_names.push_back(*name);
  }
  if (const std::string* vocabulary = s.metadata_value("gradsum.vocabulary")) {
    for (const double b : parse_numbers(path, "gradsum.vocabulary", *vocabulary)) {
      if (!(b >= 0 && b <= 255 && b == std::floor(b)))
        fail(function, ": '", path, "': gradsum.vocabulary holds ", b,
             ", expected byte values 0 to 255");
      notes.vocabulary.push_back(static_cast<char>(static_cast<unsigned char>(b)));
    }
    const std::string reason = vocabulary_error(notes.vocabulary);
    if (!reason.empty()) fail(function, ": '", path, "': gradsum.vocabulary: ", reason);
  }
  if (!unprintable_reason(notes.loss).empty())
    fail(function, ": '", path, "': gradsum.loss ", quote_text(notes.loss), " holds ",
         unprintable_reason(notes.loss));
  return notes;
}

/// The file's metadata for `model`, `notes` and the gradsum that writes it.
template <class Model>
std::vector<std::pair<std::string, std::string>> model_metadata(const Model& model,
                                                                const ModelNotes& notes) {
  std::vector<std::pair<std::string, std::string>> m = {
      {"gradsum.model", model_description(model)},
      {"gradsum.features", std::to_string(model.num_features())},
      {"gradsum.outputs", std::to_string(model.num_outputs())},
      {"gradsum.version", GRADSUM_VERSION_STRING}};
  if (!notes.loss.empty()) m.emplace_back("gradsum.loss", notes.loss);
  if (!notes.scaler.mean.empty()) {
    notes.scaler.validate("gradsum::save_model");
    if (std::int64_t(notes.scaler.mean.size()) != model.num_features())
      fail("gradsum::save_model: the scaler has ", notes.scaler.mean.size(),
           " features, the model ", model.num_features());
    m.emplace_back("gradsum.scaler.mean", numbers_text(notes.scaler.mean));
    m.emplace_back("gradsum.scaler.scale", numbers_text(notes.scaler.scale));
  }
  for (std::size_t k = 0; k < notes.class_names.size(); ++k) {
    const std::string reason = unprintable_reason(notes.class_names[k]);
    if (!reason.empty())
      fail("gradsum::save_model: class name ", quote_text(notes.class_names[k]), " holds ",
           reason, " (class names must be UTF-8 text without control characters)");
    m.emplace_back("gradsum.class." + std::to_string(k), notes.class_names[k]);
  }
  if (!notes.vocabulary.empty()) {
    const std::string reason = vocabulary_error(notes.vocabulary);
    if (!reason.empty()) fail("gradsum::save_model: the vocabulary: ", reason);
    if (std::int64_t(notes.vocabulary.size()) != model.num_outputs())
      fail("gradsum::save_model: a vocabulary of ", notes.vocabulary.size(),
           " characters for a model of ", model.num_outputs(), " outputs");
    std::vector<double> bytes;
    for (const char c : notes.vocabulary) bytes.push_back(double(static_cast<unsigned char>(c)));
    m.emplace_back("gradsum.vocabulary", numbers_text(bytes));
  }
  return m;
}

/// The safetensors form of `model` with parameters `theta` (as doubles),
/// written as `size`-byte floats.
template <class Model>
Safetensors model_safetensors(const Model& model, const std::vector<double>& theta,
                              std::size_t size, const ModelNotes& notes) {
  const std::vector<ParameterTensor> tensors = parameter_tensors(model);
  check_tensor_cover(model, tensors);
  if (std::int64_t(theta.size()) != model.num_parameters())
    fail("gradsum::save_model: theta has ", theta.size(), " entries, the model ",
         model.num_parameters(), " parameters");
  Safetensors s;
  s.metadata = model_metadata(model, notes);
  for (const ParameterTensor& t : tensors) {
    std::vector<double> values(std::size_t(t.size()));
    for (std::int64_t j = 0; j < t.size(); ++j)
      values[std::size_t(j)] = theta[std::size_t(t.position(j))];
    s.append(t.name, std::vector<std::uint64_t>(t.shape.begin(), t.shape.end()), values, size);
  }
  return s;
}

/// Checks that the architecture file `s` declares, if any, is `model`'s.
template <class Model>
void check_architecture(const std::string& path, const Safetensors& s, const Model& model) {
  const std::string* saved = s.metadata_value("gradsum.model");
  if (!saved) return;  // a file written elsewhere (PyTorch): the tensors are checked
  const std::string here = model_description(model);
  if (*saved != here)
    fail("gradsum::load_model: '", path, "' holds model ", quote_text(*saved, 200),
         ", expected '", here, "'");
  const std::int64_t features = metadata_count(path, s, "gradsum.features", 2147483646);
  const std::int64_t outputs = metadata_count(path, s, "gradsum.outputs", max_outputs);
  if (features != model.num_features() || outputs != model.num_outputs())
    fail("gradsum::load_model: '", path, "' declares ", features, " features and ", outputs,
         " outputs, the model has ", model.num_features(), " and ", model.num_outputs());
}

/// Checks the tensor entries of `s` against `model`'s: every one present,
/// F32 or F64, of its shape, and no other.
template <class Model>
void check_model_tensors(const std::string& path, const Safetensors& s, const Model& model) {
  const std::vector<ParameterTensor> expected = parameter_tensors(model);
  check_tensor_cover(model, expected);
  const std::string where = "gradsum::load_model: '" + path + "': ";
  for (const ParameterTensor& t : expected) {
    const SafetensorsTensor* found = s.find(t.name);
    const std::vector<std::uint64_t> shape(t.shape.begin(), t.shape.end());
    if (!found)
      fail(where, "tensor '", t.name, "' (shape ", shape_text(shape), ") is missing; ",
           model_description(model), " has ", expected.size(), " tensors");
    if (found->dtype != "F32" && found->dtype != "F64")
      fail(where, "tensor '", t.name, "' has dtype ", quote_text(found->dtype),
           ", expected F32 or F64");
    if (found->shape != shape)
      fail(where, "tensor '", t.name, "' has shape ", shape_text(found->shape), ", expected ",
           shape_text(shape), " for ", model_description(model));
  }
  if (s.tensors.size() != expected.size())
    for (const SafetensorsTensor& t : s.tensors) {
      bool known = false;
      for (const ParameterTensor& e : expected) known = known || e.name == t.name;
      if (!known)
        fail(where, "tensor ", quote_text(t.name), " is not a parameter of ",
             model_description(model), " (expected ", expected.size(), " tensors)");
    }
}

/// `model`'s parameters from the checked file `s`, as Scalars held in
/// doubles: every value finite in the file and as a Scalar.
template <class Scalar, class Model>
std::vector<double> model_values(const std::string& path, const Safetensors& s,
                                 const Model& model) {
  std::vector<double> theta(std::size_t(model.num_parameters()));
  for (const ParameterTensor& t : parameter_tensors(model)) {
    const SafetensorsTensor& stored = *s.find(t.name);
    for (std::int64_t j = 0; j < t.size(); ++j) {
      const double v = s.value(stored, std::size_t(j));
      const auto converted = Scalar(v);
      if (!std::isfinite(converted))
        fail("gradsum::load_model: '", path, "': tensor '", t.name, "' element ", j,
             " (row-major) is ", v, std::isfinite(v) ? ", beyond the range of float" : "",
             "; parameters must be finite");
      theta[std::size_t(t.position(j))] = double(converted);
    }
  }
  return theta;
}

/// The model of `description` (gradsum.model) with `features` inputs and
/// `outputs` outputs, built as `Model`.
template <class Model>
Model model_from_description(const std::string& path, const std::string& description,
                             std::int64_t features, std::int64_t outputs) {
  const std::string name = std::string(Model::name());
  const bool plain = description == name;
  const bool described = description.compare(0, name.size() + 1, name + ":") == 0;
  auto refuse = [&] {
    fail("gradsum::load_model: '", path, "' holds model ", quote_text(description, 200),
         ", not a ", name, " model");
  };
  if constexpr (std::is_same<Model, Linear>::value) {
    if (!plain || outputs != 1) refuse();
    return Linear(int(features));
  } else if constexpr (std::is_same<Model, Softmax>::value) {
    if (!plain) refuse();
    return Softmax(int(features), int(outputs));
  } else {
    static_assert(has_from_description<Model>::value,
                  "gradsum::load_model: the model needs `static Model from_description("
                  "const std::string&)` to be rebuilt from a file (or load into a model "
                  "with load_model(path, model, theta))");
    if (!described) refuse();
    return Model::from_description(description.substr(name.size() + 1));
  }
}

/// What the header `s` of model file `path` declares: its model, sizes
/// and notes (content left empty).
inline ModelFile declared_model(const std::string& path, const Safetensors& s) {
  ModelFile f;
  f.path = path;
  const std::string* model = s.metadata_value("gradsum.model");
  if (!model)
    fail("gradsum::load_model: '", path, "' names no model (no __metadata__ "
         "gradsum.model, e.g. \"mlp:13-32(tanh)-3\"): load it into a model of your own "
         "with load_model(path, model, theta)");
  f.model = *model;
  f.num_features = metadata_count(path, s, "gradsum.features", 2147483646);
  f.num_outputs = metadata_count(path, s, "gradsum.outputs", max_outputs);
  f.notes = read_notes(path, s, f.num_features);
  if (!f.notes.vocabulary.empty() && std::int64_t(f.notes.vocabulary.size()) != f.num_outputs)
    fail("gradsum::load_model: '", path, "' holds a vocabulary of ", f.notes.vocabulary.size(),
         " characters for a model of ", f.num_outputs, " outputs");
  return f;
}

template <class T, class = void>
struct is_step : std::false_type {};
template <class T>
struct is_step<T, std::void_t<decltype(std::declval<T&>().aggregation())>> : std::true_type {};

}  // namespace detail

/// Writes `model` with parameters `theta` (a View of float or double, any
/// memory space) and `notes` to `path`, a safetensors file (see the file
/// comment), replaced only once complete (an OutputFile). The tensors are
/// F64 for double parameters, F32 for float. Throws gradsum::Error naming
/// the file if it cannot be written. Blocking; not collective: under MPI
/// call it on one rank, or use the overload taking the step.
template <class Model, class Theta,
          class = std::enable_if_t<!detail::is_step<Model>::value>>
void save_model(const std::string& path, const Model& model, const Theta& theta,
                const ModelNotes& notes = {}) {
  using Scalar = typename Theta::non_const_value_type;
  static_assert(std::is_same<Scalar, double>::value || std::is_same<Scalar, float>::value,
                "gradsum::save_model: theta must hold float or double");
  const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  std::vector<double> values(host.extent(0));
  for (std::size_t j = 0; j < values.size(); ++j) values[j] = double(host(j));
  write_output(path,
               encode_safetensors(detail::model_safetensors(model, values, sizeof(Scalar), notes)),
               "gradsum::save_model", binary_output());
}

/// save_model for the model of `step`, the loss its notes name unless
/// `notes` does: rank 0 writes, and every rank throws the same
/// gradsum::Error if writing failed. Blocking; collective.
template <class StepType, class Theta, class = std::enable_if_t<detail::is_step<StepType>::value>,
          class = void>
void save_model(const std::string& path, StepType& step, const Theta& theta,
                ModelNotes notes = {}) {
  if (notes.loss.empty()) notes.loss = step.loss().name();
  on_every_rank(step.aggregation(), [&] {
    if (step.aggregation().rank() == 0) save_model(path, step.model(), theta, notes);
  });
}

/// Reads the model file `path` on the host without knowing its model (see
/// ModelFile): its architecture must be declared (gradsum.model,
/// gradsum.features, gradsum.outputs); the tensors are checked against the
/// model once it is built (model_parameters). Not collective.
inline ModelFile read_model_file(const std::string& path) {
  ModelFile f;
  Safetensors content = read_safetensors(path, [&](const Safetensors& header) {
    f = detail::declared_model(path, header);
  });
  f.content = std::move(content);
  return f;
}

/// The parameters of `file` for `model` (built from file.model), checked
/// against it, as `Scalar`s held in doubles.
template <class Scalar = double, class Model>
std::vector<double> model_parameters(const ModelFile& file, const Model& model) {
  detail::check_architecture(file.path, file.content, model);
  detail::check_model_tensors(file.path, file.content, model);
  return detail::model_values<Scalar>(file.path, file.content, model);
}

/// Reads the parameters of `model` from the safetensors file `path` (one
/// gradsum wrote, or one in PyTorch's layout, model/tensors.hpp), as
/// `Scalar`s held in doubles; `notes`, if given, receives the file's notes.
/// The architecture in the file, if it declares one, must be `model`'s;
/// the tensors are checked against the model before any data is read.
/// Throws gradsum::Error naming the file and the tensor. Not collective.
template <class Scalar = double, class Model>
std::vector<double> read_model_parameters(const std::string& path, const Model& model,
                                          ModelNotes* notes = nullptr) {
  const Safetensors s = read_safetensors(path, [&](const Safetensors& header) {
    detail::check_architecture(path, header, model);
    detail::check_model_tensors(path, header, model);
    if (notes) *notes = detail::read_notes(path, header, model.num_features());
  });
  return detail::model_values<Scalar>(path, s, model);
}

/// Loads the parameters of `model` from `path` into `theta` (a contiguous
/// View of float or double of model.num_parameters() entries, any memory
/// space) and returns the file's notes; double parameters load into a
/// float theta rounded to nearest. See read_model_parameters for the
/// checks; on an error `theta` is unchanged. Blocking; not collective
/// (every rank that calls it reads the file).
template <class Model, class Theta>
ModelNotes load_model(const std::string& path, const Model& model, const Theta& theta) {
  using Scalar = typename Theta::non_const_value_type;
  if (std::int64_t(theta.extent(0)) != model.num_parameters())
    fail("gradsum::load_model: theta has ", theta.extent(0), " entries, the model ",
         model.num_parameters(), " parameters");
  ModelNotes notes;
  const std::vector<double> values = read_model_parameters<Scalar>(path, model, &notes);
  auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), theta);
  for (std::size_t j = 0; j < values.size(); ++j) host(j) = Scalar(values[j]);
  Kokkos::deep_copy(theta, host);
  return notes;
}

/// Loads the model saved in `path` by save_model: the `Model` its
/// architecture describes (Linear, Softmax, MLP, or a model with
/// describe() and from_description()), its parameters as `Scalar`s in
/// `MemorySpace`, and its notes:
///
///     const auto saved = gradsum::load_model<gradsum::MLP, float>("net.safetensors");
///     const gradsum::MLP net = saved.model;  // a kernel captures copies
///     const auto theta = saved.theta;
///
/// Throws gradsum::Error naming the file and the tensor or key on any
/// problem. Blocking; not collective.
template <class Model, class Scalar = double,
          class MemorySpace = typename Kokkos::DefaultExecutionSpace::memory_space>
LoadedModel<Model, Scalar, MemorySpace> load_model(const std::string& path) {
  std::optional<Model> model;  // built from the header, before the data are read
  ModelNotes notes;
  const Safetensors s = read_safetensors(path, [&](const Safetensors& header) {
    const ModelFile declared = detail::declared_model(path, header);
    model.emplace(detail::model_from_description<Model>(path, declared.model,
                                                        declared.num_features,
                                                        declared.num_outputs));
    detail::check_architecture(path, header, *model);
    detail::check_model_tensors(path, header, *model);
    notes = declared.notes;
  });
  const std::vector<double> values = detail::model_values<Scalar>(path, s, *model);
  Kokkos::View<Scalar*, MemorySpace> theta("gradsum::load_model::theta", values.size());
  auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), theta);
  for (std::size_t j = 0; j < values.size(); ++j) host(j) = Scalar(values[j]);
  Kokkos::deep_copy(theta, host);
  return {*model, theta, notes};
}

}  // namespace gradsum
