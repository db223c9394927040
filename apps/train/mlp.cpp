// SPDX-License-Identifier: Apache-2.0
// gradsum-train --model mlp:…, compiled once per part of the execution
// spaces (models.hpp); the three losses share the network's code.

#include "inputs.hpp"
#include "train_model.hpp"

namespace gradsum_train {

template <int Part>
int train_mlp(const Context& context, const Aggregation& aggregation) {
  const Options& o = context.options;
  const gradsum::Table& table = context.inputs.train;
  auto network = [&](int outputs) {
    return on_path(gradsum::MLP(int(table.num_features), o.hidden, outputs,
                                gradsum::parse_activation(o.activation)),
                   o);
  };
  if (o.loss == "squared")
    return train_model<Part, gradsum::SquaredError>(context, aggregation, [&] { return network(1); });
  if (o.loss == "logistic")
    return train_model<Part, gradsum::BinaryCrossEntropy>(context, aggregation,
                                                          [&] { return network(1); });
  return train_model<Part, gradsum::SoftmaxCrossEntropy>(context, aggregation, [&] {
    return network(count_classes(table, context.inputs.class_names));
  });
}

template int train_mlp<GRADSUM_SPACE_PART>(const Context&, const Aggregation&);

}  // namespace gradsum_train
