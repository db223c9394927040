// SPDX-License-Identifier: Apache-2.0
// fit() and its callbacks. Expected values come from a hand-written loop
// over the sampler (the loop gradsum-train used before fit existed), from
// one k-times-larger batch for accumulation, and from shorter runs.

#include "file_helpers.hpp"
#include "test_helpers.hpp"

#include <gradsum/train/fit.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace gradsum_test;
using gradsum::Linear;
using gradsum::SquaredError;

namespace {

/// Local aggregation that counts its aggregations (messages), as
/// Allreduce::calls() does.
struct CountingLocal : gradsum::Local {
  std::shared_ptr<std::int64_t> count = std::make_shared<std::int64_t>(0);
  template <class ExecutionSpace, class View>
  void aggregate(const ExecutionSpace&, const View&) {
    ++*count;
  }
  std::int64_t calls() const { return *count; }
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

template <class Space, class Optimizer>
auto make(const Optimizer& optimizer, int d = 4) {
  return gradsum::make_step<double>(Space(), Linear(d), SquaredError{}, optimizer,
                                    gradsum::Objective{}, gradsum::Analytic{}, gradsum::Sum{},
                                    CountingLocal{});
}

const HostProblem regression = random_problem(256, 4, Kind::regression, 1, 77);

/// Stops training after a given number of updates.
struct StopAt : gradsum::Callback {
  std::int64_t at;
  explicit StopAt(std::int64_t step) : at(step) {}
  void on_step(gradsum::FitState& s) override {
    if (s.position.step == at) {
      s.stop = true;
      s.stop_reason = "asked to stop";
    }
  }
};

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("fit follows the hand-written epoch loop bit for bit", Space, fit_loop) {
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  auto manual = make<Space>(gradsum::Adam{0.01});
  auto theta_manual = manual.make_parameters();
  gradsum::MiniBatchSampler<typename Space::memory_space> sampler(data.num_samples(), 30, 9);
  for (int epoch = 0; epoch < 3; ++epoch) {
    sampler.shuffle(epoch);
    for (std::int64_t b = 0; b < sampler.num_batches(); ++b)
      manual(theta_manual, data, sampler.batch(b));
  }
  auto step = make<Space>(gradsum::Adam{0.01});
  auto theta = step.make_parameters();
  gradsum::FitOptions options;
  options.epochs = 3;
  options.batch = 30;
  options.seed = 9;
  const auto result = gradsum::fit(step, theta, data, options);
  CHECK(result.position.epoch == 3);
  CHECK(result.position.step == 3 * 9);  // 256 rows in batches of 30: 9 per epoch
  CHECK(result.position.batch == 0);
  CHECK(result.reason == gradsum::StopReason::none);
  CHECK(same_bits(to_host(theta), to_host(theta_manual)));
  // The reported objective is the one at the final parameters.
  const auto final_objective = manual.evaluate(theta_manual, data);
  CHECK(result.epoch_result.loss == final_objective.loss);
}
TEST_CASE_TEMPLATE_APPLY(fit_loop, Spaces);

TEST_CASE_TEMPLATE_DEFINE("accumulating 4 micro-batches of 16 equals batches of 64 with a quarter "
                          "of the messages",
                          Space, accumulate) {
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  gradsum::FitOptions options;
  options.epochs = 2;
  options.seed = 3;

  auto large = make<Space>(gradsum::Adam{0.05});
  auto theta_large = large.make_parameters();
  options.batch = 64;
  gradsum::fit(large, theta_large, data, options);

  auto accumulated = make<Space>(gradsum::Adam{0.05});
  auto theta_accumulated = accumulated.make_parameters();
  options.batch = 16;
  options.accumulate = 4;
  const auto result = gradsum::fit(accumulated, theta_accumulated, data, options);
  CHECK(result.position.step == 2 * 4);
  CHECK(relative_distance(to_host(theta_accumulated), to_host(theta_large), 5) <= 1e-12);

  auto small = make<Space>(gradsum::Adam{0.05});
  auto theta_small = small.make_parameters();
  options.accumulate = 1;
  gradsum::fit(small, theta_small, data, options);
  // One message per update plus one per epoch for the training objective.
  CHECK(accumulated.aggregation().calls() == 2 * 4 + 2);
  CHECK(small.aggregation().calls() == 2 * 16 + 2);
  CHECK(large.aggregation().calls() == 2 * 4 + 2);
  CHECK(relative_distance(to_host(theta_small), to_host(theta_large), 5) > 1e-3);
}
TEST_CASE_TEMPLATE_APPLY(accumulate, Spaces);

TEST_CASE("accumulation with an uneven last group, and rejected with the Hessian") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto problem = random_problem(200, 4, Kind::regression, 1, 78);
  const auto data = DataOn<Space>::from_host(problem.n, problem.d, problem.x, problem.y);
  gradsum::FitOptions options;
  options.epochs = 1;
  options.seed = 1;
  options.batch = 64;  // 64, 64, 64, 8
  auto large = make<Space>(gradsum::SGD{0.05});
  auto theta_large = large.make_parameters();
  gradsum::fit(large, theta_large, data, options);
  options.batch = 16;  // 13 micro-batches: groups of 4, 4, 4 and 1
  options.accumulate = 4;
  auto accumulated = make<Space>(gradsum::SGD{0.05});
  auto theta_accumulated = accumulated.make_parameters();
  CHECK(gradsum::fit(accumulated, theta_accumulated, data, options).position.step == 4);
  CHECK(relative_distance(to_host(theta_accumulated), to_host(theta_large), 5) <= 1e-12);

  auto newton = make<Space>(gradsum::Newton{});
  auto theta_newton = newton.make_parameters();
  CHECK_THROWS_WITH(gradsum::fit(newton, theta_newton, data, options),
                    "gradsum::Step::hessian: optimizer newton needs the Hessian, which gradient "
                    "accumulation (MicroBatches) does not provide; use accumulate = 1");
  options.accumulate = 0;
  CHECK_THROWS_WITH(gradsum::fit(newton, theta_newton, data, options),
                    "gradsum::fit: accumulate must be >= 1 mini-batch per update, got 0");
}

TEST_CASE_TEMPLATE_DEFINE("fit resumed from a checkpoint lands on the uninterrupted run", Space,
                          fit_resume) {
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  const std::string path = temp_path("fit.ckpt");
  gradsum::FitOptions options;
  options.batch = 50;
  options.seed = 4;
  options.epochs = 4;
  auto straight = make<Space>(gradsum::Adam{0.02});
  auto theta_straight = straight.make_parameters();
  gradsum::fit(straight, theta_straight, data, options);

  auto first = make<Space>(gradsum::Adam{0.02});
  auto theta_first = first.make_parameters();
  gradsum::Checkpointer<decltype(first), decltype(theta_first)> checkpoints(path, 1, first,
                                                                             theta_first);
  options.epochs = 2;
  gradsum::fit(first, theta_first, data, options, checkpoints);
  CHECK(checkpoints.saves() == 2);  // after epochs 1 and 2; the end adds none

  auto second = make<Space>(gradsum::Adam{0.02});
  auto theta_second = second.make_parameters();
  options.start = gradsum::load_checkpoint(path, second, theta_second);
  CHECK(options.start.epoch == 2);
  options.epochs = 4;
  // Another seed would draw other mini-batches from epoch 2 on: refused
  // before any step, naming both seeds (and the file, when given).
  options.seed = 5;
  CHECK_THROWS_WITH_AS(
      gradsum::fit(second, theta_second, data, options),
      "gradsum::fit: the checkpoint in options.start (step 12, epoch 2) was written with seed "
      "4, but options.seed is 5; another seed draws other mini-batches, so the run would not "
      "continue the checkpoint's trajectory: resume with seed = 4",
      gradsum::Error);
  options.start_file = path;
  const std::string named =
      "gradsum::fit: the checkpoint '" + path + "' (step 12, epoch 2) was written with seed 4";
  CHECK_THROWS_WITH_AS(gradsum::fit(second, theta_second, data, options),
                       doctest::Contains(named.c_str()), gradsum::Error);
  CHECK(second.aggregation().calls() == 0);  // nothing ran
  options.seed = 4;
  const auto result = gradsum::fit(second, theta_second, data, options);
  CHECK(result.position.epoch == 4);
  CHECK(result.position.step == 4 * 6);
  CHECK(same_bits(to_host(theta_second), to_host(theta_straight)));
  std::remove(path.c_str());
}
TEST_CASE_TEMPLATE_APPLY(fit_resume, Spaces);

TEST_CASE("a mid-epoch checkpoint resumes with its own batch size; one at an epoch's end with any") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  const std::string path = temp_path("batch.ckpt");
  gradsum::FitOptions options;
  options.batch = 50;  // 6 mini-batches an epoch
  options.seed = 4;
  options.epochs = 2;
  options.stopping.max_steps = 4;  // stops after mini-batch 4 of epoch 1
  auto resume = [&](std::int64_t batch, std::int64_t max_steps) {
    auto step = make<Space>(gradsum::Adam{0.02});
    auto theta = step.make_parameters();
    gradsum::CheckpointData saved;
    gradsum::FitOptions again = options;
    again.start = gradsum::load_checkpoint(path, step, theta, &saved);
    again.loop = saved.loop;
    again.start_file = path;
    again.batch = batch;
    again.stopping.max_steps = max_steps;
    return gradsum::fit(step, theta, data, again);
  };
  {
    auto step = make<Space>(gradsum::Adam{0.02});
    auto theta = step.make_parameters();
    gradsum::Checkpointer<decltype(step), decltype(theta)> checkpoints(path, 0, step, theta);
    gradsum::fit(step, theta, data, options, checkpoints);
  }
  // Its position counts mini-batches of 50: with another size it would
  // skip or repeat rows (and past the epoch's end, train nothing at all).
  CHECK_THROWS_WITH_AS(resume(25, 0),
                       doctest::Contains("stopped after mini-batch 4 of epoch 1 of a run with "
                                         "batch size 50, but this run has batch size 25"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(resume(100, 0),
                       doctest::Contains("stopped after mini-batch 4 of epoch 1, but this run's "
                                         "epochs have 3 mini-batches of 100 samples"),
                       gradsum::Error);
  CHECK(resume(50, 0).position.step == 2 * 6);

  options.epochs = 1;
  options.stopping.max_steps = 0;
  {
    auto step = make<Space>(gradsum::Adam{0.02});
    auto theta = step.make_parameters();
    gradsum::Checkpointer<decltype(step), decltype(theta)> checkpoints(path, 1, step, theta);
    gradsum::fit(step, theta, data, options, checkpoints);
  }
  options.epochs = 2;
  const auto result = resume(100, 0);  // epoch 2 in 3 mini-batches of 100
  CHECK(result.position.epoch == 2);
  CHECK(result.position.step == 6 + 3);
  std::remove(path.c_str());
}

TEST_CASE("progress prints one plain line per epoch when the output is not a terminal") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  auto step = make<Space>(gradsum::SGD{0.05});
  auto theta = step.make_parameters();
  std::FILE* out = std::tmpfile();
  REQUIRE(out != nullptr);
  REQUIRE(::isatty(::fileno(out)) == 0);
  gradsum::Progress progress(gradsum::ProgressMode::automatic, out);
  gradsum::FitOptions options;
  options.epochs = 3;
  options.batch = 128;
  const auto result = gradsum::fit(step, theta, data, options, progress);
  std::rewind(out);
  std::string text;
  char buffer[512];
  while (std::fgets(buffer, sizeof buffer, out)) text += buffer;
  std::fclose(out);
  CHECK(text.find('\r') == std::string::npos);
  std::istringstream lines(text);
  std::string line, last_line;
  int count = 0;
  while (std::getline(lines, line)) {
    last_line = line;
    ++count;
    INFO(line);
    CHECK(line.rfind("epoch " + std::to_string(count) + "/3 step " + std::to_string(2 * count) +
                         " loss=",
                     0) == 0);
    CHECK(line.find(" grad_norm=") != std::string::npos);
    CHECK(line.find(" steps/s=") != std::string::npos);
    CHECK(line.find(" eta=") != std::string::npos);
  }
  CHECK(count == 3);
  char last[64];
  std::snprintf(last, sizeof last, "loss=%.6g ", result.epoch_result.loss);
  CHECK(last_line.find(last) != std::string::npos);
}

TEST_CASE("the CSV log holds one row per update with the loss, gradient norm and rate") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  const std::string path = temp_path("log.csv");
  auto step = make<Space>(gradsum::Scheduled<gradsum::SGD>(gradsum::SGD{0.1},
                                                           gradsum::Schedule::exponential(0.5)));
  auto theta = step.make_parameters();
  {
    gradsum::CsvLog log(path);
    gradsum::FitOptions options;
    options.epochs = 2;  // full batch: one update per epoch
    gradsum::fit(step, theta, data, options, log);
  }
  // The first row: the objective and gradient norm at theta = 0, lr 0.1.
  auto reference = make<Space>(gradsum::SGD{});
  const auto zero = reference.make_parameters();
  const auto at_zero = reference.evaluate(zero, data);
  char first[160];
  // The moving average of one loss is that loss; nothing measured the noise.
  std::snprintf(first, sizeof first, "1,0,%.17g,%.17g,0.10000000000000001,%.17g,nan,nan\n",
                at_zero.loss, at_zero.gradient_norm, at_zero.loss);
  const std::string text = read_text(path);
  CHECK(text.rfind(std::string("step,epoch,loss,gradient_norm,learning_rate,loss_average,"
                               "worker_loss_spread,noise_scale\n") + first, 0) == 0);
  CHECK(text.find("\n2,1,") != std::string::npos);
  CHECK(text.find(",0.050000000000000003,") != std::string::npos);  // lr 0.1 * 0.5
  CHECK(std::count(text.begin(), text.end(), '\n') == 3);
  std::remove(path.c_str());
}

TEST_CASE("early stopping, best parameters and callbacks that stop training") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  gradsum::FitOptions options;
  options.epochs = 10;
  options.batch = 64;

  SUBCASE("no improvement for `patience` epochs stops") {
    auto step = make<Space>(gradsum::SGD{0.05});
    auto theta = step.make_parameters();
    gradsum::EarlyStopping early(2, 1e9);  // nothing after epoch 1 counts as better
    const auto result = gradsum::fit(step, theta, data, options, early);
    CHECK(result.position.epoch == 3);
    CHECK(result.stopped_by ==
          gradsum::detail::concat("early stopping: the training loss has not improved for 2 "
                                  "epochs (best ", early.best(), " after epoch 1)"));
  }
  SUBCASE("the best parameters are those after the best epoch") {
    // A learning rate far too large: the validation loss grows every
    // epoch, so the best parameters are those after epoch 1.
    const auto held_out = random_problem(50, 4, Kind::regression, 1, 79);
    const auto validation = DataOn<Space>::from_host(held_out.n, held_out.d, held_out.x, held_out.y);
    auto step = make<Space>(gradsum::SGD{3.0});
    auto theta = step.make_parameters();
    gradsum::BestParameters<decltype(theta)> best(theta);
    options.epochs = 4;
    gradsum::fit(step, theta, data, &validation, options, best);
    CHECK(best.best_epoch() == 1);

    auto one = make<Space>(gradsum::SGD{3.0});
    auto theta_one = one.make_parameters();
    options.epochs = 1;
    gradsum::fit(one, theta_one, data, options);
    auto restored = step.make_parameters();
    best.restore(restored);
    CHECK(same_bits(to_host(restored), to_host(theta_one)));
    CHECK(best.best_loss() == one.evaluate(theta_one, validation).loss);
  }
  SUBCASE("a callback ends training after its update") {
    auto step = make<Space>(gradsum::SGD{0.05});
    auto theta = step.make_parameters();
    StopAt stop(6);
    const auto result = gradsum::fit(step, theta, data, options, stop);
    CHECK(result.position.step == 6);
    CHECK(result.position.epoch == 1);
    CHECK(result.position.batch == 2);
    CHECK(result.stopped_by == "asked to stop");
  }
  SUBCASE("a stopping rule ends training") {
    auto step = make<Space>(gradsum::SGD{0.05});
    auto theta = step.make_parameters();
    options.stopping.max_steps = 5;
    const auto result = gradsum::fit(step, theta, data, options);
    CHECK(result.position.step == 5);
    CHECK(result.reason == gradsum::StopReason::max_steps);
    std::ostringstream printed;  // the words the user guide quotes
    printed << "stopped: " << result.reason;
    CHECK(printed.str() == "stopped: maximum number of steps reached");
  }
}

TEST_CASE("every stop reason prints in words, by operator<< and to_string") {
  using gradsum::StopReason;
  const std::pair<StopReason, const char*> expected[] = {
      {StopReason::none, "not stopped"},
      {StopReason::max_steps, "maximum number of steps reached"},
      {StopReason::gradient_norm, "gradient norm below tolerance (critical point)"},
      {StopReason::loss_change, "relative change of the objective below tolerance"}};
  for (const auto& e : expected) {
    std::ostringstream out;
    out << e.first;
    CHECK(out.str() == e.second);
    CHECK(gradsum::to_string(e.first) == e.second);
  }
}

TEST_CASE("early stopping and the best parameters resume where the uninterrupted run stands") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  // A learning rate far too large: the validation loss grows after epoch 1,
  // so the uninterrupted run keeps epoch 1's parameters and stops after
  // epoch 3 (patience 2). A resumed run that forgot the best loss and the
  // epochs waited would take epoch 3 as its best and stop after epoch 5.
  const auto held_out = random_problem(50, 4, Kind::regression, 1, 79);
  const auto validation = DataOn<Space>::from_host(held_out.n, held_out.d, held_out.x, held_out.y);
  const std::string path = temp_path("early.ckpt");
  gradsum::FitOptions options;
  options.batch = 64;
  options.epochs = 10;

  auto straight = make<Space>(gradsum::SGD{3.0});
  auto theta_straight = straight.make_parameters();
  gradsum::EarlyStopping early_straight(2);
  gradsum::BestParameters<decltype(theta_straight)> best_straight(theta_straight);
  const auto expected = gradsum::fit(straight, theta_straight, data, &validation, options,
                                     early_straight, best_straight);
  REQUIRE(expected.position.epoch == 3);
  REQUIRE(best_straight.best_epoch() == 1);

  // Two epochs, checkpointed after each: the checkpoint holds one epoch waited.
  auto first = make<Space>(gradsum::SGD{3.0});
  auto theta_first = first.make_parameters();
  gradsum::EarlyStopping early_first(2);
  gradsum::BestParameters<decltype(theta_first)> best_first(theta_first);
  gradsum::Checkpointer<decltype(first), decltype(theta_first)> checkpoints(path, 1, first,
                                                                             theta_first);
  options.epochs = 2;
  gradsum::fit(first, theta_first, data, &validation, options, early_first, best_first,
               checkpoints);

  auto resume = [&](auto& step, auto& theta, auto&... callbacks) {
    gradsum::CheckpointData saved;
    gradsum::FitOptions again = options;
    again.epochs = 10;
    again.start = gradsum::load_checkpoint(path, step, theta, &saved);
    again.loop = saved.loop;
    return gradsum::fit(step, theta, data, &validation, again, callbacks...);
  };
  SUBCASE("the resumed run stops after the same epoch with the same best parameters") {
    auto second = make<Space>(gradsum::SGD{3.0});
    auto theta_second = second.make_parameters();
    gradsum::EarlyStopping early(2);
    gradsum::BestParameters<decltype(theta_second)> best(theta_second);
    gradsum::Checkpointer<decltype(second), decltype(theta_second)> end(path, 0, second,
                                                                        theta_second);
    const auto result = resume(second, theta_second, early, best, end);
    CHECK(result.position.epoch == 3);
    CHECK(result.stopped_by == expected.stopped_by);
    CHECK(same_bits(to_host(theta_second), to_host(theta_straight)));
    CHECK(best.best_epoch() == 1);
    auto restored = second.make_parameters(), expected_best = second.make_parameters();
    best.restore(restored);
    best_straight.restore(expected_best);
    CHECK(same_bits(to_host(restored), to_host(expected_best)));

    // Resuming the stopped run's final checkpoint does nothing more, as
    // the uninterrupted run did nothing more.
    auto third = make<Space>(gradsum::SGD{3.0});
    auto theta_third = third.make_parameters();
    gradsum::EarlyStopping early_third(2);
    gradsum::BestParameters<decltype(theta_third)> best_third(theta_third);
    const auto none = resume(third, theta_third, early_third, best_third);
    CHECK(none.position.step == result.position.step);
    CHECK(none.stopped_by == "training had already stopped when the checkpoint was written");
    CHECK(same_bits(to_host(theta_third), to_host(theta_straight)));
  }
  SUBCASE("resuming with other callbacks than the checkpoint's is refused") {
    auto second = make<Space>(gradsum::SGD{3.0});
    auto theta_second = second.make_parameters();
    CHECK_THROWS_WITH(resume(second, theta_second),
                      doctest::Contains("this run's stopping rules and callbacks read 12: resume "
                                        "with the callbacks the checkpoint was written with"));
    gradsum::BestParameters<decltype(theta_second)> best(theta_second);
    gradsum::EarlyStopping early(2);
    CHECK_THROWS_WITH(resume(second, theta_second, best, early),
                      doctest::Contains("no best-parameters state at value 12"));
  }
  std::remove(path.c_str());
}

TEST_CASE("a resumed run reaching max_steps continues the uninterrupted run, and stops at once "
          "when it was already reached") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const auto data = DataOn<Space>::from_host(regression.n, regression.d, regression.x, regression.y);
  const std::string path = temp_path("steps.ckpt");
  gradsum::FitOptions options;
  options.batch = 50;
  options.epochs = 10;
  options.stopping.max_steps = 8;
  auto straight = make<Space>(gradsum::Adam{0.02});
  auto theta_straight = straight.make_parameters();
  gradsum::fit(straight, theta_straight, data, options);

  auto first = make<Space>(gradsum::Adam{0.02});
  auto theta_first = first.make_parameters();
  gradsum::Checkpointer<decltype(first), decltype(theta_first)> end(path, 0, first, theta_first);
  options.stopping.max_steps = 5;  // mid-epoch: 6 batches per epoch
  gradsum::fit(first, theta_first, data, options, end);

  for (const std::int64_t max_steps : {5, 8}) {
    CAPTURE(max_steps);
    auto second = make<Space>(gradsum::Adam{0.02});
    auto theta_second = second.make_parameters();
    gradsum::CheckpointData saved;
    options.start = gradsum::load_checkpoint(path, second, theta_second, &saved);
    options.loop = saved.loop;
    options.stopping.max_steps = max_steps;
    const auto result = gradsum::fit(second, theta_second, data, options);
    CHECK(result.position.step == max_steps);
    CHECK(result.reason == gradsum::StopReason::max_steps);
    CHECK(same_bits(to_host(theta_second), to_host(max_steps == 8 ? theta_straight : theta_first)));
  }
  std::remove(path.c_str());
}

TEST_CASE("the stopping rules' state survives a save and restore") {
  gradsum::StoppingRules rules;
  rules.loss_tol = 1e-6;
  gradsum::Stopper before(rules);
  gradsum::StepResult result;
  result.loss = 2.0;
  result.gradient_norm = 1.0;
  CHECK(before.check(1, result) == gradsum::StopReason::none);  // nothing to compare with yet
  std::vector<double> state;
  before.save_state(state);
  gradsum::Stopper after(rules), fresh(rules);
  std::size_t at = 0;
  after.restore_state(state, at);
  CHECK(at == state.size());
  result.loss = 2.0 * (1 + 1e-7);  // a relative change of 1e-7 <= 1e-6
  CHECK(after.check(2, result) == gradsum::StopReason::loss_change);
  CHECK(fresh.check(2, result) == gradsum::StopReason::none);
  state[0] = 7;
  at = 0;
  CHECK_THROWS_WITH(after.restore_state(state, at),
                    "gradsum::fit: the checkpoint's loop state does not begin with the stopping "
                    "rules' state (value 0 of 3)");
}
