// SPDX-License-Identifier: Apache-2.0
// gradsum-train --model softmax, compiled once per part of the execution
// spaces (models.hpp).

#include "inputs.hpp"
#include "train_model.hpp"

namespace gradsum_train {

template <int Part>
int train_softmax(const Context& context, const Aggregation& aggregation) {
  const gradsum::Table& table = context.inputs.train;
  return train_model<Part, gradsum::SoftmaxCrossEntropy>(context, aggregation, [&] {
    const int classes = count_classes(table, context.inputs.class_names);
    return on_path(gradsum::Softmax(int(table.num_features), classes), context.options);
  });
}

template int train_softmax<GRADSUM_SPACE_PART>(const Context&, const Aggregation&);

}  // namespace gradsum_train
