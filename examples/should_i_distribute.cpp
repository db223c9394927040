// SPDX-License-Identifier: Apache-2.0
// Should I distribute? The cost model of gradsum/plan answers two classic
// cases and prints its reasoning: a small fine-tuning job that one GPU
// finishes in an afternoon, and a language model that would take years on
// one device. Exits with 1 if the verdicts are not the expected ones.

#include <gradsum/plan/report.hpp>

int main() {
  const auto small = gradsum::plan::explain(gradsum::plan::reviews_case());
  const auto large = gradsum::plan::explain(gradsum::plan::language_model_case());
  return !small.distribute && large.distribute ? 0 : 1;
}
