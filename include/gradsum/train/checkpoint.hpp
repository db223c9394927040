// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Checkpoints: the parameters, the optimizer's state and the position in
/// training, in a versioned binary file that a crash never destroys (the
/// format itself is in train/checkpoint_format.hpp).

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/output_file.hpp>
#include <gradsum/core/restored.hpp>
#include <gradsum/data/scaling.hpp>
#include <gradsum/optimizer/clipped.hpp>
#include <gradsum/optimizer/detail/checks.hpp>
#include <gradsum/optimizer/schedule.hpp>
#include <gradsum/train/checkpoint_format.hpp>
#include <gradsum/train/detail/optimizer_shards.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradsum {

namespace detail {

/// The model as a checkpoint names it: its name, then, for a model whose
/// shape its sizes do not fix (an MLP: "mlp:13-32(tanh)-3"), its
/// description after a colon, so that tools can rebuild it and a network
/// of another shape is told apart.
template <class Model>
std::string model_description(const Model& model) {
  std::string out = model.name();
  if constexpr (has_describe<Model>::value) {
    out += ':';
    out += model.describe();
  }
  return out;
}

// What an optimizer keeps on the host besides its state vectors. A policy
// may declare it with host_state() / restore_host_state(values), which
// checks the values (they come from a file) and throws gradsum::Error; an
// update counter `std::int64_t t` (Adam, AdamW) is saved without that.
template <class O, class = void>
struct has_host_state : std::false_type {};
template <class O>
struct has_host_state<O, std::void_t<decltype(std::declval<const O&>().host_state())>>
    : std::true_type {};
template <class O, class = void>
struct has_update_counter : std::false_type {};
template <class O>
struct has_update_counter<O, std::enable_if_t<std::is_same<decltype(O::t), std::int64_t>::value>>
    : std::true_type {};

template <class O>
void save_host_state(const O& o, std::vector<double>& out) {
  if constexpr (has_host_state<O>::value) {
    const std::vector<double> v = o.host_state();
    out.insert(out.end(), v.begin(), v.end());
  }
  if constexpr (has_update_counter<O>::value) out.push_back(double(o.t));
}
template <class O>
void save_host_state(const Scheduled<O>& o, std::vector<double>& out) {
  out.push_back(double(o.t));
  save_host_state(o.optimizer, out);
}

// The restores below read values from a file: each is checked before it
// is used (detail::restored_count and the policies' own
// restore_host_state), and load_checkpoint runs them on a copy of the
// optimizer first, so that a refused file changes nothing.
inline double next_host_value(const std::vector<double>& in, std::size_t& at) {
  if (at >= in.size())
    fail("the optimizer's saved host values end after ", in.size(), " values");
  return in[at++];
}
template <class O>
void restore_host_state(O& o, const std::vector<double>& in, std::size_t& at) {
  if constexpr (has_host_state<O>::value) {
    const std::size_t n = o.host_state().size();
    if (at > in.size() || in.size() - at < n)
      fail("the optimizer's saved host values end after ", in.size(), " values, ", at + n,
           " expected");
    o.restore_host_state(std::vector<double>(in.begin() + std::ptrdiff_t(at),
                                             in.begin() + std::ptrdiff_t(at + n)));
    at += n;
  }
  if constexpr (has_update_counter<O>::value)
    o.t = restored_update_count(next_host_value(in, at), o.name());
}
template <class O>
void restore_host_state(Scheduled<O>& o, const std::vector<double>& in, std::size_t& at) {
  o.t = restored_count(next_host_value(in, at),
                       "the learning-rate schedule's saved update count t");
  restore_host_state(o.optimizer, in, at);
}
template <class O>
void save_host_state(const Clipped<O>& o, std::vector<double>& out) {
  out.push_back(double(o.clipped_updates));
  save_host_state(o.optimizer, out);
}
template <class O>
void restore_host_state(Clipped<O>& o, const std::vector<double>& in, std::size_t& at) {
  o.clipped_updates = restored_count(next_host_value(in, at),
                                     "gradient clipping's saved count of clipped updates");
  restore_host_state(o.optimizer, in, at);
}

// Checks that row `row` of the checkpoint's optimizer state (sums or
// averages of squares) holds no negative value.
inline void check_squares_row(const CheckpointData& c, int row, const std::string& optimizer) {
  const auto n = std::size_t(c.num_parameters);
  for (std::size_t j = 0; j < n; ++j) {
    const double v = c.value_at(c.state_bytes, std::size_t(row) * n + j);
    if (v < 0)
      fail("the ", optimizer, " optimizer's saved state row ", row, " (of squares) is ", v,
           " for parameter ", j, ", expected a number >= 0");
  }
}

/// What is wrong with checkpoint `c`'s optimizer values for `optimizer`
/// (its host values, restored into a copy; its row of squares), or an
/// empty string.
template <class O>
std::string restore_error(const std::string& path, const CheckpointData& c,
                          const O& optimizer) {
  O trial = optimizer;
  std::size_t at = 0;
  try {
    restore_host_state(trial, c.optimizer_host, at);
    const int row = squares_row(optimizer);
    if (row >= 0 && row < c.state_rows) check_squares_row(c, row, optimizer.name());
  } catch (const Error& e) {
    return concat("gradsum::load_checkpoint: '", path, "': ", e.what());
  }
  return {};
}

template <class Scalar>
const char* scalar_name() {
  return std::is_same<Scalar, float>::value ? "float" : "double";
}

/// Raw bytes of a View of Scalars (copied to the host).
template <class View>
std::string view_bytes(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  using Scalar = typename View::non_const_value_type;
  return std::string(reinterpret_cast<const char*>(h.data()), h.size() * sizeof(Scalar));
}

/// Copies raw bytes into a (contiguous) View.
template <class View>
void assign_bytes(const View& v, const std::string& bytes) {
  auto h = Kokkos::create_mirror_view(Kokkos::HostSpace(), v);
  if (!bytes.empty()) std::memcpy(h.data(), bytes.data(), bytes.size());
  Kokkos::deep_copy(v, h);
}

/// The bytes of the optimizer state of `step` as one state_rows x P
/// row-major matrix, whatever the ranks: this worker's own state, or, when
/// the step shards it, every rank's block collected on rank 0 (collective
/// then; the other ranks get an empty string).
template <class StepType>
std::string whole_state_bytes(StepType& step) {
  const auto state = step.optimizer_state();
  const ParameterShard shard = step.optimizer_shard();
  const std::int64_t P = step.num_parameters();
  if constexpr (has_optimizer_shards<typename StepType::aggregation_type>::value) {
    if (shard.partial(P)) {
      using Scalar = typename StepType::scalar_type;
      auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), state);
      const bool root = step.aggregation().rank() == 0;
      const std::size_t rows = state.extent(0);
      std::string all(root ? rows * std::size_t(P) * sizeof(Scalar) : 0, '\0');
      for (std::size_t r = 0; r < rows; ++r)
        step.aggregation().collect_shards(
            host.data() + r * std::size_t(shard.size()),
            root ? reinterpret_cast<Scalar*>(&all[0]) + r * std::size_t(P) : nullptr, P);
      return all;
    }
  }
  return view_bytes(state);
}

/// Copies the whole state_rows x P matrix in `bytes` (a checkpoint's) into
/// the optimizer state of `step`: the columns of its block when the step
/// shards the state.
template <class StepType>
void assign_state(StepType& step, const std::string& bytes) {
  using Scalar = typename StepType::scalar_type;
  const auto state = step.optimizer_state();
  const ParameterShard shard = step.optimizer_shard();
  const std::size_t P = std::size_t(step.num_parameters()), n = std::size_t(shard.size());
  if (!shard.partial(std::int64_t(P)) || state.extent(0) == 0) {
    assign_bytes(state, bytes);
    return;
  }
  auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), state);
  for (std::size_t r = 0; r < state.extent(0); ++r)
    std::memcpy(host.data() + r * n, bytes.data() + (r * P + std::size_t(shard.begin)) * sizeof(Scalar),
                n * sizeof(Scalar));
  Kokkos::deep_copy(state, host);
}

}  // namespace detail

/// What `step` would write for parameters `theta` (`class_names`: the
/// names of classes 0 … C-1 when the labels were read as names;
/// `vocabulary`: the characters of a model over text, token id 0 first).
/// The optimizer state is the whole one on any number of ranks: when the
/// step shards it, every rank calls this (collective) and rank 0's result
/// holds every block (the others' hold no state).
template <class StepType, class Theta>
CheckpointData make_checkpoint(StepType& step, const Theta& theta,
                               const TrainingPosition& position,
                               const StandardScaler& scaler = {},
                               const std::vector<double>& loop = {},
                               const std::vector<std::string>& class_names = {},
                               const std::string& vocabulary = {}) {
  using Scalar = typename StepType::scalar_type;
  CheckpointData c;
  c.scalar = detail::scalar_name<Scalar>();
  c.scalar_size = sizeof(Scalar);
  c.model = detail::model_description(step.model());
  c.loss = step.loss().name();
  c.optimizer = step.optimizer().name();
  c.gradient = step.gradient_policy().name();
  c.reduction = step.reduction().name();
  c.aggregation = step.aggregation().name();
  c.num_parameters = step.num_parameters();
  c.num_features = step.model().num_features();
  c.num_outputs = step.model().num_outputs();
  c.ranks = step.aggregation().size();
  c.position = position;
  const auto state = step.optimizer_state();
  c.state_rows = std::int64_t(state.extent(0));
  c.parameter_bytes = detail::view_bytes(theta);
  c.state_bytes = detail::whole_state_bytes(step);
  detail::save_host_state(step.optimizer(), c.optimizer_host);
  c.scaler = scaler;
  c.loop = loop;
  c.class_names = class_names;
  c.vocabulary = vocabulary;
  return c;
}

/// Saves the parameters `theta`, the optimizer's state and `position`
/// (plus, optionally, the feature scaling, the loop's own state, the
/// class names that gradsum-predict prints and a text model's vocabulary) to
/// `path`, an OutputFile (never standard output): a temporary file in the
/// target's folder, flushed to the disk and renamed over it, so a crash at
/// any moment leaves the previous checkpoint intact. With a distributed aggregation rank 0 writes and
/// every rank throws the same gradsum::Error if writing failed.
/// Blocking; collective.
template <class StepType, class Theta>
void save_checkpoint(const std::string& path, StepType& step, const Theta& theta,
                     const TrainingPosition& position, const StandardScaler& scaler = {},
                     const std::vector<double>& loop = {},
                     const std::vector<std::string>& class_names = {},
                     const std::string& vocabulary = {}) {
  // A sharded state is collected on rank 0 by every rank.
  const bool rank0 = step.aggregation().rank() == 0;
  CheckpointData c;
  if (rank0 || step.optimizer_shard().partial(step.num_parameters()))
    c = make_checkpoint(step, theta, position, scaler, loop, class_names, vocabulary);
  on_every_rank(step.aggregation(), [&] {
    if (rank0)
      write_output(path, encode_checkpoint(c), "gradsum::save_checkpoint", binary_output());
  });
}

/// Checks that checkpoint `c` (read from `path`) fits `step`: scalar type,
/// model, loss, optimizer, sizes and optimizer state. Returns what is
/// wrong, or an empty string.
template <class StepType>
std::string checkpoint_mismatch(const std::string& path, const CheckpointData& c,
                                StepType& step) {
  using Scalar = typename StepType::scalar_type;
  const std::string where = "gradsum::load_checkpoint: '" + path + "' ";
  auto differ = [&](const char* what, const auto& saved, const auto& here) {
    return detail::concat(where, "was written for ", what, " ", saved, " but this step has ",
                          here);
  };
  if (c.scalar != detail::scalar_name<Scalar>())
    return differ("scalar type", c.scalar, detail::scalar_name<Scalar>());
  const std::string model = detail::model_description(step.model());
  if (c.model != model) return differ("model", c.model, model);
  if (c.loss != step.loss().name()) return differ("loss", c.loss, step.loss().name());
  if (c.num_features != step.model().num_features())
    return differ("number of features", c.num_features, step.model().num_features());
  if (c.num_outputs != step.model().num_outputs())
    return differ("number of outputs", c.num_outputs, step.model().num_outputs());
  if (c.num_parameters != step.num_parameters())
    return differ("number of parameters", c.num_parameters, step.num_parameters());
  if (c.optimizer != step.optimizer().name())
    return differ("optimizer", c.optimizer, step.optimizer().name());
  const auto state = step.optimizer_state();
  if (c.state_rows != std::int64_t(state.extent(0)))
    return differ("optimizer state rows", c.state_rows, state.extent(0));
  std::vector<double> host;
  detail::save_host_state(step.optimizer(), host);
  if (c.optimizer_host.size() != host.size())
    return differ("optimizer host values", c.optimizer_host.size(), host.size());
  return {};
}

/// Loads a checkpoint written by save_checkpoint into `theta` and the
/// step's optimizer state, and returns the position to continue from (the
/// scaler and loop state through `c_out` when given). Every rank reads the
/// file; if any rank cannot (missing, not a regular file, truncated,
/// corrupted, written for another model, width, scalar type or optimizer,
/// or holding a value no writer makes, such as an L-BFGS history index out
/// of range: checkpoints are untrusted input) every rank throws the same
/// gradsum::Error naming the file and the mismatch or the value, and
/// nothing is modified. Blocking; collective.
template <class StepType, class Theta>
TrainingPosition load_checkpoint(const std::string& path, StepType& step, const Theta& theta,
                                 CheckpointData* c_out = nullptr) {
  CheckpointData c;
  std::string error;
  try {
    c = read_checkpoint(path);
    error = checkpoint_mismatch(path, c, step);
    if (error.empty()) error = detail::restore_error(path, c, step.optimizer());
  } catch (const Error& e) {
    error = e.what();
  }
  error = step.aggregation().first_error(error);
  if (!error.empty()) throw AgreedError(error);
  if (std::int64_t(theta.extent(0)) != c.num_parameters)
    fail("gradsum::load_checkpoint: theta has ", theta.extent(0), " entries, the "
                 "checkpoint '", path, "' ", c.num_parameters);
  detail::assign_bytes(theta, c.parameter_bytes);
  detail::assign_state(step, c.state_bytes);
  std::size_t at = 0;  // restore_error restored these very values into a copy
  detail::restore_host_state(step.optimizer(), c.optimizer_host, at);
  const TrainingPosition position = c.position;
  if (c_out) *c_out = std::move(c);
  return position;
}

}  // namespace gradsum
