// SPDX-License-Identifier: Apache-2.0
// gradsum-train: trains a linear, logistic, softmax or MLP model on a CSV
// file, or a GPT on a text file.
// Exit status: 0 on success, 1 on an error in the data or the run, 2 on a
// bad command line.

#include "context.hpp"
#include "flags.hpp"
#include "inputs.hpp"
#include "models.hpp"
#include "plan.hpp"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace gradsum_train {

#if GRADSUM_ENABLE_MPI
Aggregation make_aggregation(const Options& o, std::int64_t bucket_cap) {
  int ranks = 1;
  gradsum::mpi::check(MPI_Comm_size(MPI_COMM_WORLD, &ranks), "MPI_Comm_size");
  // The cap in values of the step's scalar (a GPT's float unless
  // --precision double), at least one.
  const std::int64_t scalar = o.model == "gpt" && o.precision != "double" ? 4 : 8;
  const std::size_t values = std::min(std::size_t(std::max<std::int64_t>(bucket_cap / scalar, 1)),
                                      std::size_t(gradsum::mpi::max_message_elements));
  const gradsum::Buckets buckets{0, bucket_cap > 0 ? values : 0};
  const gradsum::SumAlgorithm algorithm = o.sum_algorithm == "flat"        ? gradsum::SumAlgorithm::flat
                                          : o.sum_algorithm == "two-level" ? gradsum::SumAlgorithm::two_level
                                                                           : gradsum::SumAlgorithm::automatic;
  Aggregation aggregation(MPI_COMM_WORLD, ranks > 1 ? robust_rule(o) : gradsum::RobustRule{},
                          gradsum::DeviceBuffers::automatic, buckets,
                          {algorithm, o.ranks_per_node});
  aggregation.shard_optimizer(o.shard_optimizer);
  return aggregation;
}
int sum_nodes(const Aggregation& a) { return a.nodes(); }

ChosenBuckets choose_bucket_cap(const Aggregation& a,
                                const std::vector<gradsum::plan::FinalPoint>& profile,
                                std::size_t parameters, std::size_t scalar_bytes) {
  ChosenBuckets c;
  c.network = gradsum::mpi::measure_network(a.communicator(), std::size_t(1) << 20, 3).network;
  // [0] the cap, then the backward pass and the two predictions.
  double chosen[4] = {double(one_bucket), 0, 0, 0};
  if (a.rank() == 0 && !profile.empty()) {
    std::vector<std::size_t> candidates = {0};
    for (std::size_t bytes = std::size_t(1) << 16; bytes <= (std::size_t(1) << 26); bytes *= 4)
      candidates.push_back(bytes / scalar_bytes);
    const gradsum::plan::Nodes nodes{std::max(1, a.size() / a.nodes()), c.network};
    const auto choice = gradsum::plan::choose_buckets(profile, parameters, double(scalar_bytes),
                                                      c.network, a.size(), candidates,
                                                      a.sum_algorithm(), nodes);
    const auto one = gradsum::plan::predict_overlap(profile, parameters, double(scalar_bytes),
                                                    gradsum::Buckets{}, c.network, a.size(),
                                                    a.sum_algorithm(), nodes);
    chosen[0] = choice.size == 0 ? double(one_bucket) : double(choice.size * scalar_bytes);
    chosen[1] = one.backward_end_seconds;
    chosen[2] = choice.prediction.exposed_seconds;
    chosen[3] = one.exposed_seconds;
  }
  gradsum::mpi::check(MPI_Bcast(chosen, 4, MPI_DOUBLE, 0, a.communicator()), "MPI_Bcast");
  c.cap = std::int64_t(chosen[0]);
  c.backward_seconds = chosen[1];
  c.exposed_seconds = chosen[2];
  c.one_message_seconds = chosen[3];
  return c;
}
#else
Aggregation make_aggregation(const Options&, std::int64_t) { return Aggregation{}; }
int sum_nodes(const Aggregation&) { return 1; }
ChosenBuckets choose_bucket_cap(const Aggregation&, const std::vector<gradsum::plan::FinalPoint>&,
                                std::size_t, std::size_t) {
  return {};
}
#endif

gradsum::RobustRule robust_rule(const Options& o) {
  if (o.aggregate == "median") return gradsum::CoordinateMedian{};
  if (o.aggregate == "trimmed") return gradsum::TrimmedMean{o.trimmed_k};
  if (o.aggregate == "clip") return gradsum::NormClip{o.clip_c};
  return {};
}

namespace {

// The options, or the exit status of a command line that ends the program
// here: 0 after --help, 2 after an error.
int read_command_line(int argc, char* argv[], Options& options) {
  try {
    options = parse(std::vector<std::string>(argv + 1, argv + argc));
    if (options.help) {
      std::fputs(usage().c_str(), stdout);
      return 0;
    }
    // Values only the library can judge are still command-line errors.
    gradsum::parse_activation(options.activation);
    gradsum::Initializer::parse(options.init);
    gradsum::check_thread_flags(argc, argv);
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "gradsum-train: error: %s\n", e.what());
    return 2;
  }
  return -1;
}

// --model's function for the spaces of part `Part` (models.hpp); -1 when
// --space is not among them.
template <int Part>
int train_in_part(const Context& context, const Aggregation& aggregation) {
  const std::string& model = context.options.model;
  if (model == "linear" || model == "logistic") return train_linear<Part>(context, aggregation);
  if (model == "softmax") return train_softmax<Part>(context, aggregation);
  return train_mlp<Part>(context, aggregation);
}

// --text: the GPT's part of the spaces answers, as train_chosen_model.
template <int... Part>
int train_text(const Context& context, const TextInputs& text, const Aggregation& aggregation,
               std::integer_sequence<int, Part...>) {
  int status = -1;
  ((status = status >= 0 ? status : train_gpt<Part>(context, text, aggregation)), ...);
  if (status < 0)
    gradsum::fail_agreed("--space: '", wanted_space(context.options),
                         "' is not enabled in this build; choose one of ",
                         gradsum::enabled_space_names());
  return status;
}

// Reads --text on every rank, checks that every rank has the same flags
// and characters, and trains the GPT. Collective.
int run_text(Context& context, Aggregation& aggregation) {
  TextInputs text;
  std::string error;
  try {
    text = read_text_inputs(context.options);
  } catch (const std::exception& e) {
    error = gradsum::describe_exception(e);
  }
  gradsum::Signature s = agreed_flags(context.options);
  auto bytes = [](const std::vector<std::int32_t>& ids) {
    return std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * sizeof(ids[0]));
  };
  s.add_hash("vocabulary", text.vocabulary.characters());
  s.add_hash("training characters", bytes(text.train));
  s.add_hash("validation characters", bytes(text.validation));
  aggregation.agree(s, error);
  return train_text(context, text, aggregation, std::make_integer_sequence<int, space_parts>());
}

// Trains --model on --space: the part of the spaces that holds it answers.
template <int... Part>
int train_chosen_model(const Context& context, const Aggregation& aggregation,
                       std::integer_sequence<int, Part...>) {
  int status = -1;
  ((status = status >= 0 ? status : train_in_part<Part>(context, aggregation)), ...);
  if (status < 0)
    gradsum::fail_agreed("--space: '", wanted_space(context.options),
                         "' is not enabled in this build; choose one of ",
                         gradsum::enabled_space_names());
  return status;
}

// Reads the inputs, checks that every rank has the same flags and data,
// lists the duplicates if asked, and trains. Collective.
int run(Context& context) {
  const Options& options = context.options;
  Aggregation aggregation = make_aggregation(options);
  context.sum_nodes = sum_nodes(aggregation);
  if (!options.text.empty()) return run_text(context, aggregation);
  gradsum::Table whole;  // --duplicates: the rows before any split
  // Reading can fail on one rank only (a file missing on one node): every
  // rank learns of it in the first collective, which also compares the
  // ranks' flags and data.
  std::string error;
  try {
    whole = read_inputs(options, context.inputs);
  } catch (const std::exception& e) {
    error = gradsum::describe_exception(e);
  }
  aggregation.agree(run_signature(options, context.inputs), error);
  error = aggregation.first_error(class_names_disagree(context.inputs.class_names, options.data));
  if (!error.empty()) throw gradsum::AgreedError(error);
  if (options.duplicates) {
    report_duplicates(context, whole);
    whole = gradsum::Table{};
  }
  return train_chosen_model(context, aggregation, std::make_integer_sequence<int, space_parts>());
}

}  // namespace
}  // namespace gradsum_train

int main(int argc, char* argv[]) {
  // --plan answers "should I distribute?" from the cost model alone.
  if (argc > 1 && std::string(argv[1]) == "--plan")
    return gradsum_train::run_plan(std::vector<std::string>(argv + 2, argv + argc));
  gradsum_train::Context context;
  const int status = gradsum_train::read_command_line(argc, argv, context.options);
  if (status >= 0) return status;
  // A file-size limit (ulimit -f) then fails a write with EFBIG, which the
  // writer reports, instead of killing the program mid-file.
  std::signal(SIGXFSZ, SIG_IGN);
  // The machine's load, read before Kokkos starts threads that would count.
  context.load = gradsum::read_host_load();
  // Threads per rank that fill, not oversubscribe, the node's cores.
  gradsum::Environment environment(argc, argv, gradsum::HostThreads::per_rank);
  context.say.on = environment.rank() == 0;
  context.threads = environment.thread_choice();
  // An error on one rank alone ends every rank (see Environment::run).
  return environment.run("gradsum-train", [&] { return gradsum_train::run(context); });
}
