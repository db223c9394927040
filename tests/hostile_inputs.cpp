// SPDX-License-Identifier: Apache-2.0
// The hostile-inputs catalogue, library half, entries 1-79 (the
// command-line half is tests/cli/hostile_inputs.sh, entries from 80):
// numbered bad inputs across the public API, each expected to throw
// gradsum::Error whose message names the argument, the value and what was
// expected, never to crash or to be accepted. The cases already covered
// elsewhere (malformed CSV/LIBSVM fields, a million CSV columns, damaged
// checkpoints, ranks that disagree) are not repeated.
// The test prints how many entries it checked.

#include "file_helpers.hpp"
#include "test_helpers.hpp"

#include <gradsum/train/checkpoint.hpp>

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <set>

using namespace gradsum_test;

namespace {

// Runs numbered entries: each must throw gradsum::Error whose message holds
// every expected part.
class Catalogue {
 public:
  void expect(int number, const char* input, const std::function<void()>& run,
              const std::vector<std::string>& parts) {
    INFO("hostile input #" << number << ": " << std::string(input));
    CHECK_MESSAGE(numbers_.insert(number).second, "entry number used twice");
    std::string message;
    bool thrown = false;
    try {
      run();
    } catch (const gradsum::Error& e) {
      thrown = true;
      message = e.what();
    }
    CHECK_MESSAGE(thrown, "accepted instead of rejected with gradsum::Error");
    for (const auto& part : parts)
      CHECK_MESSAGE(message.find(part) != std::string::npos,
                    "message '" << message << "' lacks '" << part << "'");
  }
  std::size_t size() const { return numbers_.size(); }
  int last() const { return numbers_.empty() ? 0 : *numbers_.rbegin(); }

 private:
  std::set<int> numbers_;
};

// A checkpoint with a valid length and checksum around `body` (the bytes
// after the 24-byte header), so the decoder gets past them to the records.
// Version 1 is the layout of a checkpoint without class names, 2 with.
std::string sealed_checkpoint(const std::string& body, std::uint32_t version = 1) {
  std::string bytes(gradsum::detail::checkpoint_magic, 8);
  const std::uint32_t mark = 0x01020304u;
  const std::uint64_t length = 24 + body.size() + 4;
  bytes.append(reinterpret_cast<const char*>(&version), 4);
  bytes.append(reinterpret_cast<const char*>(&mark), 4);
  bytes.append(reinterpret_cast<const char*>(&length), 8);
  bytes += body;
  const std::uint32_t crc =
      gradsum::detail::crc32(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  bytes.append(reinterpret_cast<const char*>(&crc), 4);
  return bytes;
}

// The records of a valid checkpoint of a Linear(2) model, with SGD.
gradsum::CheckpointData small_checkpoint() {
  gradsum::CheckpointData c;
  c.scalar = "double";
  c.scalar_size = 8;
  c.model = "linear";
  c.loss = "squared_error";
  c.optimizer = "sgd";
  c.gradient = "analytic";
  c.reduction = "sum";
  c.aggregation = "local";
  c.num_parameters = 3;
  c.num_features = 2;
  c.num_outputs = 1;
  c.parameter_bytes = std::string(3 * sizeof(double), '\0');
  return c;
}

// `ck` encoded, `from` replaced by `to` (as long) in its records, resealed.
std::string forged_checkpoint(const gradsum::CheckpointData& ck, const std::string& from,
                              const std::string& to) {
  const std::string bytes = gradsum::encode_checkpoint(ck);
  std::string body = bytes.substr(24, bytes.size() - 28);
  const auto at = body.find(from);
  REQUIRE(at != std::string::npos);
  body.replace(at, from.size(), to);
  return sealed_checkpoint(body, ck.class_names.empty() ? 1 : 2);
}

// A gzip file of `text`.
void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), unsigned(text.size())) == int(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

// `line` repeated `times` times.
std::string repeated(const std::string& line, std::size_t times) {
  std::string text;
  text.reserve(line.size() * times);
  for (std::size_t k = 0; k < times; ++k) text += line;
  return text;
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("hostile inputs: every entry of the catalogue is rejected clearly", Space,
                          hostile) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  using gradsum::Linear;
  using gradsum::SquaredError;
  const Space space;
  const std::string dir = temp_folder("gradsum_hostile");
  Catalogue c;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // Four samples of two features, finite, regression targets.
  const std::vector<double> x = {1, 2, 3, 4, 5, 6, 7, 8}, y = {0, 1, 1, 0};

  // --- data in memory: NaN/Inf, labels out of range, zero width --------------
  auto step_on = [&](const std::vector<double>& features, const std::vector<double>& targets,
                     auto loss, int classes) {
    const auto data = Data::from_host(4, 2, features, targets);
    if constexpr (std::is_same<decltype(loss), gradsum::SoftmaxCrossEntropy>::value) {
      auto step = gradsum::make_step<double>(space, gradsum::Softmax(2, classes), loss);
      auto theta = step.make_parameters();
      step(theta, data);
    } else {
      auto step = gradsum::make_step<double>(space, Linear(2), loss);
      auto theta = step.make_parameters();
      step(theta, data);
    }
  };
  c.expect(1, "NaN feature in row 2", [&] {
    auto bad = x;
    bad[5] = nan;
    step_on(bad, y, SquaredError{}, 1);
  }, {"row 2", "non-finite feature", "feature 1 is nan"});
  c.expect(2, "+Inf target for squared error", [&] {
    step_on(x, {0, 1, inf, 0}, SquaredError{}, 1);
  }, {"row 2", "squared_error", "target is inf"});
  c.expect(3, "-Inf feature in row 0", [&] {
    auto bad = x;
    bad[0] = -inf;
    step_on(bad, y, SquaredError{}, 1);
  }, {"row 0", "feature 0 is -inf"});
  c.expect(4, "softmax label 3 with 3 classes", [&] {
    step_on(x, {0, 1, 3, 2}, gradsum::SoftmaxCrossEntropy{}, 3);
  }, {"row 2", "softmax_cross_entropy", "3 output(s)", "target is 3"});
  c.expect(5, "softmax label -1", [&] {
    step_on(x, {0, -1, 1, 2}, gradsum::SoftmaxCrossEntropy{}, 3);
  }, {"row 1", "target is -1"});
  c.expect(6, "softmax label 1.5 (not an integer)", [&] {
    step_on(x, {0, 1.5, 1, 2}, gradsum::SoftmaxCrossEntropy{}, 3);
  }, {"row 1", "target is 1.5"});
  c.expect(7, "binary cross-entropy label 2", [&] {
    step_on(x, {0, 1, 1, 2}, gradsum::BinaryCrossEntropy{}, 1);
  }, {"row 3", "binary_cross_entropy", "target is 2"});
  c.expect(8, "zero-width data for a one-feature model", [&] {
    const auto data = Data::from_host(4, 0, {}, y);
    auto step = gradsum::make_step<double>(space, Linear(1), SquaredError{});
    auto theta = step.make_parameters();
    step(theta, data);
  }, {"the data have 0 features", "expects 1"});
  c.expect(9, "features of the wrong length", [&] {
    Data::from_host(4, 2, {1, 2, 3}, y);
  }, {"gradsum::Dataset::from_host", "expected", "3"});
  c.expect(10, "a negative sample count", [&] {
    Data::from_host(-4, 2, x, y);
  }, {"negative shape", "-4"});
  c.expect(11, "an empty data set", [&] {
    const auto data = Data::from_host(0, 2, {}, {});
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{});
    auto theta = step.make_parameters();
    step(theta, data);
  }, {"holds no samples on any worker"});
  c.expect(12, "rows [2, 9) of 4 samples", [&] {
    const auto data = Data::from_host(4, 2, x, y);
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{});
    auto theta = step.make_parameters();
    step(theta, data, gradsum::RowRange{2, 9});
  }, {"rows [2, 9)", "outside the 4 available"});
  c.expect(13, "theta with 5 entries for 3 parameters", [&] {
    const auto data = Data::from_host(4, 2, x, y);
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{});
    Kokkos::View<double*, typename Space::memory_space> theta("theta", 5);
    step(theta, data);
  }, {"theta has 5 entries", "3 parameters"});

  // --- models and hyperparameters: negative or absurd --------------------------
  c.expect(14, "Linear with 0 features", [&] { Linear(0); },
           {"gradsum::Linear: num_features must be in [1, 2147483646]", "got 0"});
  c.expect(15, "Softmax with 1 class", [&] { gradsum::Softmax(3, 1); },
           {"num_classes must be at least 2, got 1"});
  c.expect(16, "MLP with a hidden layer of width 0", [&] { gradsum::MLP(2, {4, 0}, 1); },
           {"gradsum::MLP", "width 0"});
  c.expect(17, "MLP with a billion hidden units", [&] { gradsum::MLP(2, {1000000000}, 1); },
           {"gradsum::MLP: 2-1000000000-1 has more parameters than an int holds"});
  auto make = [&](auto optimizer) {
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{}, optimizer);
    (void)step;
  };
  c.expect(18, "SGD with learning rate -0.1", [&] { make(gradsum::SGD{-0.1}); },
           {"lr must be positive and finite, got -0.1"});
  c.expect(19, "SGD with learning rate NaN", [&] { make(gradsum::SGD{nan}); },
           {"lr must be positive and finite, got nan"});
  c.expect(20, "Adam with beta1 = 1", [&] {
    gradsum::Adam a;
    a.beta1 = 1;
    make(a);
  }, {"beta1", "[0, 1)", "got 1"});
  c.expect(21, "Adam with eps = 0", [&] {
    gradsum::Adam a;
    a.eps = 0;
    make(a);
  }, {"eps must be positive and finite, got 0"});
  c.expect(22, "Momentum with momentum 1e300", [&] { make(gradsum::Momentum{0.1, 1e300}); },
           {"momentum", "got 1e+300"});
  c.expect(23, "L-BFGS with history 0", [&] {
    gradsum::LBFGS l;
    l.m = 0;
    make(l);
  }, {"history m must be >= 1, got 0"});
  c.expect(24, "Newton on 2001 parameters", [&] {
    const auto wide = Data::from_host(4, 2000, std::vector<double>(8000, 0.5), y);
    auto step = gradsum::make_step<double>(space, Linear(2000), SquaredError{}, gradsum::Newton{});
    auto theta = step.make_parameters();
    step(theta, wide);
  }, {"gradsum::Newton: the model has 2001 parameters", "limit of 1024"});
  c.expect(25, "an L2 penalty of -1", [&] {
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{}, gradsum::SGD{},
                                           gradsum::Objective{-1.0});
    (void)step;
  }, {"l2 must be non-negative and finite", "-1"});
  c.expect(26, "gradient-norm clipping at -1", [&] {
    make(gradsum::clip_gradient_norm(gradsum::SGD{}, -1));
  }, {"max_norm must be positive, got -1"});
  c.expect(27, "a cosine schedule over 0 steps", [&] { gradsum::Schedule::cosine(0).validate(); },
           {"total must be >= 1, got 0"});
  c.expect(28, "central differences with eps 0", [&] {
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{}, gradsum::SGD{},
                                           gradsum::Objective{}, gradsum::CentralDifference{0});
    (void)step;
  }, {"eps must be positive and finite, got 0"});
  c.expect(29, "fit with -1 epochs", [&] {
    const auto data = Data::from_host(4, 2, x, y);
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{});
    auto theta = step.make_parameters();
    gradsum::FitOptions o;
    o.epochs = -1;
    gradsum::fit(step, theta, data, o);
  }, {"epochs must be >= 0, got -1"});
  c.expect(30, "fit accumulating 0 mini-batches", [&] {
    const auto data = Data::from_host(4, 2, x, y);
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{});
    auto theta = step.make_parameters();
    gradsum::FitOptions o;
    o.accumulate = 0;
    gradsum::fit(step, theta, data, o);
  }, {"accumulate must be >= 1", "got 0"});
  c.expect(31, "a mini-batch sampler with batch -1", [&] { gradsum::MiniBatchSampler<typename Space::memory_space>(10, -1, 0); },
           {"batch_size", "-1"});
  c.expect(32, "part 2 of 2 parts", [&] { gradsum::partition(10, 2, 2); },
           {"part must be in [0, 2), got 2"});
  c.expect(33, "an unknown initializer", [&] { gradsum::Initializer::parse("he_sideways"); },
           {"unknown initializer 'he_sideways'"});
  c.expect(34, "an unknown activation", [&] { gradsum::parse_activation("relu6"); },
           {"unknown activation 'relu6'"});

  // --- files: empty, unreadable, foreign, truncated -----------------------------
  write_bytes(dir + "/three_rows.csv", "1,2,0\n3,4,1\n5,6,0\n");
  c.expect(35, "a test fraction that leaves no training rows", [&] {
    gradsum::train_test_split(gradsum::read_csv(dir + "/three_rows.csv"), 0.9, 1);
  }, {"train_test_split", "0.9", "3"});
  c.expect(36, "a CSV path below a regular file", [&] {
    gradsum::read_csv(dir + "/three_rows.csv/data.csv");
  }, {"three_rows.csv/data.csv", "cannot open for reading", "Not a directory"});
  write_bytes(dir + "/empty.svm", "");
  c.expect(37, "an empty LIBSVM file", [&] { gradsum::read_libsvm(dir + "/empty.svm"); },
           {"empty.svm: no data rows"});
  write_bytes(dir + "/wide.svm", "1 1:1\n0 100000000000:2\n");
  c.expect(38, "a LIBSVM index of 10^11 (a dense table of 2 x 10^11)", [&] {
    gradsum::read_libsvm(dir + "/wide.svm");
  }, {"wide.svm", "2 rows x 100000000000 features exceed", "max_values"});
  write_bytes(dir + "/broken.csv.gz", std::string("\x1f\x8b\x08\x00garbage", 12));
  c.expect(39, "a gzip file with a corrupt stream", [&] {
    gradsum::read_csv(dir + "/broken.csv.gz");
  }, {"broken.csv.gz"});
  c.expect(40, "a checkpoint declaring 2^50 parameters", [&] {
    auto ck = small_checkpoint();
    ck.num_parameters = std::int64_t(1) << 50;
    ck.parameter_bytes.clear();
    gradsum::decode_checkpoint("huge.ckpt", gradsum::encode_checkpoint(ck));
  }, {"'huge.ckpt' declares 1125899906842624 parameters", "corrupted"});
  c.expect(41, "a checkpoint with 8 stray bytes before its checksum", [&] {
    std::string bytes = gradsum::encode_checkpoint(small_checkpoint());
    gradsum::decode_checkpoint("stray.ckpt",
                               sealed_checkpoint(bytes.substr(24, bytes.size() - 28) + "12345678"));
  }, {"'stray.ckpt' holds 8 unexpected bytes"});
  c.expect(42, "a checkpoint naming scalar type 'int'", [&] {
    auto ck = small_checkpoint();
    ck.scalar = "int";
    ck.scalar_size = 4;
    gradsum::decode_checkpoint("int.ckpt", gradsum::encode_checkpoint(ck));
  }, {"'int.ckpt' names scalar type 'int' of 4 bytes"});
  {
    // A logistic-regression checkpoint offered to a linear-regression step:
    // the same model and width, another loss.
    const auto data = Data::from_host(4, 2, x, y);
    auto logistic = gradsum::make_step<double>(space, Linear(2), gradsum::BinaryCrossEntropy{});
    auto theta = logistic.make_parameters();
    logistic(theta, data);
    gradsum::save_checkpoint(dir + "/logistic.ckpt", logistic, theta, {});
    c.expect(43, "a checkpoint of another loss", [&] {
      auto linear = gradsum::make_step<double>(space, Linear(2), SquaredError{});
      auto target = linear.make_parameters();
      gradsum::load_checkpoint(dir + "/logistic.ckpt", linear, target);
    }, {"logistic.ckpt", "loss binary_cross_entropy", "squared_error"});
    c.expect(44, "a checkpoint saved into a missing folder", [&] {
      gradsum::save_checkpoint(dir + "/missing/run.ckpt", logistic, theta, {});
    }, {"gradsum::save_checkpoint: cannot write '" + dir + "/missing/run.ckpt': its folder '" +
            dir + "/missing': No such file or directory"});
    const std::string saved = read_bytes(dir + "/logistic.ckpt");
    c.expect(45, "a CSV log written into a folder", [&] {
      gradsum::CsvLog log(dir);
      gradsum::FitOptions o;
      gradsum::fit(logistic, theta, data, o, log);
    }, {"gradsum::CsvLog: cannot write '" + dir + "': Is a directory"});
    CHECK_MESSAGE(read_bytes(dir + "/logistic.ckpt") == saved,
                  "a failed save or log changed an existing checkpoint");
  }
  write_bytes(dir + "/run.log", "an earlier run's log\n");
  c.expect(46, "a learning rate of 1e308 (training overflows) over an existing log", [&] {
    const auto data = Data::from_host(4, 2, x, y);
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{}, gradsum::SGD{1e308});
    auto theta = step.make_parameters();
    gradsum::CsvLog log(dir + "/run.log");
    gradsum::FitOptions o;
    o.epochs = 3;
    gradsum::fit(step, theta, data, o, log);
  }, {"not finite"});
  CHECK_MESSAGE(read_bytes(dir + "/run.log") == "an earlier run's log\n",
                "a failed run changed the existing log");
  CHECK_MESSAGE(read_bytes(dir + "/run.log.partial").rfind("step,epoch,loss", 0) == 0,
                "the failed run's rows are not in run.log.partial");
  c.expect(47, "a checkpoint that is a CSV file", [&] {
    gradsum::read_checkpoint(dir + "/three_rows.csv");
  }, {"three_rows.csv' is not a gradsum checkpoint"});

  c.expect(48, "Linear with 2^31 - 1 features (the bias overflows an int count)",
           [&] { Linear(2147483647); }, {"num_features must be in [1, 2147483646]", "2147483647"});
  c.expect(49, "Softmax with 2^30 features and 2 classes", [&] { gradsum::Softmax(1 << 30, 2); },
           {"2 classes x (1073741824 features + 1) = 2147483650 parameters do not fit an int"});

  // --- forged checkpoints: values no writer makes, with a valid length and
  // checksum (encode_checkpoint computes them), are refused, naming the file,
  // the field, the value and what was expected ---------------------------------
  const std::string forged = dir + "/forged.ckpt";
  const auto data = Data::from_host(4, 2, x, y);
  // Writes a checkpoint of three steps with `optimizer` whose host values
  // `edit` changes, then loads it into a fresh step, which must stay as it was.
  auto load_forged = [&](auto optimizer, const std::function<void(std::vector<double>&)>& edit) {
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{}, optimizer);
    auto theta = step.make_parameters();
    for (int k = 0; k < 3; ++k) step(theta, data);
    auto ck = gradsum::make_checkpoint(step, theta, {});
    edit(ck.optimizer_host);
    write_bytes(forged, gradsum::encode_checkpoint(ck));
    auto fresh = gradsum::make_step<double>(space, Linear(2), SquaredError{}, optimizer);
    auto target = fresh.make_parameters();
    // Parameters, state rows and host values, as a checkpoint holds them.
    auto everything = [&] {
      return gradsum::encode_checkpoint(gradsum::make_checkpoint(fresh, target, {}));
    };
    const std::string before = everything();
    try {
      gradsum::load_checkpoint(forged, fresh, target);
    } catch (const gradsum::Error&) {
      CHECK_MESSAGE(everything() == before, "a refused load changed the step or theta");
      throw;
    }
  };
  const std::string in_forged = "gradsum::load_checkpoint: '" + forged + "': ";
  // L-BFGS's host values: head, pairs held, stalls, then rho of each of m = 10 slots.
  c.expect(50, "an L-BFGS checkpoint with history head 1e6", [&] {
    load_forged(gradsum::LBFGS{}, [](std::vector<double>& v) { v[0] = 1e6; });
  }, {in_forged + "L-BFGS's saved history head is 1e+06, expected an integer in [0, 9]"});
  c.expect(51, "an L-BFGS checkpoint with history head NaN", [&] {
    load_forged(gradsum::LBFGS{}, [&](std::vector<double>& v) { v[0] = nan; });
  }, {in_forged + "L-BFGS's saved history head is nan, expected an integer in [0, 9]"});
  c.expect(52, "an L-BFGS checkpoint with head -5 and 10 pairs held", [&] {
    load_forged(gradsum::LBFGS{}, [](std::vector<double>& v) { v[0] = -5, v[1] = 10; });
  }, {in_forged + "L-BFGS's saved history head is -5, expected an integer in [0, 9]"});
  c.expect(53, "an L-BFGS checkpoint holding 2e9 pairs", [&] {
    load_forged(gradsum::LBFGS{}, [](std::vector<double>& v) { v[1] = 2e9; });
  }, {in_forged + "L-BFGS's saved number of pairs held is 2e+09, expected an integer in "
                  "[0, 10]"});
  c.expect(54, "an L-BFGS checkpoint with rho -1 for the pair held", [&] {
    load_forged(gradsum::LBFGS{}, [](std::vector<double>& v) { v[0] = 1, v[1] = 1, v[3] = -1; });
  }, {in_forged + "L-BFGS's saved rho of slot 0 is -1, expected a number in [0, inf]"});
  c.expect(55, "an Adam checkpoint with update count -1e300", [&] {
    load_forged(gradsum::Adam{}, [](std::vector<double>& v) { v[0] = -1e300; });
  }, {in_forged + "the adam optimizer's saved update count t is -1e+300, expected an integer "
                  "in [0, 9007199254740992]"});
  c.expect(56, "a run-time AdamW (FirstOrder) checkpoint with update count 2.5", [&] {
    load_forged(gradsum::FirstOrder(gradsum::AdamW{}),
                [](std::vector<double>& v) { v[0] = 2.5; });
  }, {in_forged + "the adamw optimizer's saved update count t is 2.5, expected an integer"});
  c.expect(57, "a scheduled Momentum checkpoint with schedule count -1", [&] {
    load_forged(gradsum::Scheduled<gradsum::Momentum>(gradsum::Momentum{},
                                                      gradsum::Schedule::cosine(8)),
                [](std::vector<double>& v) { v[0] = -1; });
  }, {in_forged + "the learning-rate schedule's saved update count t is -1, expected an "
                  "integer in [0, 9007199254740992]"});
  c.expect(58, "a clipped SGD checkpoint with 1e20 clipped updates", [&] {
    load_forged(gradsum::clip_gradient_norm(gradsum::SGD{}, 1.0),
                [](std::vector<double>& v) { v[0] = 1e20; });
  }, {in_forged + "gradient clipping's saved count of clipped updates is 1e+20"});
  c.expect(59, "a run-time L-BFGS (LineSearchMethod) checkpoint holding 11 of 10 pairs", [&] {
    load_forged(gradsum::LineSearchMethod(gradsum::LBFGS{}),
                [](std::vector<double>& v) { v[1] = 11; });
  }, {in_forged + "L-BFGS's saved number of pairs held is 11, expected an integer in [0, 10]"});

  auto decode_scaled = [&](std::vector<double> mean, std::vector<double> scale) {
    auto ck = small_checkpoint();
    ck.scaler.mean = std::move(mean);
    ck.scaler.scale = std::move(scale);
    gradsum::decode_checkpoint("scaled.ckpt", gradsum::encode_checkpoint(ck));
  };
  c.expect(60, "a checkpoint whose scaler divides feature 1 by 0", [&] {
    decode_scaled({0, 0}, {1, 0});
  }, {"gradsum::load_checkpoint: the scaler of 'scaled.ckpt' has scale 0 for feature 1, "
      "expected a positive finite number"});
  c.expect(61, "a checkpoint whose scaler divides feature 0 by NaN", [&] {
    decode_scaled({0, 0}, {nan, 1});
  }, {"the scaler of 'scaled.ckpt' has scale nan for feature 0"});
  c.expect(62, "a checkpoint of 2 features whose scaler holds 3", [&] {
    decode_scaled({0, 0, 0}, {1, 1, 1});
  }, {"'scaled.ckpt' declares 2 features but its scaler holds 3"});
  c.expect(63, "a checkpoint at epoch 2^62", [&] {
    auto ck = small_checkpoint();
    ck.position.epoch = std::int64_t(1) << 62;
    gradsum::decode_checkpoint("late.ckpt", gradsum::encode_checkpoint(ck));
  }, {"'late.ckpt' holds epoch 4611686018427387904, expected an integer in "
      "[0, 9007199254740992]"});
  {
    // fit()'s loop state, as a Checkpointer saved it after one epoch of two
    // mini-batches with early stopping: {1, ended early, batch size}, the loss average
    // (sum, weight), the noise scale (two of those), the stopping rules
    // (1, has previous, previous), early stopping (2, best, best epoch, waited).
    const std::string saved_path = dir + "/loop.ckpt";
    auto step = gradsum::make_step<double>(space, Linear(2), SquaredError{}, gradsum::SGD{});
    auto theta = step.make_parameters();
    gradsum::EarlyStopping early(5);
    gradsum::Checkpointer<decltype(step), decltype(theta)> saver(saved_path, 1, step, theta);
    gradsum::FitOptions o;
    o.batch = 2;
    gradsum::fit(step, theta, data, o, early, saver);
    const gradsum::CheckpointData saved = gradsum::read_checkpoint(saved_path);
    REQUIRE(saved.loop.size() == 16);
    auto resume = [&](std::size_t at, double value, std::int64_t batch) {
      gradsum::EarlyStopping again(5);
      gradsum::FitOptions r = o;
      r.epochs = 2;
      r.start = saved.position;
      r.start.batch = batch;
      r.loop = saved.loop;
      r.loop[at] = value;
      r.start_file = saved_path;
      gradsum::fit(step, theta, data, r, again);
    };
    const std::string in_saved = " (checkpoint '" + saved_path + "')";
    c.expect(64, "a loop state whose early stopping saw its best at epoch -1", [&] {
      resume(14, -1, 0);
    }, {"gradsum::fit: the saved early-stopping best epoch is -1, expected an integer in "
        "[0, 9007199254740992]" + in_saved});
    c.expect(65, "a loop state whose loss average has weight NaN", [&] {
      resume(4, nan, 0);
    }, {"gradsum::MovingAverage: the saved weight is nan, expected a number in "
        "[0, 1.7976931348623157e+308]" + in_saved});
    c.expect(66, "a loop state whose 'ended early' flag is 7", [&] {
      resume(1, 7, 0);
    }, {"gradsum::fit: the saved loop flag 'ended early' is 7, expected 0 or 1" + in_saved});
    c.expect(67, "a start at batch 9 of epochs of 2 mini-batches", [&] {
      resume(1, 0, 9);
    }, {"gradsum::fit: the checkpoint '" + saved_path + "' stopped after mini-batch 9 of "
        "epoch 2, but this run's epochs have 2 mini-batches of 2 samples"});
    std::remove(saved_path.c_str());
  }
  c.expect(68, "a checkpoint read from /dev/zero (endless zeros)", [&] {
    gradsum::read_checkpoint("/dev/zero");
  }, {"gradsum::load_checkpoint: '/dev/zero' is not a regular file (it is a character device)"});
  const std::string pipe = dir + "/pipe.ckpt";
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  c.expect(69, "a checkpoint read from a pipe no one writes to", [&] {
    gradsum::read_checkpoint(pipe);
  }, {"'" + pipe + "' is not a regular file (it is a pipe)"});

  // --- what one input may cost; text that would reach a terminal raw -----------
  // Bombs: a few KB of gzip that expand a thousandfold, refused at the row
  // or line that crosses the reader's limit, before the memory is spent.
  write_gzip(dir + "/bomb.csv.gz", repeated("0,0,0\n", 1000000));  // 6 MB of rows
  c.expect(70, "a gzip bomb of 6 MB of CSV rows, read with max_values 1000 (500 rows)", [&] {
    gradsum::CsvOptions options;
    options.max_values = 1000;
    gradsum::read_csv(dir + "/bomb.csv.gz", options);
  }, {dir + "/bomb.csv.gz:501: 501 rows x 2 features exceed the 1000 values a table may hold",
      "CsvOptions::max_values", "raise it"});
  write_gzip(dir + "/bomb.svm.gz", repeated("0 1:0 2:0 3:0\n", 1000000));  // 14 MB
  c.expect(71, "a gzip bomb of 14 MB of LIBSVM rows, read with max_values 999 (333 rows)", [&] {
    gradsum::LibsvmOptions options;
    options.max_values = 999;
    gradsum::read_libsvm(dir + "/bomb.svm.gz", options);
  }, {dir + "/bomb.svm.gz:334: 334 rows x 3 features exceed the 999 values",
      "LibsvmOptions::max_values"});
  write_gzip(dir + "/line.csv.gz", std::string(std::size_t(1) << 25, '0'));  // 32 MiB
  c.expect(72, "a gzip file of one 32 MiB line, twice the default max_line_bytes", [&] {
    gradsum::read_csv(dir + "/line.csv.gz");
  }, {dir + "/line.csv.gz:1: the line is longer than 16777216 bytes",
      "CsvOptions::max_line_bytes; raise it"});
  // Class names are printed as they are: a name that would change a window
  // title, move the cursor back or open a control sequence is refused where
  // it is read, and shown escaped.
  gradsum::CsvOptions names;
  names.class_names = true;
  write_bytes(dir + "/title.csv", "1,2,ok\n3,4,a\x1b]0;pwned\x07\n");
  c.expect(73, "a class name that sets the terminal's title (ESC ] 0 ; ... BEL)", [&] {
    gradsum::read_csv(dir + "/title.csv", names);
  }, {dir + "/title.csv:2:3: class name 'a\\x1b]0;pwned\\x07' holds control character "
            "'\\x1b' at byte 2", "UTF-8 text without control characters"});
  write_bytes(dir + "/return.csv", "1,2,ok\r\n3,4,banner\roverwritten\r\n");
  c.expect(74, "a class name with a carriage return inside", [&] {
    gradsum::read_csv(dir + "/return.csv", names);
  }, {"return.csv:2:3: class name 'banner\\x0doverwritten' holds control character '\\x0d' "
      "at byte 7"});
  write_bytes(dir + "/c1.csv", "1,2,\xc2\x9b" "2J\n");
  c.expect(75, "a class name opening with U+009B, the C1 control sequence introducer", [&] {
    gradsum::read_csv(dir + "/c1.csv", names);
  }, {"c1.csv:1:3: class name '\\xc2\\x9b2J' holds control character '\\xc2\\x9b' at byte 1"});
  c.expect(76, "a resealed checkpoint whose class name clears the screen (ESC [ 2 J)", [&] {
    auto ck = small_checkpoint();
    ck.class_names = {"a_[2Jb", "other"};
    gradsum::decode_checkpoint("names.ckpt", forged_checkpoint(ck, "a_[2Jb", "a\x1b[2Jb"));
  }, {"gradsum::load_checkpoint: 'names.ckpt': a class name 'a\\x1b[2Jb' holds control "
      "character '\\x1b' at byte 2; the file is corrupted"});
  c.expect(77, "a resealed checkpoint whose loss name ends in a carriage return", [&] {
    gradsum::decode_checkpoint("loss.ckpt",
                               forged_checkpoint(small_checkpoint(), "squared_error", "squared_erro\r"));
  }, {"'loss.ckpt': a policy name 'squared_erro\\x0d' holds control character '\\x0d'"});
  c.expect(78, "a checkpoint encoded with a class name holding a bell", [&] {
    auto ck = small_checkpoint();
    ck.class_names = {"ding\x07"};
    gradsum::encode_checkpoint(ck);
  }, {"gradsum::save_checkpoint: class name 'ding\\x07' holds control character '\\x07' at "
      "byte 5"});
  // A label the loss rejects, named by file:line:column where it is read
  // (the rule gradsum-train gives a logistic model).
  write_bytes(dir + "/label2.csv", "x1,x2,y\n1,2,0\n3,4,2\n");
  c.expect(79, "a logistic label 2, read with binary cross-entropy's rule for targets", [&] {
    gradsum::CsvOptions options;
    options.target_rule = {[](double y) { return gradsum::BinaryCrossEntropy::is_valid_target(y, 1); },
                           "a target in [0, 1]"};
    gradsum::read_csv(dir + "/label2.csv", options);
  }, {dir + "/label2.csv:3:3: target '2' is invalid (expected a target in [0, 1])"});

  std::printf("hostile_inputs: %zu catalogue entries checked on %s (numbered 1-%d; the "
              "command-line entries follow in tests/cli/hostile_inputs.sh)\n",
              c.size(), gradsum::space_name<Space>().c_str(), c.last());
  CHECK(c.size() == std::size_t(c.last()));  // no number left out
  for (const char* name : {"three_rows.csv", "empty.svm", "wide.svm", "broken.csv.gz",
                           "logistic.ckpt", "run.log", "run.log.partial", "forged.ckpt",
                           "pipe.ckpt", "bomb.csv.gz", "bomb.svm.gz", "line.csv.gz",
                           "title.csv", "return.csv", "c1.csv", "label2.csv"})
    std::remove((dir + "/" + name).c_str());
  ::rmdir(dir.c_str());
}
TEST_CASE_TEMPLATE_APPLY(hostile, Spaces);
