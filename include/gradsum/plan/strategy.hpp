// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The two questions the cost model of cost_model.hpp leaves open: how
/// large an aggregate batch still pays (from the measured gradient noise
/// scale), and whether one worker can hold the model at all (memory),
/// which names the kind of parallelism a job needs.

#include <gradsum/core/error.hpp>

#include <cmath>
#include <string>

namespace gradsum {
namespace plan {

/// How a batch of workers x per-worker batch trains, given the gradient
/// noise scale B_noise (NoiseScale, measured by a step with
/// Step::measure_workers).
///
/// McCandlish et al. ("An Empirical Model of Large-Batch Training", 2018):
/// the optimizer steps and the samples needed to reach a given loss with
/// batch B follow
///
///     S(B) = S_min (1 + B_noise / B),   E(B) = E_min (1 + B / B_noise),
///
/// so below B_noise a larger batch saves steps almost in proportion, and
/// past it each doubling saves less and costs more samples. With the
/// per-worker batch b fixed and N workers (B = N b), the steps fall by
/// (1 + B_noise / b) / (1 + B_noise / (N b)): half of the most that adding
/// workers can ever give is reached at N = B_noise / b + 1, the useful
/// number of workers reported here.
///
/// Large aggregate batches need the learning rate scaled with the batch
/// (the linear scaling rule, lr = base_lr B / b, with a gradual warm-up
/// from base_lr over the first epochs: Goyal et al., "Accurate, Large
/// Minibatch SGD", 2017).
struct BatchAdvice {
  double noise_scale = 0;        ///< B_noise, samples
  double per_worker_batch = 0;   ///< b
  double workers = 0;            ///< N
  double aggregate_batch = 0;    ///< B = N b
  /// S(b) / S(B): how many times fewer steps N workers need than one.
  double step_reduction = 0;
  /// The most step_reduction can reach with any N: 1 + B_noise / b.
  double max_step_reduction = 0;
  /// E(B) / E_min: samples processed relative to the fewest possible.
  double sample_cost = 0;
  /// Workers past which adding more buys less than half of what is left:
  /// B_noise / b + 1 (at least 1).
  double useful_workers = 0;
  /// Linear scaling of the learning rate: B / b.
  double learning_rate_scale = 0;
  /// Whether B is past B_noise: warm-up and the scaled rate are needed,
  /// and more workers mostly burn samples.
  bool past_noise_scale = false;
};

/// The advice for N workers of `per_worker_batch` samples each, given the
/// noise scale. Throws gradsum::Error naming an invalid argument.
inline BatchAdvice advise_batch(double noise_scale, double per_worker_batch, double workers) {
  auto check = [](const char* name, double v) {
    if (!(v > 0) || !std::isfinite(v))
      fail("gradsum::plan::advise_batch: ", name,
                            " must be positive and finite, got ", v);
  };
  check("noise_scale", noise_scale);
  check("per_worker_batch", per_worker_batch);
  check("workers", workers);
  BatchAdvice a;
  a.noise_scale = noise_scale;
  a.per_worker_batch = per_worker_batch;
  a.workers = workers;
  a.aggregate_batch = workers * per_worker_batch;
  a.max_step_reduction = 1 + noise_scale / per_worker_batch;
  a.step_reduction = a.max_step_reduction / (1 + noise_scale / a.aggregate_batch);
  a.sample_cost = 1 + a.aggregate_batch / noise_scale;
  a.useful_workers = noise_scale / per_worker_batch + 1;
  a.learning_rate_scale = workers;
  a.past_noise_scale = a.aggregate_batch > noise_scale;
  return a;
}

/// What one worker must hold during a step, in bytes per parameter and in
/// total, and the memory of one device.
struct MemoryNeeds {
  double parameters = 0;            ///< P
  double weight_bytes = 4;          ///< per parameter (2 for bfloat16 weights)
  double gradient_bytes = 4;        ///< per parameter
  /// Optimizer state per parameter: 8 for Adam's two float32 moments, 12
  /// with a float32 master copy of bfloat16 weights, 0 for SGD.
  double optimizer_bytes = 8;
  /// Activations kept for the backward pass of one worker's batch, bytes
  /// (for a transformer about batch x sequence x hidden x layers x ~34
  /// bytes without recomputation).
  double activation_bytes = 0;
  /// Whether the activations grow with a long sequence (the activations
  /// of one sequence alone exceed what is left): then splitting the
  /// sequence is the remedy, else recomputation or a smaller batch.
  bool long_sequences = false;
  double device_bytes = 0;  ///< memory of one device (GPU or node)

  void validate() const {
    auto check = [](const char* name, double v, bool positive) {
      if (!(positive ? v > 0 : v >= 0) || !std::isfinite(v))
        fail("gradsum::plan::MemoryNeeds: ", name, " must be ",
                     positive ? "positive" : "non-negative", " and finite, got ", v);
    };
    check("parameters", parameters, true);
    check("weight_bytes", weight_bytes, true);
    check("gradient_bytes", gradient_bytes, true);
    check("optimizer_bytes", optimizer_bytes, false);
    check("activation_bytes", activation_bytes, false);
    check("device_bytes", device_bytes, true);
  }
};

/// The kind of parallelism a job needs, from its memory.
enum class Strategy {
  data_parallel,       ///< everything fits one device: replicate, sum gradients (gradsum)
  optimizer_sharding,  ///< weights, gradients and activations fit; the optimizer state must be split (ZeRO-1)
  sequence_parallel,   ///< the model state fits; one long sequence's activations do not: split sequences
  model_parallel       ///< weights and gradients alone exceed a device: tensor or pipeline parallelism
};

/// "data parallelism", "optimizer-state sharding", …
inline const char* describe(Strategy s) {
  switch (s) {
    case Strategy::optimizer_sharding: return "optimizer-state sharding";
    case Strategy::sequence_parallel: return "sequence parallelism";
    case Strategy::model_parallel: return "model (tensor) or pipeline parallelism";
    case Strategy::data_parallel: break;
  }
  return "data parallelism";
}

/// The memory check: each part's bytes, the total against the device, the
/// strategy, and the fewest devices the split part needs (1 for data
/// parallelism).
struct MemoryCheck {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, total = 0, device = 0;
  Strategy strategy = Strategy::data_parallel;
  /// Devices one copy of the model must be spread over: the optimizer
  /// state's shards, the sequence's parts, or the model's parts.
  double devices = 1;
};

/// Checks `needs` against one device's memory and names the strategy:
///  - everything fits: data parallelism;
///  - weights + gradients + activations fit, the optimizer state does not:
///    shard the optimizer state over ceil(optimizer / room left) devices;
///  - weights + gradients + optimizer state fit, the activations of long
///    sequences do not: sequence parallelism over ceil(activations / room
///    left) devices;
///  - otherwise the model itself must be split (tensor or pipeline
///    parallelism) over at least ceil(total / device) devices, each group
///    then a data-parallel worker.
/// Throws gradsum::Error naming an invalid field.
inline MemoryCheck check_memory(const MemoryNeeds& needs) {
  needs.validate();
  MemoryCheck c;
  c.weights = needs.parameters * needs.weight_bytes;
  c.gradients = needs.parameters * needs.gradient_bytes;
  c.optimizer = needs.parameters * needs.optimizer_bytes;
  c.activations = needs.activation_bytes;
  c.total = c.weights + c.gradients + c.optimizer + c.activations;
  c.device = needs.device_bytes;
  const double state = c.weights + c.gradients + c.optimizer;
  if (c.total <= c.device) return c;
  if (c.weights + c.gradients + c.activations < c.device) {
    c.strategy = Strategy::optimizer_sharding;
    c.devices = std::ceil(c.optimizer / (c.device - c.weights - c.gradients - c.activations));
  } else if (needs.long_sequences && state < c.device) {
    c.strategy = Strategy::sequence_parallel;
    c.devices = std::ceil(c.activations / (c.device - state));
  } else {
    c.strategy = Strategy::model_parallel;
    c.devices = std::ceil(c.total / c.device);
  }
  return c;
}

}  // namespace plan
}  // namespace gradsum
