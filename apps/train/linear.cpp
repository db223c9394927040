// SPDX-License-Identifier: Apache-2.0
// gradsum-train --model linear and logistic, compiled once per part of the
// execution spaces (models.hpp).

#include "train_model.hpp"

namespace gradsum_train {

template <int Part>
int train_linear(const Context& context, const Aggregation& aggregation) {
  const int d = int(context.inputs.train.num_features);
  auto linear = [d] { return gradsum::Linear(d); };
  if (context.options.model == "linear")
    return train_model<Part, gradsum::SquaredError>(context, aggregation, linear);
  return train_model<Part, gradsum::BinaryCrossEntropy>(context, aggregation, linear);
}

template int train_linear<GRADSUM_SPACE_PART>(const Context&, const Aggregation&);

}  // namespace gradsum_train
