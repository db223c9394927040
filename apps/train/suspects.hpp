// SPDX-License-Identifier: Apache-2.0
#pragma once

// --suspects K and --suspects-out FILE: the training rows whose target
// looks wrong, from their margins recorded after every epoch.

#include "context.hpp"
#include "save.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace gradsum_train {

/// The margin history of this rank's training rows, added to `callbacks`;
/// null without --suspects.
template <class Space, class Model, class Loss, class Theta, class Data>
std::unique_ptr<gradsum::MarginHistory<Space, Model, Loss, Theta, Data>>
track_suspects(const Options& o, const Model& model, const Loss& loss, const Theta& theta,
               const Data& data, gradsum::RowRange rows, gradsum::CallbackList& callbacks) {
  if (o.suspects == 0) return nullptr;
  if (o.suspects > data.num_samples())
    gradsum::fail_agreed("--suspects: asks for ", o.suspects, " rows, but training holds ",
                         data.num_samples(), "; ask for at most ", data.num_samples());
  auto history =
      std::make_unique<gradsum::MarginHistory<Space, Model, Loss, Theta, Data>>(
          Space(), model, loss, theta, data, rows);
  callbacks.add(*history);
  return history;
}

/// A target or prediction as the file spells it: a class name, else a number.
inline std::string suspect_value(const std::vector<std::string>& names, double v, bool classifier) {
  if (classifier && v >= 0 && v < double(names.size())) return names[std::size_t(v)];
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
inline std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

/// Prints the K suspects (rank 0) and writes --suspects-out: collective,
/// the ranks' top K merged.
template <class Loss, class History, class Aggregation>
void report_suspects(const Context& context, const History* history, Aggregation& aggregation) {
  if (!history) return;
  const Options& o = context.options;
#if GRADSUM_ENABLE_MPI
  const auto top = gradsum::mpi::suspect_rows(gradsum::mpi::Communicator(MPI_COMM_WORLD),
                                              *history, o.suspects);
#else
  const auto top = gradsum::suspect_rows(*history, o.suspects);
#endif
  constexpr bool classifier = gradsum::is_classifier_loss_v<Loss>;
  const auto& names = context.inputs.class_names;
  std::vector<std::string> lines;
  for (const auto& s : top) {
    const auto row = context.inputs.file_rows.at(std::size_t(s.row));
    const std::string target = suspect_value(names, s.target, classifier),
                      predicted = suspect_value(names, s.predicted, classifier);
    context.say("suspect row=%lld target=%s predicted=%s score=%.6g\n",
                static_cast<long long>(row), target.c_str(), predicted.c_str(), s.score);
    char score[32];
    std::snprintf(score, sizeof score, "%.17g", s.score);
    lines.push_back(gradsum::concat(row, ',', csv_field(target), ',', csv_field(predicted), ',', score));
  }
  if (o.suspects_out.empty()) return;
  on_rank0(aggregation, [&] {
    gradsum::OutputFile out(o.suspects_out, "--suspects-out");
    out.print("row,target,predicted,score\n");
    for (const auto& line : lines) out.print("%s\n", line.c_str());
    out.commit();
  });
}

}  // namespace gradsum_train
