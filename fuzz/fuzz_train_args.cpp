// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: gradsum-train's command-line parser
// (apps/train/flags.hpp), the input split at NUL bytes into
// arguments. Only gradsum::Error may leave it, with a message, and what it
// accepts must satisfy the checks it promises.

#include "inputs.hpp"

#include <train/flags.hpp>

#include <algorithm>

namespace {

void check(bool ok, const char* what) {
  if (!ok) gradsum_fuzz::broken("fuzz_train_args", what);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto args = gradsum_fuzz::split_args(data, size);
  gradsum_train::Options o;
  try {
    o = gradsum_train::parse(args);
  } catch (const gradsum::Error& e) {
    check(e.what()[0] != '\0', "empty error message");
    return 0;
  }
  check(o.help || !o.data.empty(), "accepted without --data");
  check(o.lr > 0 && std::isfinite(o.lr), "accepted a non-positive --lr");
  check(o.l2 >= 0 && o.grad_tol >= 0 && o.loss_tol >= 0, "accepted a negative tolerance or --l2");
  check(o.test_fraction >= 0 && o.test_fraction < 1, "accepted --test-fraction outside [0, 1)");
  check(o.validation >= 0 && o.validation < 1, "accepted --validation outside [0, 1)");
  check(o.epochs >= 0 && o.batch >= 0 && o.accumulate >= 1 && o.workers >= 1, "accepted a bad count");
  check(o.history >= 1 && o.history <= 1000, "accepted --history outside [1, 1000]");
  check(o.model != "mlp" || !o.hidden.empty(), "mlp without hidden widths");
  for (int h : o.hidden) check(h >= 1, "accepted a hidden width < 1");
  check(o.checkpoint_every == 0 || !o.checkpoint.empty(), "--checkpoint-every without --checkpoint");
  try {
    gradsum_train::parse_schedule(o.schedule).with_warmup(o.warmup);
  } catch (const gradsum::Error&) {
    check(false, "an accepted --schedule fails to parse again");
  }
  return 0;
}
