// SPDX-License-Identifier: Apache-2.0
// datasets: trains on the real data sets that ship with Debian's
// python3-sklearn and prints how well the model does on held-out rows.
//
//   datasets diabetes        linear regression (442 patients, 10 features)
//   datasets breast_cancer   logistic regression (569 tumours, 30 features)
//   datasets iris            softmax regression (150 flowers, 3 classes)
//   datasets wine            softmax regression (178 wines, 3 classes)
//   datasets digits          an MLP, 64-32(tanh)-10 (1,797 images of 8 x 8 pixels)
//
// Every step is the library's: reading (diabetes from two gzip files),
// a seeded 80/20 train/test split, standardization whose statistics come
// from every rank's share of the training rows (then applied to the test
// rows), fit() with Adam and global sampling, and evaluation. Under
// `mpiexec -n N` every rank reads the files and takes its part of every
// mini-batch, so the printed results are those of one process.

#include <gradsum/gradsum.hpp>

#include "world_aggregation.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace {

using gradsum_examples::Aggregation;
using gradsum_examples::make_aggregation;

using Space = Kokkos::DefaultExecutionSpace;
using Data = gradsum::Dataset<double, Space::memory_space>;

const std::string folder = "/usr/lib/python3/dist-packages/sklearn/datasets/data/";

// diabetes: ten space-separated feature columns in one file, the target
// (disease progression after one year) in another.
gradsum::Table read_diabetes() {
  gradsum::Table table;
  table.source = folder + "diabetes_data_raw.csv.gz";
  std::istringstream x(gradsum::read_text_file(table.source));
  std::istringstream y(gradsum::read_text_file(folder + "diabetes_target.csv.gz"));
  table.num_features = 10;
  for (std::string line; std::getline(x, line);) {
    std::istringstream fields(line);
    double v = 0;
    while (fields >> v) table.features.push_back(v);
  }
  for (double v = 0; y >> v;) table.targets.push_back(v);
  table.num_rows = table.targets.size();
  if (table.features.size() != table.num_rows * 10)
    gradsum::fail(table.source, ": expected 10 features for each of the ",
                  table.num_rows, " targets, read ", table.features.size(), " values");
  return table;
}

Data to_data(const gradsum::Table& t) {
  return Data::from_host(std::int64_t(t.num_rows), int(t.num_features), t.features, t.targets);
}

template <class Model, class Loss>
void run(const std::string& name, const gradsum::Table& table, const Model& model,
         const Loss& loss, gradsum::FitOptions options, double lr) {
  Aggregation aggregation = make_aggregation();
  const int rank = aggregation.rank(), ranks = aggregation.size();
  auto [train, test] = gradsum::train_test_split(table, 0.2, 42);
  // Each rank contributes its share of the training rows to the scaling.
  const auto mine = gradsum::partition(std::int64_t(train.num_rows), ranks, rank);
  gradsum::Table share;
  share.num_rows = std::size_t(mine.size());
  share.num_features = train.num_features;
  share.features.assign(train.features.begin() + mine.begin * std::int64_t(train.num_features),
                        train.features.begin() + mine.end * std::int64_t(train.num_features));
  const auto scaler = gradsum::fit_global_scaler(share, aggregation);
  scaler.transform(train);
  scaler.transform(test);
  const Data train_data = to_data(train), test_data = to_data(test);

  auto step = gradsum::make_step<double>(Space(), model, loss, gradsum::Adam{lr},
                                         gradsum::Objective{}, gradsum::Analytic{},
                                         gradsum::Sum{}, aggregation);
  auto theta = step.make_parameters();
  if constexpr (std::is_same<Model, gradsum::MLP>::value)  // linear models start at zero
    gradsum::initialize(model, gradsum::Initializer::glorot_uniform().with_seed(7), theta);
  const auto result = gradsum::fit(step, theta, train_data, options);
  const auto tested =
      step.evaluate(theta, test_data, gradsum::partition(test_data.num_samples(), ranks, rank));
  if (rank != 0) return;
  std::printf("%s: %s, %zu training and %zu test rows, %lld Adam steps on %d rank%s\n",
              name.c_str(), gradsum::concat(model.name(), " model, ", loss.name(),
                                            " loss").c_str(),
              train.num_rows, test.num_rows, static_cast<long long>(result.position.step), ranks,
              ranks == 1 ? "" : "s");
  if constexpr (gradsum::is_classifier_loss_v<Loss>) {
    const auto correct = gradsum::count_correct(Space(), model, loss, theta, test_data);
    std::printf("  training loss %.4f, test loss %.4f, test accuracy %.4f (%lld of %zu)\n",
                result.epoch_result.loss, tested.loss, double(correct) / double(test.num_rows),
                static_cast<long long>(correct), test.num_rows);
  } else {
    // The objective is half the mean squared error.
    const auto scores = gradsum::regression_scores(Space(), model, theta, test_data);
    std::printf("  training RMSE %.2f, test RMSE %.2f, test R^2 %.4f\n",
                std::sqrt(2 * result.epoch_result.loss), scores.rmse, scores.r2);
  }
}

int classes_of(const gradsum::Table& t) {
  double most = 0;
  for (double y : t.targets) most = y > most ? y : most;
  return int(most) + 1;
}

}  // namespace

int main(int argc, char* argv[]) {
  gradsum::Environment environment(argc, argv);
  const std::string name = argc > 1 ? argv[1] : "";
  try {
    gradsum::FitOptions options;
    options.seed = 1;
    if (name == "diabetes") {
      options.epochs = 300;
      options.batch = 32;
      run(name, read_diabetes(), gradsum::Linear(10), gradsum::SquaredError{}, options, 0.05);
    } else if (name == "breast_cancer") {
      options.epochs = 30;
      options.batch = 32;
      const auto table = gradsum::read_csv(folder + "breast_cancer.csv");
      run(name, table, gradsum::Linear(int(table.num_features)), gradsum::BinaryCrossEntropy{},
          options, 0.01);
    } else if (name == "iris" || name == "wine") {
      options.epochs = 100;
      options.batch = 16;
      const auto table = gradsum::read_csv(folder + (name == "iris" ? "iris.csv" : "wine_data.csv"));
      run(name, table, gradsum::Softmax(int(table.num_features), classes_of(table)),
          gradsum::SoftmaxCrossEntropy{}, options, 0.01);
    } else if (name == "digits") {
      options.epochs = 15;
      options.batch = 64;
      const auto table = gradsum::read_csv(folder + "digits.csv.gz");
      run(name, table, gradsum::MLP(64, {32}, 10, gradsum::Activation::tanh),
          gradsum::SoftmaxCrossEntropy{}, options, 0.01);
    } else {
      if (environment.rank() == 0)
        std::fprintf(stderr, "usage: datasets diabetes|breast_cancer|iris|wine|digits\n");
      return 2;
    }
  } catch (const std::exception& e) {
    if (environment.rank() == 0) std::fprintf(stderr, "datasets: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
