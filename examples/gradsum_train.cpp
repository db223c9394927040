// SPDX-License-Identifier: Apache-2.0
// gradsum-train: trains a linear, logistic or softmax model on a CSV file.
// Exit status: 0 on success, 1 on an error in the data or the run, 2 on a
// bad command line.

#include <gradsum/gradsum.hpp>

#include "train_options.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

namespace {

using gradsum_train::Options;

void write_params(const std::string& path, const std::vector<double>& theta) {
  // Written beside the target and renamed over it: an error never leaves a
  // half-written file in place of a good one.
  const std::string partial = path + ".partial";
  {
    std::ofstream out(partial);
    if (!out) gradsum::detail::fail("--save-params: cannot write '", partial, "'");
    out.precision(17);
    for (double v : theta) out << v << '\n';
    out.flush();
    if (!out) gradsum::detail::fail("--save-params: writing '", partial, "' failed");
  }
  if (std::rename(partial.c_str(), path.c_str()) != 0) {
    std::remove(partial.c_str());
    gradsum::detail::fail("--save-params: cannot rename '", partial, "' to '", path, "'");
  }
}

template <class View>
std::vector<double> host_values(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

template <class Space, class Model, class Loss>
int train(const Options& o, const gradsum::Table& table, const Model& model,
          const Loss& loss) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const Data data = Data::from_host(std::int64_t(table.num_rows),
                                    int(table.num_features), table.features,
                                    table.targets);
  const Space space;
  auto step = gradsum::make_step<double>(space, model, loss, gradsum::SGD{o.lr},
                                         gradsum::Objective{o.l2, true});
  auto theta = step.make_parameters();

  if (o.print_gradient) {
    const auto r = step.evaluate(theta, data);
    std::printf("%.17g\n", r.loss);
    for (double g : host_values(step.gradient())) std::printf("%.17g\n", g);
    return 0;
  }

  std::printf("gradsum-train: %s model, %s loss, %zu samples x %zu features, "
              "%d parameters, space %s, %s\n",
              model.name(), loss.name(), table.num_rows, table.num_features,
              step.num_parameters(), gradsum::space_name<Space>().c_str(),
              o.batch == 0 ? "full batch"
                           : ("batch " + std::to_string(o.batch)).c_str());
  gradsum::MiniBatchSampler<typename Space::memory_space> sampler(
      data.num_samples(), o.batch, o.seed);
  gradsum::StepResult r;
  for (int epoch = 1; epoch <= o.epochs; ++epoch) {
    sampler.shuffle(epoch - 1);
    for (std::int64_t b = 0; b < sampler.num_batches(); ++b)
      step(theta, data, sampler.batch(b));
    r = step.evaluate(theta, data);  // the whole training objective
    std::printf("epoch %d loss=%.6g grad_norm=%.6g\n", epoch, r.loss, r.gradient_norm);
    std::fflush(stdout);
  }
  r = step.evaluate(theta, data);
  std::printf("final loss=%.10g grad_norm=%.10g", r.loss, r.gradient_norm);
  if constexpr (gradsum::is_classifier_loss_v<Loss>) {
    const auto correct = gradsum::count_correct(space, model, loss, theta, data);
    std::printf(" accuracy=%.6g", double(correct) / double(data.num_samples()));
  }
  std::printf("\n");
  if (!o.save_params.empty()) write_params(o.save_params, host_values(theta));
  return 0;
}

template <class Space>
int run_on(const Options& o, const gradsum::Table& table) {
  const int d = int(table.num_features);
  if (o.model == "linear") return train<Space>(o, table, gradsum::Linear(d), gradsum::SquaredError{});
  if (o.model == "logistic")
    return train<Space>(o, table, gradsum::Linear(d), gradsum::BinaryCrossEntropy{});
  double classes = 0;
  for (double y : table.targets) classes = y + 1 > classes ? y + 1 : classes;
  if (!(classes >= 2 && classes <= gradsum::max_outputs))
    gradsum::detail::fail(table.source, ": softmax needs integer class labels 0 … C-1 with ",
                          "2 <= C <= ", gradsum::max_outputs, "; the largest label is ",
                          classes - 1);
  return train<Space>(o, table, gradsum::Softmax(d, int(classes)),
                      gradsum::SoftmaxCrossEntropy{});
}

template <class... Spaces>
int dispatch(const Options& o, const gradsum::Table& table, std::tuple<Spaces...>*) {
  const std::string wanted =
      o.space.empty() ? gradsum::space_name<Kokkos::DefaultExecutionSpace>() : o.space;
  int status = -1;
  ((status < 0 && gradsum::space_name<Spaces>() == wanted ? status = run_on<Spaces>(o, table)
                                                          : 0),
   ...);
  if (status < 0)
    gradsum::detail::fail("--space: '", wanted, "' is not enabled in this build; choose one of ",
                          gradsum::enabled_space_names());
  return status;
}

}  // namespace

int main(int argc, char* argv[]) {
  Options options;
  try {
    options = gradsum_train::parse(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-train: error: %s\n", e.what());
    return 2;
  }
  if (options.help) {
    std::fputs(gradsum_train::usage(), stdout);
    return 0;
  }
  Kokkos::ScopeGuard kokkos(argc, argv);
  try {
    gradsum::CsvOptions csv;
    csv.target_column = options.target_column;
    gradsum::Table table = gradsum::read_csv(options.data, csv);
    if (options.standardize) gradsum::StandardScaler::fit(table).transform(table);
    return dispatch(options, table, static_cast<gradsum::ExecutionSpaces*>(nullptr));
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-train: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gradsum-train: error: %s\n", e.what());
    return 1;
  }
}
