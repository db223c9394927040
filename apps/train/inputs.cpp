// SPDX-License-Identifier: Apache-2.0
// gradsum-train's inputs: --data read, split and scaled alike on every rank.

#include "inputs.hpp"

#include "flags.hpp"
#include "models.hpp"

#include <functional>
#include <tuple>
#include <utility>

namespace gradsum_train {
namespace {

bool is_regression(const Options& o) {
  return o.model == "linear" || (o.model == "mlp" && o.loss == "squared");
}
bool is_binary(const Options& o) {
  return o.model == "logistic" || (o.model == "mlp" && o.loss == "logistic");
}

// The targets the loss accepts, checked as the file is read so that a bad
// one is named by file:line:column. A softmax head has as many classes as
// the labels say, up to max_outputs.
gradsum::TargetRule target_rule(const Options& o) {
  if (is_regression(o)) return {};
  if (is_binary(o))
    return {[](double y) { return gradsum::BinaryCrossEntropy::is_valid_target(y, 1); },
            "a target in [0, 1] for binary_cross_entropy"};
  return {[](double y) {
            return gradsum::SoftmaxCrossEntropy::is_valid_target(y, gradsum::max_outputs);
          },
          gradsum::concat("an integer class label in [0, ", gradsum::max_outputs,
                          ") for softmax_cross_entropy")};
}

// Class names stand for labels: a regression target, or the two labels of
// logistic regression, cannot be names of other counts.
void check_class_names(const Options& o, const std::vector<std::string>& names) {
  if (names.empty()) return;
  if (is_regression(o))
    gradsum::fail("--data: '", o.data, "' holds class names in its target column ('",
                  names[0], "' …), which a regression (--model ", o.model,
                  o.model == "mlp" ? " --loss squared" : "", ") cannot fit; use a classifier");
  if (is_binary(o) && names.size() != 2)
    gradsum::fail("--data: '", o.data, "' holds ", names.size(), " class names in its target "
                  "column; logistic regression takes 2 (use --model softmax for more)");
}

// --suspects: the training rows in the file's numbering. The splits keep
// rows in order but drop some; replaying them (the same row count and
// seeds) on a table holding each row's number says which rows remain.
std::vector<std::int64_t> training_file_rows(std::size_t rows, const Options& o) {
  gradsum::Table numbers;
  numbers.num_rows = rows;
  numbers.num_features = 1;
  for (std::size_t i = 0; i < rows; ++i) numbers.features.push_back(double(i + 1));
  numbers.targets.assign(rows, 0.0);
  if (o.test_fraction > 0)
    numbers = gradsum::train_test_split(numbers, o.test_fraction, o.seed).first;
  if (o.validation > 0)
    numbers = gradsum::train_test_split(numbers, o.validation, o.seed + 1).first;
  return std::vector<std::int64_t>(numbers.features.begin(), numbers.features.end());
}

// A resumed run scales with the checkpoint's scaler, so the model sees the
// data it was trained on; held-out rows are scaled by the training rows'
// statistics.
void scale(const Options& options, Inputs& inputs) {
  gradsum::StandardScaler& scaler = inputs.scaler;
  if (!options.resume.empty()) scaler = gradsum::read_checkpoint(options.resume).scaler;
  if (options.standardize && scaler.mean.empty())
    scaler = gradsum::StandardScaler::fit(inputs.train);
  if (scaler.mean.empty()) return;
  scaler.transform(inputs.train);
  if (inputs.test.num_rows > 0) scaler.transform(inputs.test);
  if (inputs.validation.num_rows > 0) scaler.transform(inputs.validation);
}

}  // namespace

gradsum::Table read_inputs(const Options& options, Inputs& inputs) {
  gradsum::Table whole;
  gradsum::CsvOptions csv;
  csv.target_column = options.target_column;
  csv.class_names = true;
  csv.target_rule = target_rule(options);
  csv.max_values = options.max_values;
  inputs.train = gradsum::read_csv(options.data, csv);
  inputs.class_names = inputs.train.class_names;
  if (options.suspects > 0) inputs.file_rows = training_file_rows(inputs.train.num_rows, options);
  check_class_names(options, inputs.class_names);
  if (options.duplicates) whole = inputs.train;  // --duplicates: the file's own rows
  // Seeded splits, the same on every rank: the test rows first, then the
  // validation rows out of what is left.
  if (options.test_fraction > 0) {
    auto [train, test] = gradsum::train_test_split(inputs.train, options.test_fraction,
                                                   options.seed);
    inputs.train = std::move(train);
    inputs.test = std::move(test);
  }
  if (options.validation > 0)
    std::tie(inputs.train, inputs.validation) =
        gradsum::train_test_split(inputs.train, options.validation, options.seed + 1);
  scale(options, inputs);
  return whole;
}

gradsum::Signature run_signature(const Options& o, const Inputs& in) {
  gradsum::Signature s = agreed_flags(o);
  const std::pair<std::string, const gradsum::Table*> tables[] = {
      {"training rows", &in.train}, {"validation rows", &in.validation}, {"test rows", &in.test}};
  for (const auto& [name, table] : tables) {
    s.add(name, std::int64_t(table->num_rows));
    s.add_hash(name + " (features)", table->features.data(), table->features.size());
    s.add_hash(name + " (targets)", table->targets.data(), table->targets.size());
  }
  s.add_hash("feature scaling (means)", in.scaler.mean.data(), in.scaler.mean.size());
  s.add_hash("feature scaling (scales)", in.scaler.scale.data(), in.scaler.scale.size());
  return s;
}

#if GRADSUM_ENABLE_MPI
// Every rank reads the file itself: ranks that found other class names
// (files that differ between nodes) would number the classes differently.
std::string class_names_disagree(const std::vector<std::string>& names, const std::string& data) {
  std::string joined;
  for (const auto& name : names) joined += name + '\n';  // names hold no line break
  const unsigned long long h = std::hash<std::string>{}(joined);
  unsigned long long mine[2] = {h, ~h}, most[2] = {0, 0};
  gradsum::mpi::check(MPI_Allreduce(mine, most, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD),
                      "MPI_Allreduce");
  if (most[0] == h && most[1] == ~h) return {};
  std::string shown;  // the first 10 names
  for (std::size_t k = 0; k < names.size() && k < 10; ++k) shown += (k ? ", " : "") + names[k];
  if (names.size() > 10) shown += ", …";
  return gradsum::concat("--data: the ranks read different class names from '", data,
                         "' (this rank: ", names.empty() ? "none, the targets are numbers" : shown,
                         "); every rank must read the same file");
}
#else
std::string class_names_disagree(const std::vector<std::string>&, const std::string&) { return {}; }
#endif

// With class names, C is their number, even if the last class has no rows
// left after the held-out splits.
int count_classes(const gradsum::Table& table, const std::vector<std::string>& names) {
  double classes = double(names.size());
  for (double y : table.targets) classes = y + 1 > classes ? y + 1 : classes;
  if (!names.empty() && !(classes >= 2 && classes <= gradsum::max_outputs))
    gradsum::fail_agreed(table.source, ": softmax needs 2 to ", gradsum::max_outputs,
                         " classes; the target column names ", names.size());
  if (!(classes >= 2 && classes <= gradsum::max_outputs))
    gradsum::fail_agreed(table.source, ": softmax needs integer class labels 0 … C-1 with ",
                         "2 <= C <= ", gradsum::max_outputs, "; the largest label is ",
                         classes - 1);
  return int(classes);
}


// --text's characters, split for training and validation.
TextInputs read_text_inputs(const Options& o) {
  const std::string text = gradsum::read_text_file(o.text, "--text");
  TextInputs in;
  in.vocabulary = gradsum::CharVocabulary::of_text(text, o.text);
  const auto split = gradsum::split_text(text, o.validation);
  in.train = in.vocabulary.encode(split.train, o.text);
  in.validation = in.vocabulary.encode(split.validation, o.text);
  return in;
}

}  // namespace gradsum_train
