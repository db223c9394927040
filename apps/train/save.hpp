// SPDX-License-Identifier: Apache-2.0
#pragma once

// What gradsum-train writes once training ends (--save-params,
// --save-model; the checkpoints are a callback's), the work only rank 0
// does, the parameters it may start from (--init-params), and the
// gradient it prints there (--print-gradient).

#include "context.hpp"

#include <string>
#include <vector>

namespace gradsum_train {

/// Runs `work` on rank 0 alone; a failure there fails every rank alike.
/// Collective.
template <class Aggregation, class Work>
void on_rank0(Aggregation& aggregation, const Work& work) {
  gradsum::on_every_rank(aggregation, [&] {
    if (aggregation.rank() == 0) work();
  });
}

/// A View's values on the host.
template <class View>
std::vector<double> host_values(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

/// One value per line, 17 significant digits: read back, the same doubles.
inline void write_params(const std::string& path, const std::vector<double>& theta) {
  gradsum::OutputFile out(path, "--save-params");
  for (double v : theta) out.print("%.17g\n", v);
  out.commit();
}

/// A folder that cannot take the outputs fails the run now, not after
/// training. Collective.
template <class Aggregation>
void check_outputs(Aggregation& aggregation, const Options& o) {
  if (!o.save_params.empty())
    on_rank0(aggregation, [&] { gradsum::OutputFile::check(o.save_params, "--save-params"); });
  if (!o.save_model.empty())
    on_rank0(aggregation, [&] { gradsum::OutputFile::check(o.save_model, "--save-model"); });
  if (!o.suspects_out.empty())
    on_rank0(aggregation, [&] { gradsum::OutputFile::check(o.suspects_out, "--suspects-out"); });
  if (!o.checkpoint.empty())
    on_rank0(aggregation,
             [&] { gradsum::OutputFile::check(o.checkpoint, "gradsum::save_checkpoint"); });
}

inline bool ends_with(const std::string& text, const std::string& end) {
  return text.size() >= end.size() && text.compare(text.size() - end.size(), end.size(), end) == 0;
}

/// What gradsum-predict needs to apply a model trained on --data: the
/// feature scaling and the class names.
inline gradsum::ModelNotes data_notes(const Context& context) {
  gradsum::ModelNotes notes;
  notes.scaler = context.inputs.scaler;
  notes.class_names = context.inputs.class_names;
  return notes;
}

/// --save-params (text, or FILE.safetensors) and --save-model: the model
/// of `step` with `theta` and `notes` (the loss, the scaling, the class
/// names, a vocabulary), written by rank 0. Collective.
template <class Step, class Theta>
void save_params(const Options& o, Step& step, const Theta& theta,
                 const gradsum::ModelNotes& notes) {
  if (ends_with(o.save_params, ".safetensors"))
    gradsum::save_model(o.save_params, step, theta, notes);
  else if (!o.save_params.empty())
    on_rank0(step.aggregation(), [&] { write_params(o.save_params, host_values(theta)); });
  if (!o.save_model.empty()) gradsum::save_model(o.save_model, step, theta, notes);
}

/// --init-params: `theta` from the file, checked against `model` (a
/// safetensors file's tensors, or the count of values). Every rank reads
/// it; a failure on any fails every rank alike. Collective.
template <class Step, class Model, class Theta>
void init_params(const Options& o, Step& step, const Model& model, const Theta& theta) {
  std::vector<double> values;
  gradsum::on_every_rank(step.aggregation(), [&] {
    try {
      values = gradsum::read_parameters(o.init_params, model);
    } catch (const gradsum::Error& e) {
      gradsum::fail("--init-params: ", e.what());
    }
  });
  auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), theta);
  for (std::size_t j = 0; j < values.size(); ++j) host(j) = values[j];
  Kokkos::deep_copy(theta, host);
}

/// --print-gradient: the objective over `rows` and its gradient at
/// `theta`, one value per line. Collective.
template <class Step, class Theta, class Data, class Rows>
void print_gradient(const Context& context, Step& step, const Theta& theta, const Data& data,
                    const Rows& rows) {
  const auto r = step.evaluate(theta, data, rows);
  context.say("%.17g\n", r.loss);
  for (double g : host_values(step.gradient())) context.say("%.17g\n", g);
}

}  // namespace gradsum_train
