// SPDX-License-Identifier: Apache-2.0
#pragma once

// The models gradsum-train trains, one function per model, each defined in
// a file of its own (linear.cpp, softmax.cpp, mlp.cpp) that is compiled
// once per part of the execution spaces: the programs then compile on
// several cores, and no compiler holds every template at once.

#include "context.hpp"

#include <cstdint>
#include <vector>

namespace gradsum_train {

/// The parts the execution spaces are compiled in: part p holds the
/// spaces at the places i of gradsum::ExecutionSpaces with i % space_parts
/// == p (Serial and OpenMP apart); apps/CMakeLists.txt compiles each model
/// file once per part, with GRADSUM_SPACE_PART set to it, and
/// GRADSUM_SPACE_PARTS (CMake's GRADSUM_TRAIN_SPACE_PARTS) to their number.
#ifndef GRADSUM_SPACE_PARTS
#error "compile gradsum-train with GRADSUM_SPACE_PARTS set (apps/CMakeLists.txt)"
#endif
constexpr int space_parts = GRADSUM_SPACE_PARTS;

/// --model linear (squared error) or logistic (binary cross-entropy), on
/// --space if it is in part `Part`; else -1. Collective; returns the exit status.
template <int Part>
int train_linear(const Context& context, const Aggregation& aggregation);

/// --model softmax (softmax cross-entropy over the classes of the data), likewise.
template <int Part>
int train_softmax(const Context& context, const Aggregation& aggregation);

/// --model mlp:… with --loss squared, logistic or softmax (the default), likewise.
template <int Part>
int train_mlp(const Context& context, const Aggregation& aggregation);

/// The characters of --text as a GPT trains on them: the vocabulary (the
/// sorted distinct characters of the whole file) and the token ids of the
/// training part and of the --validation part (the last fraction).
struct TextInputs {
  gradsum::CharVocabulary vocabulary;
  std::vector<std::int32_t> train, validation;
};

/// Reads --text and splits it. Throws gradsum::Error naming the file.
TextInputs read_text_inputs(const Options& o);

/// --text with --model gpt:…, on --space if it is in part `Part`; else -1.
/// Collective; returns the exit status.
template <int Part>
int train_gpt(const Context& context, const TextInputs& text, const Aggregation& aggregation);

}  // namespace gradsum_train
