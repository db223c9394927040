// SPDX-License-Identifier: Apache-2.0
// gradsum-predict: applies a model saved by gradsum-train (--checkpoint,
// --save-model) or gradsum::save_model to new data, with the feature
// scaling saved alongside it; or, with --generate, writes text sampled
// from a GPT trained on text.
// Exit status: 0 on success, 1 on an error in the files, 2 on a bad
// command line.

#include "../common/flag_table.hpp"

#include <gradsum/gradsum.hpp>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using gradsum_apps::Value;

struct Options {
  std::string params, data, output = "-";
  std::int64_t max_values = gradsum::default_max_values;
  std::int64_t generate = -1;  // --generate N: characters to sample; -1: predict rows
  std::string prompt = "\n";
  double temperature = 1.0;
  std::uint64_t seed = 0;
  std::string sampling_flag;  // the last of --prompt, --temperature, --seed given
  bool help = false;
};

// gradsum-predict's flags, one table (common/flag_table.hpp).
const std::vector<gradsum_apps::Flag<Options>> flags = {
    {"--params", "FILE", "", [](Options& o, const Value& v) { o.params = v.text; }},
    {"--data", "FILE", "", [](Options& o, const Value& v) { o.data = v.text; }},
    {"--output", "FILE",
     "write the lines to FILE instead (default '-', standard\n"
     "output); a regular file is replaced only once complete",
     [](Options& o, const Value& v) { o.output = v.text; }},
    {"--max-values", "N",
     "refuse a data file of more than N feature values\n"
     "(default 2^28, 2 GiB as doubles)",
     [](Options& o, const Value& v) {
       try {
         o.max_values = v.integer(1, INT64_MAX);
       } catch (const gradsum::Error&) {
         gradsum::fail(v.flag, ": expected a positive integer, got '", v.text, "'");
       }
     }},
    {"--generate", "N",
     "a GPT (gradsum-train --text): write the prompt and N\n"
     "characters sampled after it, instead of --data",
     [](Options& o, const Value& v) { o.generate = v.integer(0, 100000000); }},
    {"--prompt", "TEXT", "the text to continue (default: a newline)",
     [](Options& o, const Value& v) { o.prompt = v.text, o.sampling_flag = v.flag; }},
    {"--temperature", "X",
     "divides the logits before sampling (default 1); 0\n"
     "takes the most likely character",
     [](Options& o, const Value& v) {
       o.temperature = v.non_negative(), o.sampling_flag = v.flag;
     }},
    {"--seed", "S", "seed of the draws: the same text for the same seed\n(default 0)",
     [](Options& o, const Value& v) {
       o.seed = std::uint64_t(v.integer(0, INT64_MAX)), o.sampling_flag = v.flag;
     }},
    {"--kokkos-", "",
     "passed to Kokkos; threads: all of this process's cores\n"
     "unless OMP_NUM_THREADS, KOKKOS_NUM_THREADS or\n"
     "--kokkos-threads=N (or --kokkos-num-threads=N) says",
     [](Options&, const Value&) {}},
    {"--help", "", "", [](Options& o, const Value&) { o.help = true; }},
    {"-h", "", "", [](Options& o, const Value&) { o.help = true; }},
};

std::string usage() {
  return "usage: gradsum-predict --params FILE --data FILE [--output FILE]\n"
         "       gradsum-predict --params FILE --generate N [--prompt TEXT] [--temperature X]\n"
         "                       [--seed S] [--output FILE]\n"
         "\n"
         "Applies the model of a gradsum checkpoint (gradsum-train --checkpoint FILE)\n"
         "or of a safetensors model file (gradsum-train --save-model FILE,\n"
         "gradsum::save_model) to every row of a CSV file, after the feature scaling\n"
         "stored with it (--standardize). The file holds the model's features,\n"
         "optionally followed by the target (in its last column); an optional header\n"
         "row is skipped. Prints one line per row: the value (linear regression, or\n"
         "an MLP trained with the squared error), or the class and its probability\n"
         "(logistic and softmax regression, and MLP classifiers). A model trained on\n"
         "class names prints the names, and the target column may hold them. With\n"
         "targets, a last line on standard error gives the mean squared error or the\n"
         "accuracy.\n"
         "\n"
         "With --generate N, the model is a GPT trained on text (gradsum-train --text):\n"
         "it writes the prompt and N more characters, each drawn from the model's\n"
         "distribution of the next character given the last context characters.\n"
         "\n" +
         gradsum_apps::describe_flags(flags, 18);
}

Options parse(int argc, char** argv) {
  Options o;
  gradsum_apps::parse_flags(flags, std::vector<std::string>(argv + 1, argv + argc), o,
                            {"", "--help", true});
  if (o.help) return o;
  if (o.params.empty()) gradsum::fail("--params FILE is required (see --help)");
  if (o.generate >= 0 && !o.data.empty())
    gradsum::fail("--generate: writes text from a prompt and does not read --data; give one");
  if (o.generate < 0 && o.data.empty())
    gradsum::fail("--data FILE is required (or --generate N for a GPT; see --help)");
  if (o.generate < 0 && !o.sampling_flag.empty())
    gradsum::fail(o.sampling_flag, ": applies to --generate N");
  if (o.prompt.empty()) gradsum::fail("--prompt: empty; give at least one character");
  if (o.output.empty()) gradsum::fail("--output: empty file name");
  return o;
}

// The table's rows as the model's features: either all columns but the
// last are features (the last is the target), or every column is.
bool split_targets(gradsum::Table& table, std::size_t d, const std::string& params) {
  if (table.num_features == d) return true;
  if (table.num_features + 1 != d)
    gradsum::fail(table.source, ": rows have ", table.num_features + 1,
                  " columns, but the model in '", params, "' takes ", d,
                  " features (expected ", d, " columns, or ", d + 1,
                  " with the target last)");
  std::vector<double> x;
  x.reserve(table.num_rows * d);
  for (std::size_t i = 0; i < table.num_rows; ++i) {
    for (std::size_t j = 0; j < table.num_features; ++j) x.push_back(table.feature(i, j));
    x.push_back(table.targets[i]);
  }
  table.features = std::move(x);
  table.num_features = d;
  table.targets.clear();
  return false;
}

// A classifier's targets must be its classes 0 … C-1: any other value would
// be scored as a wrong prediction, a silent error in the accuracy.
void check_targets(const gradsum::Table& table, const gradsum::CheckpointData& c,
                   const std::string& params) {
  const std::int64_t classes = c.loss == "softmax_cross_entropy"  ? c.num_outputs
                               : c.loss == "binary_cross_entropy" ? 2
                                                                  : 0;
  for (std::size_t i = 0; classes > 0 && i < table.num_rows; ++i) {
    const double y = table.targets[i];
    if (!(y >= 0 && y < double(classes) && y == std::floor(y)))
      gradsum::fail(table.source, ": data row ", i + 1, " (header not counted): target ", y,
                    " is no class of the model in '", params, "', whose classes are 0 … ",
                    classes - 1);
  }
}

// The sizes in a checkpoint come from a file: check them against the model
// it names before indexing anything with them (a forged or damaged file
// passes the checksum if it was written that way).
void check_sizes(const gradsum::CheckpointData& c, const std::string& params) {
  if (c.model != "linear" && c.model != "softmax") return;  // rejected below
  if (c.num_features < 1 || c.num_features > 2147483646 || c.num_outputs < 1 ||
      c.num_outputs > gradsum::max_outputs)
    gradsum::fail("'", params, "' declares ", c.num_features, " features and ",
                  c.num_outputs, " outputs; expected 1 to 2147483646 features and 1 to ",
                  gradsum::max_outputs, " outputs (the file is corrupted)");
  const std::int64_t outputs = c.model == "linear" ? 1 : c.num_outputs;
  const std::int64_t parameters = outputs * (c.num_features + 1);
  if (c.num_outputs != outputs || c.num_parameters != parameters)
    gradsum::fail("'", params, "' declares ", c.num_parameters, " parameters and ",
                  c.num_outputs, " outputs, but a ", c.model, " model of ",
                  c.num_features, " features has ", parameters, " and ", outputs,
                  " (the file is corrupted)");
}

// A model file's fields as a checkpoint's, for the code they share (its
// parameters are read once the model is built). Without a loss, one
// output is a value (regression), several are class logits.
gradsum::CheckpointData as_checkpoint(const gradsum::ModelFile& f) {
  gradsum::CheckpointData c;
  c.model = f.model;
  c.num_features = f.num_features;
  c.num_outputs = f.num_outputs;
  c.loss = !f.notes.loss.empty()   ? f.notes.loss
           : f.num_outputs == 1    ? "squared_error"
                                   : "softmax_cross_entropy";
  c.scaler = f.notes.scaler;
  c.class_names = f.notes.class_names;
  return c;
}

// The model's predictions for every row of the table, computed by
// gradsum::predict, predict_classes and predict_probabilities (a network
// beyond the per-sample limits goes layer by layer): the value
// (regression), or the class and the probability of that class.
struct Predictions {
  std::vector<double> values;
  std::vector<int> labels;
  std::vector<double> probabilities;
};

template <class Model>
Predictions predict_rows(const Model& model, const std::vector<double>& theta,
                         const gradsum::Table& table, bool regression) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  using Unmanaged = Kokkos::MemoryTraits<Kokkos::Unmanaged>;
  const Host host;
  const std::int64_t n = std::int64_t(table.num_rows);
  const int k = model.num_outputs();
  const Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace, Unmanaged> x(
      table.features.data(), n, model.num_features());
  const Kokkos::View<const double*, Kokkos::HostSpace, Unmanaged> w(theta.data(), theta.size());
  Predictions p;
  if (regression) {
    Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> z("gradsum-predict::outputs",
                                                                     n, k);
    gradsum::predict(host, model, w, x, z);
    for (std::int64_t i = 0; i < n; ++i) p.values.push_back(z(i, 0));
    return p;
  }
  Kokkos::View<int*, Kokkos::HostSpace> labels("gradsum-predict::classes", n);
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> probabilities(
      "gradsum-predict::probabilities", n, k);
  auto classify = [&](const auto& loss) {
    gradsum::predict_classes(host, model, loss, w, x, labels);
    gradsum::predict_probabilities(host, model, loss, w, x, probabilities);
  };
  if (k == 1) classify(gradsum::BinaryCrossEntropy{});  // logistic: P(y = 1) = sigmoid(z)
  else classify(gradsum::SoftmaxCrossEntropy{});
  for (std::int64_t i = 0; i < n; ++i) {
    const int label = labels(i);
    p.labels.push_back(label);
    p.probabilities.push_back(k == 1 ? (label == 1 ? probabilities(i, 0) : 1 - probabilities(i, 0))
                                     : probabilities(i, label));
  }
  return p;
}

// A checkpoint's class names must name exactly its classes: the model's
// outputs (softmax) or the two labels of logistic regression.
void check_class_names(const gradsum::CheckpointData& c, const std::string& params) {
  if (c.class_names.empty()) return;
  const std::int64_t classes = c.loss == "softmax_cross_entropy" ? c.num_outputs
                               : c.loss == "binary_cross_entropy" ? 2
                                                                   : 0;
  if (std::int64_t(c.class_names.size()) != classes)
    gradsum::fail("'", params, "' holds ", c.class_names.size(), " class names for a model with ",
                  classes, " classes (loss ", c.loss, "); the file is corrupted");
}

// Targets read as names, numbered as the model numbers them; a name the
// model was not trained on is an error naming it.
void number_as_model(gradsum::Table& table, const std::vector<std::string>& model_names,
                     const std::string& params) {
  if (table.class_names.empty()) return;
  std::vector<double> index;
  for (const std::string& name : table.class_names) {
    const auto at = std::find(model_names.begin(), model_names.end(), name);
    if (at == model_names.end())
      gradsum::fail(table.source, ": class '", name, "' is not one of the ", model_names.size(),
                    " classes of the model in '", params, "'");
    index.push_back(double(at - model_names.begin()));
  }
  for (double& y : table.targets) y = index[std::size_t(y)];
}

// A predicted class: its name when the model has names, else its number.
void print_class(gradsum::OutputFile& out, const gradsum::CheckpointData& c, int label,
                 double probability) {
  if (c.class_names.empty())
    out.print("%d %.6f\n", label, probability);
  else
    out.print("%s %.6f\n", c.class_names[std::size_t(label)].c_str(), probability);
}

template <class Model>
void predict(const Model& model, const gradsum::CheckpointData& c, const gradsum::ModelFile* file,
             const gradsum::Table& table, bool targets, gradsum::OutputFile& out,
             const std::string& params) {
  // Every size the loop below indexes with must be the model's own (an MLP
  // checkpoint's sizes are not checked by check_sizes; a model file's
  // tensors are checked against the model by model_parameters).
  if ((!file && model.num_parameters() != c.num_parameters) ||
      model.num_features() != c.num_features || model.num_outputs() != c.num_outputs)
    gradsum::fail("model '", c.model, "' takes ", model.num_features(), " features and has ",
                  model.num_outputs(), " outputs and ", model.num_parameters(),
                  " parameters, but the checkpoint declares ", c.num_features, ", ",
                  c.num_outputs, " and ", c.num_parameters, " (the file is corrupted)");
  if (targets) check_targets(table, c, params);
  const std::vector<double> theta = file ? gradsum::model_parameters(*file, model) : c.parameters();
  const bool regression = c.loss == "squared_error";
  const Predictions predicted = predict_rows(model, theta, table, regression);
  double squared = 0;
  std::size_t correct = 0;
  for (std::size_t i = 0; i < table.num_rows; ++i) {
    if (regression) {
      const double value = predicted.values[i];
      out.print("%.17g\n", value);
      if (targets) squared += (value - table.targets[i]) * (value - table.targets[i]);
      continue;
    }
    const int label = predicted.labels[i];
    const double probability = predicted.probabilities[i];
    print_class(out, c, label, probability);
    if (targets && double(label) == table.targets[i]) ++correct;
  }
  out.commit();
  if (!targets) return;
  const double n = double(table.num_rows);
  if (regression)
    std::fprintf(stderr, "gradsum-predict: %zu rows, mean squared error %.10g\n", table.num_rows,
                 squared / n);
  else
    std::fprintf(stderr, "gradsum-predict: %zu rows, accuracy %.6g\n", table.num_rows,
                 double(correct) / n);
}

// The GPT of checkpoint or model file `params` (c, file), its parameters
// and vocabulary: the prompt and `o.generate` characters sampled after it,
// written to --output. Returns the exit status.
int generate_text(const Options& o, const gradsum::CheckpointData& c,
                  const gradsum::ModelFile* file) {
  const std::string gpt_prefix = "gpt:";
  if (c.model.compare(0, gpt_prefix.size(), gpt_prefix) != 0)
    gradsum::fail("--generate: '", o.params, "' holds model ", c.model,
                  ", not a GPT trained on text (gradsum-train --text --model gpt:…)");
  const gradsum::Gpt gpt = gradsum::Gpt::from_description(c.model.substr(gpt_prefix.size()));
  const std::string& characters = file ? file->notes.vocabulary : c.vocabulary;
  if (characters.empty())
    gradsum::fail("--generate: '", o.params, "' holds no vocabulary (the characters of the "
                  "text the GPT was trained on)");
  const auto vocabulary = gradsum::CharVocabulary::from_characters(characters);
  if (vocabulary.size() != gpt.vocabulary() ||
      (!file && c.num_parameters != gpt.num_parameters()))
    gradsum::fail("'", o.params, "' declares ", c.num_parameters, " parameters and a vocabulary "
                  "of ", vocabulary.size(), ", but ", c.model, " has ", gpt.num_parameters(),
                  " and ", gpt.vocabulary(), " (the file is corrupted)");
  const std::vector<double> values = file ? gradsum::model_parameters(*file, gpt) : c.parameters();
  using Host = Kokkos::DefaultHostExecutionSpace;
  Kokkos::View<double*, Kokkos::HostSpace> theta("gradsum-predict::theta", values.size());
  for (std::size_t j = 0; j < values.size(); ++j) theta(j) = values[j];
  const auto prompt = vocabulary.encode(o.prompt, "--prompt");
  const auto ids = gradsum::generate(Host(), gpt, theta, prompt, int(o.generate), o.temperature,
                                     o.seed);
  gradsum::OutputFile out(o.output, "--output");
  out.write(vocabulary.decode(ids));
  out.commit();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGXFSZ, SIG_IGN);  // a file-size limit fails the write with EFBIG instead
  // Before anything starts Kokkos: all this process's cores, unless the
  // user chose, and a settled OMP_PROC_BIND, so Kokkos has nothing to warn of.
  gradsum::choose_host_threads(argc, argv);
  Options o;
  try {
    gradsum::check_thread_flags(argc, argv);
    o = parse(argc, argv);
    if (o.help) {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-predict: error: %s\n", e.what());
    return 2;
  }
  gradsum::translate_kokkos_thread_flag(argc, argv);
  Kokkos::ScopeGuard kokkos(argc, argv);  // for gradsum::predict, on the host
  try {
    gradsum::ModelFile model_file;
    const bool safetensors = gradsum::looks_like_safetensors(o.params);
    if (safetensors) model_file = gradsum::read_model_file(o.params);
    const gradsum::ModelFile* file = safetensors ? &model_file : nullptr;
    const gradsum::CheckpointData c =
        safetensors ? as_checkpoint(model_file) : gradsum::read_checkpoint(o.params);
    if (o.generate >= 0) return generate_text(o, c, file);
    if (!safetensors) check_sizes(c, o.params);
    check_class_names(c, o.params);
    gradsum::CsvOptions csv;
    csv.class_names = !c.class_names.empty();
    csv.max_values = o.max_values;
    gradsum::Table table = gradsum::read_csv(o.data, csv);
    number_as_model(table, c.class_names, o.params);
    const bool targets = split_targets(table, std::size_t(c.num_features), o.params);
    if (!c.scaler.mean.empty()) c.scaler.transform(table);
    const int d = int(c.num_features), k = int(c.num_outputs);
    gradsum::OutputFile out(o.output, "--output");
    const bool one_output = c.loss == "squared_error" || c.loss == "binary_cross_entropy";
    const std::string mlp = "mlp:";
    if (c.model == "linear" && one_output)
      predict(gradsum::Linear(d), c, file, table, targets, out, o.params);
    else if (c.model == "softmax" && c.loss == "softmax_cross_entropy")
      predict(gradsum::Softmax(d, k), c, file, table, targets, out, o.params);
    else if (c.model.compare(0, mlp.size(), mlp) == 0 &&
             (one_output || c.loss == "softmax_cross_entropy")) {
      const auto net = gradsum::MLP::from_description(c.model.substr(mlp.size()));
      predict(net, c, file, table, targets, out, o.params);
    }
    else
      gradsum::fail("'", o.params, "' holds model ", c.model, " with loss ", c.loss,
                    "; gradsum-predict applies linear, logistic and softmax regression "
                    "and MLPs");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gradsum-predict: error: %s\n", e.what());
    return 1;
  }
}
