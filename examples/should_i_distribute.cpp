// SPDX-License-Identifier: Apache-2.0
// Should I distribute? The cost model of gradsum/plan answers two classic
// cases and prints its reasoning: a small fine-tuning job that one GPU
// finishes in an afternoon, and a language model that would take years on
// one device. Exits with 1 if the verdicts are not the expected ones.

#include "plan_mode.hpp"

int main() {
  const auto small = gradsum_plan::explain(gradsum_plan::reviews());
  const auto large = gradsum_plan::explain(gradsum_plan::language_model());
  return !small.distribute && large.distribute ? 0 : 1;
}
