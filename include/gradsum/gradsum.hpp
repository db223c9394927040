// SPDX-License-Identifier: Apache-2.0
#pragma once

/// Umbrella header: everything gradsum offers (the MPI parts only when the
/// library was configured with GRADSUM_ENABLE_MPI), layer by layer, lowest
/// first (see docs/design.md).

#include <gradsum/config.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <gradsum/core/error.hpp>
#include <gradsum/core/host_load.hpp>
#include <gradsum/core/limits.hpp>
#include <gradsum/core/model_members.hpp>
#include <gradsum/core/output_file.hpp>
#include <gradsum/core/requirements.hpp>
#include <gradsum/core/safetensors.hpp>
#include <gradsum/core/signature.hpp>
#include <gradsum/core/spaces.hpp>

#include <gradsum/data/csv.hpp>
#include <gradsum/data/dataset.hpp>
#include <gradsum/data/global_scaling.hpp>
#include <gradsum/data/gzip.hpp>
#include <gradsum/data/libsvm.hpp>
#include <gradsum/data/partition.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/data/sampler.hpp>
#include <gradsum/data/scaling.hpp>
#include <gradsum/data/split.hpp>
#include <gradsum/data/text.hpp>

#include <gradsum/linalg/gemm.hpp>

#include <gradsum/loss/binary_cross_entropy.hpp>
#include <gradsum/loss/softmax_cross_entropy.hpp>
#include <gradsum/loss/squared_error.hpp>

#include <gradsum/reduction/compensated.hpp>
#include <gradsum/reduction/reproducible.hpp>
#include <gradsum/reduction/runtime.hpp>
#include <gradsum/reduction/sum.hpp>

#include <gradsum/optimizer/adagrad.hpp>
#include <gradsum/optimizer/adam.hpp>
#include <gradsum/optimizer/adamw.hpp>
#include <gradsum/optimizer/clipped.hpp>
#include <gradsum/optimizer/first_order.hpp>
#include <gradsum/optimizer/line_search_method.hpp>
#include <gradsum/optimizer/lbfgs.hpp>
#include <gradsum/optimizer/momentum.hpp>
#include <gradsum/optimizer/nesterov.hpp>
#include <gradsum/optimizer/newton.hpp>
#include <gradsum/optimizer/rmsprop.hpp>
#include <gradsum/optimizer/schedule.hpp>
#include <gradsum/optimizer/sgd.hpp>
#include <gradsum/optimizer/steepest_descent.hpp>

#include <gradsum/model/gpt.hpp>
#include <gradsum/model/initializers.hpp>
#include <gradsum/model/layer.hpp>
#include <gradsum/model/layers/activation_layer.hpp>
#include <gradsum/model/layers/attention.hpp>
#include <gradsum/model/layers/dense.hpp>
#include <gradsum/model/layers/embedding.hpp>
#include <gradsum/model/layers/layer_norm.hpp>
#include <gradsum/model/layers/position_embedding.hpp>
#include <gradsum/model/layers/repeated.hpp>
#include <gradsum/model/layers/residual.hpp>
#include <gradsum/model/layers/sequential.hpp>
#include <gradsum/model/linear.hpp>
#include <gradsum/model/mlp.hpp>
#include <gradsum/model/network.hpp>
#include <gradsum/model/softmax.hpp>
#include <gradsum/model/tensors.hpp>

#include <gradsum/gradient/analytic.hpp>
#include <gradsum/gradient/central_difference.hpp>
#include <gradsum/gradient/path.hpp>
#include <gradsum/gradient/virtual_workers.hpp>

#include <gradsum/aggregation/local.hpp>
#include <gradsum/aggregation/robust.hpp>

#include <gradsum/train/callbacks.hpp>
#include <gradsum/train/checkpoint.hpp>
#include <gradsum/train/checkpoint_format.hpp>
#include <gradsum/train/fit.hpp>
#include <gradsum/train/generate.hpp>
#include <gradsum/train/metrics.hpp>
#include <gradsum/train/model_file.hpp>
#include <gradsum/train/parameter_file.hpp>
#include <gradsum/train/objective.hpp>
#include <gradsum/train/predict.hpp>
#include <gradsum/train/running_averages.hpp>
#include <gradsum/train/step.hpp>
#include <gradsum/train/stopping.hpp>
#include <gradsum/train/update_context.hpp>

#include <gradsum/diagnostics/check_model.hpp>
#include <gradsum/diagnostics/critical_point.hpp>
#include <gradsum/diagnostics/duplicates.hpp>
#include <gradsum/diagnostics/gradient_check.hpp>
#include <gradsum/diagnostics/gradient_health.hpp>
#include <gradsum/diagnostics/gradient_report.hpp>
#include <gradsum/diagnostics/suspect_rows.hpp>

#include <gradsum/plan/algorithms.hpp>
#include <gradsum/plan/calibrate.hpp>
#include <gradsum/plan/cost_model.hpp>
#include <gradsum/plan/overlap.hpp>
#include <gradsum/plan/report.hpp>
#include <gradsum/plan/strategy.hpp>

#if GRADSUM_ENABLE_MPI
#include <gradsum/mpi/allreduce.hpp>
#include <gradsum/mpi/communicator.hpp>
#include <gradsum/mpi/duplicates.hpp>
#include <gradsum/mpi/metrics.hpp>
#include <gradsum/mpi/network_probe.hpp>
#include <gradsum/mpi/robust_allreduce.hpp>
#include <gradsum/mpi/suspect_rows.hpp>
#endif

#include <gradsum/environment.hpp>

namespace gradsum {
/// diagnostics/'s names lived in gradsum::diagnostics before they joined
/// the rest in gradsum; this alias keeps code written then compiling.
/// Deprecated: write gradsum::suspect_rows, not gradsum::diagnostics::suspect_rows.
namespace diagnostics = ::gradsum;
}  // namespace gradsum
