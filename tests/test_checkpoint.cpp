// SPDX-License-Identifier: Apache-2.0
// Checkpoints: resuming continues the exact trajectory (compared bit for
// bit with an uninterrupted run), every damaged or mismatched file is
// rejected with a message naming it, and a writer killed before its rename
// leaves the previous checkpoint loadable. The CRC-32 is checked against
// zlib's.

#include "file_helpers.hpp"
#include "test_helpers.hpp"

#include <gradsum/train/checkpoint.hpp>

#include <zlib.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

using namespace gradsum_test;
using gradsum::Linear;
using gradsum::SquaredError;

namespace {

// What loading `path` into `step` throws, or "loaded".
template <class StepType, class Theta>
std::string load_message(const std::string& path, StepType& step, const Theta& theta) {
  try {
    gradsum::load_checkpoint(path, step, theta);
  } catch (const gradsum::Error& e) {
    return e.what();
  }
  return "loaded";
}

// A regression problem read in mini-batches of 10 out of 40 (4 per epoch),
// so step 5 is in the middle of the second epoch.
const HostProblem problem = random_problem(40, 3, Kind::regression, 1, 2024);
constexpr std::int64_t batch_size = 10;
constexpr std::uint64_t seed = 7;

// Runs steps [from, to) of the mini-batch sequence, starting at `position`.
template <class Space, class StepType, class Theta, class Data>
gradsum::TrainingPosition run_steps(StepType& step, const Theta& theta, const Data& data,
                                    gradsum::TrainingPosition position, std::int64_t steps) {
  gradsum::MiniBatchSampler<typename Space::memory_space> sampler(data.num_samples(), batch_size,
                                                                  position.seed);
  sampler.shuffle(position.epoch);
  for (std::int64_t k = 0; k < steps; ++k) {
    step(theta, data, sampler.batch(position.batch));
    ++position.step;
    if (++position.batch == sampler.num_batches()) {
      position.batch = 0;
      sampler.shuffle(++position.epoch);
    }
  }
  return position;
}

template <class Space, class Optimizer>
void check_resume(const Optimizer& optimizer, const std::string& name) {
  INFO("optimizer " << name);
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto data = Data::from_host(problem.n, problem.d, problem.x, problem.y);
  const std::string path = temp_path("resume_" + name + ".ckpt");

  auto straight = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, optimizer);
  auto theta_straight = straight.make_parameters();
  fill(theta_straight, random_vector(4, 3));
  gradsum::TrainingPosition start;
  start.seed = seed;
  run_steps<Space>(straight, theta_straight, data, start, 10);

  auto first = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, optimizer);
  auto theta_first = first.make_parameters();
  fill(theta_first, random_vector(4, 3));
  const auto middle = run_steps<Space>(first, theta_first, data, start, 5);
  CHECK(middle.epoch == 1);
  CHECK(middle.batch == 1);
  gradsum::save_checkpoint(path, first, theta_first, middle);

  // A fresh step and zero parameters: everything must come from the file.
  auto second = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, optimizer);
  auto theta_second = second.make_parameters();
  const auto resumed = gradsum::load_checkpoint(path, second, theta_second);
  CHECK(resumed.step == 5);
  CHECK(resumed.epoch == 1);
  CHECK(resumed.batch == 1);
  CHECK(resumed.seed == seed);
  run_steps<Space>(second, theta_second, data, resumed, 5);

  const auto a = to_host(theta_straight), b = to_host(theta_second);
  CHECK(same_bits(a, b));
  CHECK(!same_bits(a, to_host(theta_first)));  // the second half moved theta
  std::remove(path.c_str());
}

// A checkpoint written by gradsum before class names (format version 1):
// Linear(1), SGD, step 3 of epoch 1, seed 7, parameters {0.5, -2}, scaler
// mean 1.5 and scale 2.
const std::string version1_checkpoint(
      "\x47\x52\x41\x44\x53\x55\x4d\x43\x01\x00\x00\x00\x04\x03\x02\x01"
      "\xe9\x00\x00\x00\x00\x00\x00\x00\x06\x00\x00\x00\x64\x6f\x75\x62"
      "\x6c\x65\x08\x00\x00\x00\x06\x00\x00\x00\x6c\x69\x6e\x65\x61\x72"
      "\x0d\x00\x00\x00\x73\x71\x75\x61\x72\x65\x64\x5f\x65\x72\x72\x6f"
      "\x72\x03\x00\x00\x00\x73\x67\x64\x01\x00\x00\x00\x67\x03\x00\x00"
      "\x00\x73\x75\x6d\x05\x00\x00\x00\x6c\x6f\x63\x61\x6c\x02\x00\x00"
      "\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00"
      "\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x03\x00\x00"
      "\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xe0\x3f\x00\x00\x00"
      "\x00\x00\x00\x00\xc0\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xf8\x3f\x01\x00\x00"
      "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x00"
      "\x00\x00\x00\x00\x00\x9e\x74\x7a\xb9",
    233);

// `bytes` with its length and checksum made right again after an edit.
std::string resealed(std::string bytes) {
  const std::uint64_t length = bytes.size();
  std::memcpy(&bytes[16], &length, 8);
  const std::uint32_t crc = gradsum::detail::crc32(
      reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size() - 4);
  std::memcpy(&bytes[bytes.size() - 4], &crc, 4);
  return bytes;
}

std::string decode_message(const std::string& bytes) {
  try {
    gradsum::decode_checkpoint("names.ckpt", bytes);
  } catch (const gradsum::Error& e) {
    return e.what();
  }
  return "decoded";
}

}  // namespace

TEST_CASE("checkpoint: a version 1 file still loads, and class names round-trip") {
  const gradsum::CheckpointData old = gradsum::decode_checkpoint("old.ckpt", version1_checkpoint);
  CHECK(old.model == "linear");
  CHECK(old.optimizer == "sgd");
  CHECK(old.position.step == 3);
  CHECK(old.position.seed == 7);
  CHECK(old.parameters() == std::vector<double>{0.5, -2.0});
  CHECK(old.scaler.mean == std::vector<double>{1.5});
  CHECK(old.class_names.empty());
  // Without class names the writer still writes version 1, byte for byte.
  CHECK(gradsum::encode_checkpoint(old) == version1_checkpoint);

  gradsum::CheckpointData named = old;
  named.class_names = {"setosa", "versicolor", "virginica"};
  const std::string bytes = gradsum::encode_checkpoint(named);
  std::uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  CHECK(version == 2);
  // The version-2 record is the version-1 record plus 4 + 3 x 4 bytes of
  // lengths and the 6 + 10 + 9 bytes of the names.
  CHECK(bytes.size() == version1_checkpoint.size() + 16 + 25);
  const gradsum::CheckpointData back = gradsum::decode_checkpoint("names.ckpt", bytes);
  CHECK(back.class_names == named.class_names);
  CHECK(back.parameters() == old.parameters());
  CHECK(back.scaler.scale == old.scaler.scale);

  // The count sits before the names: 0 names, or more than the file holds.
  const std::size_t count_at = version1_checkpoint.size() - 4;
  std::string none = bytes;
  none.replace(count_at, std::string::npos, std::string(4, '\0') + "crc!");
  CHECK(decode_message(resealed(none)) ==
        "gradsum::load_checkpoint: 'names.ckpt' is version 2 but holds no class names; the file "
        "is corrupted");
  std::string many = bytes;
  many[count_at + 3] = 1;  // 2^24 + 3 names
  CHECK(decode_message(resealed(many)).find("while reading a class name") != std::string::npos);
}

TEST_CASE("checkpoint: a vocabulary makes version 3 and round-trips, any byte in it") {
  gradsum::CheckpointData text = gradsum::decode_checkpoint("old.ckpt", version1_checkpoint);
  text.num_outputs = 4;
  text.vocabulary = std::string("\n a\xff", 4);  // a newline and a byte that is not text
  const std::string bytes = gradsum::encode_checkpoint(text);
  std::uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 8, 4);
  CHECK(version == 3);
  // Version 1's record, a class-name count of 0, then the vocabulary's
  // length and its 4 bytes.
  CHECK(bytes.size() == version1_checkpoint.size() + 4 + 4 + 4);
  const gradsum::CheckpointData back = gradsum::decode_checkpoint("text.ckpt", bytes);
  CHECK(back.vocabulary == text.vocabulary);
  CHECK(back.class_names.empty());
  CHECK(back.parameters() == text.parameters());

  // Out of order, or another size than the outputs: refused on reading,
  // and a writer never writes it.
  const std::size_t vocabulary_at = bytes.size() - 4 - 4;
  std::string unsorted = bytes;
  std::swap(unsorted[vocabulary_at], unsorted[vocabulary_at + 1]);
  CHECK(decode_message(resealed(unsorted)) ==
        "gradsum::load_checkpoint: 'names.ckpt': the vocabulary: characters 0 and 1 (' ', "
        "'\\x0a') are not in increasing order; a vocabulary is its distinct bytes, sorted; the "
        "file is corrupted");
  gradsum::CheckpointData wider = text;
  wider.num_outputs = 5;
  CHECK(decode_message(gradsum::encode_checkpoint(wider)) ==
        "gradsum::load_checkpoint: 'names.ckpt' holds a vocabulary of 4 characters for a model "
        "of 5 outputs; the file is corrupted");
  gradsum::CheckpointData twice = text;
  twice.vocabulary = "aa";
  CHECK_THROWS_WITH_AS(gradsum::encode_checkpoint(twice),
                       doctest::Contains("the vocabulary: characters 0 and 1 ('a', 'a')"),
                       gradsum::Error);
}

TEST_CASE("a checkpoint's scaler names the checkpoint when the data's width differs") {
  // version1_checkpoint holds a scaler of one feature (mean 1.5, scale 2).
  const gradsum::CheckpointData old = gradsum::decode_checkpoint("old.ckpt", version1_checkpoint);
  gradsum::Table wide;
  wide.num_rows = 1;
  wide.num_features = 2;
  wide.features = {3, 4};
  wide.targets = {0};
  wide.source = "wide.csv";
  CHECK_THROWS_WITH_AS(old.scaler.transform(wide),
                       "gradsum::StandardScaler::transform: table 'wide.csv' has 2 features, "
                       "but the scaler of 'old.ckpt' was fit on 1 features",
                       gradsum::Error);
  gradsum::Table narrow = wide;
  narrow.num_features = 1;
  narrow.features = {3.5};
  old.scaler.transform(narrow);
  CHECK(narrow.features[0] == 1.0);  // (3.5 - 1.5) / 2
}

TEST_CASE_TEMPLATE_DEFINE("save_checkpoint stores the class names", Space, class_names) {
  auto step = gradsum::make_step<double>(Space(), Linear(2), SquaredError{}, gradsum::SGD{});
  auto theta = step.make_parameters();
  const std::string path = temp_path("names.ckpt");
  const std::vector<std::string> names{"no", "yes"};
  gradsum::save_checkpoint(path, step, theta, {}, {}, {}, names);
  CHECK(gradsum::read_checkpoint(path).class_names == names);
  gradsum::save_checkpoint(path, step, theta, {});
  CHECK(gradsum::read_checkpoint(path).class_names.empty());
  std::remove(path.c_str());
}
TEST_CASE_TEMPLATE_APPLY(class_names, Spaces);

TEST_CASE("checkpoint CRC-32 equals zlib's crc32") {
  const auto values = random_vector(1000, 11);
  const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
  for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(3), std::size_t(8000)}) {
    const auto expected = std::uint32_t(::crc32(0L, bytes, uInt(n)));
    CHECK(gradsum::detail::crc32(bytes, n) == expected);
  }
  const unsigned char check[] = "123456789";  // the catalogue check value
  CHECK(gradsum::detail::crc32(check, 9) == 0xCBF43926u);
}

TEST_CASE_TEMPLATE_DEFINE("5 steps, checkpoint, load, 5 steps equal 10 steps bit for bit", Space,
                          resume) {
  check_resume<Space>(gradsum::Adam{0.05}, "adam");
  check_resume<Space>(gradsum::Scheduled<gradsum::Momentum>(gradsum::Momentum{0.05, 0.9},
                                                            gradsum::Schedule::cosine(8)),
                      "scheduled_momentum");
  check_resume<Space>(gradsum::LBFGS{}, "lbfgs");
}
TEST_CASE_TEMPLATE_APPLY(resume, Spaces);

TEST_CASE_TEMPLATE_DEFINE("damaged or mismatched checkpoints are rejected, naming the file",
                          Space, rejected) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto data = Data::from_host(problem.n, problem.d, problem.x, problem.y);
  const std::string path = temp_path("good.ckpt");
  const std::string bad = temp_path("bad.ckpt");
  auto step = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, gradsum::Adam{});
  auto theta = step.make_parameters();
  fill(theta, random_vector(4, 5));
  step(theta, data);
  gradsum::save_checkpoint(path, step, theta, gradsum::TrainingPosition{1, 1, 0, seed});
  const std::string good = read_bytes(path);
  REQUIRE(good.size() > 64);

  auto fresh = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, gradsum::Adam{});
  auto target = fresh.make_parameters();
  fill(target, {9, 9, 9, 9});
  auto message_of_load = [&](const std::string& file) { return load_message(file, fresh, target); };

  SUBCASE("truncated at every offset of the last 64 bytes") {
    for (std::size_t cut = good.size() - 64; cut < good.size(); ++cut) {
      INFO("truncated to " << cut << " of " << good.size() << " bytes");
      write_bytes(bad, good.substr(0, cut));
      const std::string m = message_of_load(bad);
      CHECK(m.find("'" + bad + "' is " + std::to_string(cut) + " bytes long but its header says " +
                   std::to_string(good.size()) + ": the file is truncated") != std::string::npos);
    }
  }
  SUBCASE("truncated inside the header") {
    write_bytes(bad, good.substr(0, 20));
    CHECK(message_of_load(bad) == "gradsum::load_checkpoint: '" + bad + "' is truncated: 20 "
                                  "bytes, shorter than the 28-byte header and checksum");
  }
  SUBCASE("a flipped byte anywhere") {
    for (std::size_t at = 0; at < good.size(); ++at) {
      INFO("byte " << at << " flipped");
      std::string damaged = good;
      damaged[at] = char(damaged[at] ^ 0x20);
      write_bytes(bad, damaged);
      const std::string m = message_of_load(bad);
      CHECK(m.find("'" + bad + "'") != std::string::npos);
      CHECK(m != "loaded");
    }
    std::string damaged = good;
    damaged[good.size() / 2] = char(damaged[good.size() / 2] ^ 1);
    write_bytes(bad, damaged);
    CHECK(message_of_load(bad).find("fails its checksum") != std::string::npos);
  }
  SUBCASE("not a checkpoint, or missing") {
    write_bytes(bad, "step,loss\n1,2\n");
    CHECK(message_of_load(bad).find("'" + bad + "' is not a gradsum checkpoint") !=
          std::string::npos);
    CHECK(message_of_load(bad + ".missing").find("cannot open '" + bad + ".missing'") !=
          std::string::npos);
  }
  SUBCASE("another format version") {
    std::string other = good;
    other[8] = 4;  // version 4, checksum recomputed so only the version differs
    const std::uint32_t crc = gradsum::detail::crc32(
        reinterpret_cast<const unsigned char*>(other.data()), other.size() - 4);
    std::memcpy(&other[other.size() - 4], &crc, 4);
    write_bytes(bad, other);
    CHECK(message_of_load(bad) == "gradsum::load_checkpoint: '" + bad +
                                      "' has format version 4; this gradsum reads versions 1 to 3");
  }
  SUBCASE("a model of another width") {
    auto wider = gradsum::make_step<double>(Space(), Linear(4), SquaredError{}, gradsum::Adam{});
    auto theta4 = wider.make_parameters();
    CHECK(load_message(path, wider, theta4) == "gradsum::load_checkpoint: '" + path +
                   "' was written for number of features 3 but this step has 4");
  }
  SUBCASE("another optimizer") {
    auto sgd = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, gradsum::SGD{});
    auto theta_sgd = sgd.make_parameters();
    CHECK(load_message(path, sgd, theta_sgd) == "gradsum::load_checkpoint: '" + path +
                   "' was written for optimizer adam but this step has sgd");
  }
  SUBCASE("another scalar type") {
    auto single = gradsum::make_step<float>(Space(), Linear(3), SquaredError{}, gradsum::Adam{});
    auto theta_float = single.make_parameters();
    CHECK(load_message(path, single, theta_float) == "gradsum::load_checkpoint: '" + path +
                   "' was written for scalar type double but this step has float");
  }
  // A failed load modifies nothing.
  CHECK(same_bits(to_host(target), {9, 9, 9, 9}));
  CHECK(message_of_load(path) == "loaded");
  CHECK(same_bits(to_host(target), to_host(theta)));
  std::remove(path.c_str());
  std::remove(bad.c_str());
}
TEST_CASE_TEMPLATE_APPLY(rejected, Spaces);

TEST_CASE("L-BFGS restores its history bookkeeping up to the bounds, and not one past them") {
  gradsum::LBFGS lbfgs;
  lbfgs.m = 3;
  // head, pairs held, stalls, rho of the 3 slots: the newest pair in slot 2.
  lbfgs.restore_host_state({2, 3, 9007199254740992.0, 0.5, 0.25, 2});
  CHECK(lbfgs.host_state() == std::vector<double>{2, 3, 9007199254740992.0, 0.5, 0.25, 2});
  CHECK(lbfgs.stalls() == 9007199254740992);
  const std::vector<double> kept = lbfgs.host_state();
  auto refused = [&](const std::vector<double>& v) {
    std::string message = "restored";
    try {
      lbfgs.restore_host_state(v);
    } catch (const gradsum::Error& e) {
      message = e.what();
    }
    CHECK(lbfgs.host_state() == kept);  // nothing changed
    return message;
  };
  CHECK(refused({3, 0, 0, 0, 0, 0}) ==
        "L-BFGS's saved history head is 3, expected an integer in [0, 2]");
  CHECK(refused({0, 4, 0, 1, 1, 1}) ==
        "L-BFGS's saved number of pairs held is 4, expected an integer in [0, 3]");
  CHECK(refused({0, 0, 9007199254740994.0, 0, 0, 0}) ==
        "L-BFGS's saved stall count is 9007199254740994, expected an integer in "
        "[0, 9007199254740992]");
  CHECK(refused({0, 0, 0, 0, std::nan(""), 0}) ==
        "L-BFGS's saved rho of slot 1 is nan, expected a number in [0, inf]");
  // Two pairs held, the newest in slot 0: slots 0 and 2 need rho > 0.
  CHECK(refused({1, 2, 0, 1, 1, 0}) ==
        "L-BFGS's saved rho of slot 2 (a pair held) is 0, expected 1 / s.y > 0");
  CHECK(refused({0, 0, 0, 1, 1}) == "L-BFGS's saved history holds 5 values, expected 3 + m = 6");
}

TEST_CASE_TEMPLATE_DEFINE("a saved running sum of squares below 0 is refused", Space, squares) {
  using Data = gradsum::Dataset<double, typename Space::memory_space>;
  const auto data = Data::from_host(problem.n, problem.d, problem.x, problem.y);
  const std::string path = temp_path("squares.ckpt");
  // Each optimizer and the state row holding its (averaged) squared gradients.
  auto check = [&](auto optimizer, int row, const std::string& name) {
    INFO("optimizer " << name);
    auto step = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, optimizer);
    auto theta = step.make_parameters();
    step(theta, data);
    gradsum::CheckpointData c = gradsum::make_checkpoint(step, theta, {});
    auto save_with = [&](double value) {  // as parameter 2 of the row
      std::memcpy(&c.state_bytes[(std::size_t(row) * 4 + 2) * sizeof value], &value, sizeof value);
      write_bytes(path, gradsum::encode_checkpoint(c));
    };
    auto fresh = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, optimizer);
    auto target = fresh.make_parameters();
    save_with(-0.5);
    CHECK(load_message(path, fresh, target) ==
          "gradsum::load_checkpoint: '" + path + "': the " + name + " optimizer's saved state "
          "row " + std::to_string(row) + " (of squares) is -0.5 for parameter 2, expected a "
          "number >= 0");
    save_with(0);
    CHECK(load_message(path, fresh, target) == "loaded");
  };
  check(gradsum::Adam{}, 1, "adam");
  check(gradsum::AdamW{}, 1, "adamw");
  check(gradsum::AdaGrad{}, 0, "adagrad");
  check(gradsum::RMSProp{}, 0, "rmsprop");
  check(gradsum::FirstOrder(gradsum::RMSProp{}), 0, "rmsprop");
  check(gradsum::clip_gradient_norm(gradsum::Scheduled<gradsum::FirstOrder>(
                                        gradsum::Adam{}, gradsum::Schedule::exponential(0.9)),
                                    1.0),
        1, "adam");
  std::remove(path.c_str());
}
TEST_CASE_TEMPLATE_APPLY(squares, Spaces);

TEST_CASE("a writer killed between write and rename leaves the previous checkpoint loadable") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  using Data = gradsum::Dataset<double, Space::memory_space>;
  const auto data = Data::from_host(problem.n, problem.d, problem.x, problem.y);
  const std::string path = temp_path("crash.ckpt");
  auto step = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, gradsum::Adam{});
  auto theta = step.make_parameters();
  step(theta, data);
  gradsum::save_checkpoint(path, step, theta, gradsum::TrainingPosition{1, 1, 0, seed});
  const auto saved = to_host(theta);
  step(theta, data);
  const std::string next = gradsum::encode_checkpoint(
      gradsum::make_checkpoint(step, theta, gradsum::TrainingPosition{2, 2, 0, seed}));

  // The child writes the next checkpoint and dies before renaming it; it
  // runs no Kokkos code, only the file writer.
  const auto before = folder_entries(".");
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    gradsum::OutputFile out(path, "gradsum::save_checkpoint");
    out.write(next);
    out.flush();
    ::raise(SIGKILL);
    ::_exit(0);  // not reached
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  // It got as far as a complete temporary file beside the checkpoint. (Only
  // names of this checkpoint's temporaries count: another test process may
  // be writing files in the same folder.)
  std::string leftover;
  for (const auto& name : folder_entries("."))
    if (!before.count(name) && name.rfind("." + path + ".", 0) == 0) leftover = name;
  REQUIRE(leftover.rfind("." + path + ".", 0) == 0);
  CHECK(read_bytes(leftover) == next);

  auto fresh = gradsum::make_step<double>(Space(), Linear(3), SquaredError{}, gradsum::Adam{});
  auto loaded = fresh.make_parameters();
  const auto position = gradsum::load_checkpoint(path, fresh, loaded);
  CHECK(position.step == 1);
  CHECK(same_bits(to_host(loaded), saved));
  CHECK(fresh.optimizer().t == 1);

  // The next save replaces the checkpoint, through a temporary file of its own.
  gradsum::save_checkpoint(path, step, theta, gradsum::TrainingPosition{2, 2, 0, seed});
  CHECK(read_bytes(path) == next);
  CHECK(read_bytes(leftover) == next);
  std::remove(leftover.c_str());
  std::remove(path.c_str());
}
