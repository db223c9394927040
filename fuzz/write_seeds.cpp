// SPDX-License-Identifier: Apache-2.0
// fuzz_seeds CORPUS_DIR: writes the seed corpus of every fuzz target, valid
// inputs that each reader must accept, into CORPUS_DIR/<target>/. It parses
// every seed before writing it and fails (exit 1) if one is rejected, so a
// seed is a test of the reader as well as a start for the fuzzer.

#include "inputs.hpp"

#include <gradsum/core/safetensors.hpp>
#include <gradsum/train/checkpoint_format.hpp>
#include <train/flags.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

int written = 0;

void write(const std::filesystem::path& dir, const std::string& name, const std::string& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + (dir / name).string());
  ++written;
}

void csv_seed(const std::filesystem::path& dir, const std::string& name, std::uint8_t options,
              const std::string& text) {
  std::istringstream in(text);
  const auto t = gradsum::parse_csv(in, name, gradsum_fuzz::csv_options(options));
  if (t.num_rows == 0) throw std::runtime_error(name + ": no rows");
  write(dir / "csv", name, std::string(1, char(options)) + text);
}

void libsvm_seed(const std::filesystem::path& dir, const std::string& name, std::uint8_t options,
                 const std::string& text) {
  std::istringstream in(text);
  gradsum::parse_libsvm(in, name, gradsum_fuzz::libsvm_options(options));
  write(dir / "libsvm", name, std::string(1, char(options)) + text);
}

void checkpoint_seed(const std::filesystem::path& dir, const std::string& name,
                     gradsum::CheckpointData c) {
  const std::string bytes = gradsum::encode_checkpoint(c);
  if (gradsum::encode_checkpoint(gradsum::decode_checkpoint(name, bytes)) != bytes)
    throw std::runtime_error(name + ": does not round-trip");
  write(dir / "checkpoint", name, bytes);
}

void safetensors_seed(const std::filesystem::path& dir, const std::string& name,
                      const gradsum::Safetensors& s) {
  const std::string bytes = gradsum::encode_safetensors(s);
  if (gradsum::encode_safetensors(gradsum::decode_safetensors(name, bytes)) != bytes)
    throw std::runtime_error(name + ": does not round-trip");
  write(dir / "safetensors", name, bytes);
}

void args_seed(const std::filesystem::path& dir, const std::string& name,
               const std::vector<std::string>& args) {
  gradsum_train::parse(args);
  write(dir / "train_args", name, gradsum_fuzz::join_args(args));
}

template <class Scalar>
std::string raw(const std::vector<double>& values) {
  std::string out;
  for (double v : values) {
    const Scalar s = Scalar(v);
    out.append(reinterpret_cast<const char*>(&s), sizeof s);
  }
  return out;
}

}  // namespace

int main(int argc, char* argv[]) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seeds CORPUS_DIR\n";
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  try {
    // CSV: the shapes of the files Debian's scikit-learn ships, and the options.
    csv_seed(dir, "sklearn_header.csv", 0,
             "4,2,setosa,versicolor\n5.1,3.5,0\n4.9,3.0,0\n7.0,3.2,1\n6.4,3.2,1\n");
    csv_seed(dir, "named_header_crlf.csv", 0, "\xEF\xBB\xBFx0,x1,y\r\n1,2,3\r\n4,5,6\r\n");
    csv_seed(dir, "spaces.csv", 2 | (1 << 2), "  1.5 2e3\t-4\n\n0 .5 +7 \n");
    csv_seed(dir, "semicolon_target0.csv", 2 | (2 << 2) | (1 << 6), "1;2;3\n4;5;6\n");
    csv_seed(dir, "tabs_classes.csv", 2 | (3 << 2) | (1 << 5), "0.1\t0.2\t2\n0.3\t0.4\t0\n");
    csv_seed(dir, "nonfinite_allowed.csv", 2 | (1 << 4), "nan,1,0\ninf,-inf,1\n");
    csv_seed(dir, "header_present.csv", 1 | (3 << 6), "1,2,3,4\n5,6,7,8\n");
    // LIBSVM.
    libsvm_seed(dir, "basic.svm", 0, "1 1:0.5 3:-2\n0 2:1e-3\n# comment\n\n1 1:1 2:2 3:3 # tail\n");
    libsvm_seed(dir, "zero_based_width.svm", 1 | (1 << 3), "-1 0:1 2:4\r\n+1 1:2\n");
    libsvm_seed(dir, "classes.svm", 1 << 2, "0 1:1\n1 5:2\n");
    libsvm_seed(dir, "nonfinite_allowed.svm", 1 << 1, "1 1:nan 2:inf\n");
    libsvm_seed(dir, "labels_only.svm", 0, "3\n4\n");
    // Checkpoints: a logistic model with Adam (double) and an MLP with SGD (float).
    gradsum::CheckpointData c;
    c.scalar = "double";
    c.scalar_size = 8;
    c.model = "linear";
    c.loss = "binary_cross_entropy";
    c.optimizer = "adam";
    c.gradient = "analytic";
    c.reduction = "sum";
    c.aggregation = "local";
    c.num_parameters = 3;
    c.num_features = 2;
    c.num_outputs = 1;
    c.position = {40, 4, 2, 7};
    c.state_rows = 2;
    c.parameter_bytes = raw<double>({0.5, -1.25, 0.125});
    c.state_bytes = raw<double>({0.1, 0.2, 0.3, 0.01, 0.02, 0.03});
    c.optimizer_host = {40, 0};
    c.scaler.mean = {1.5, 2.5};
    c.scaler.scale = {0.5, 2};
    c.loop = {3, 0.25};
    checkpoint_seed(dir, "logistic_adam.ckpt", c);
    // Format version 2: the same with the class names of its two labels.
    c.class_names = {"benign", "malignant"};
    checkpoint_seed(dir, "logistic_adam_names.ckpt", c);
    c.class_names.clear();
    c.scalar = "float";
    c.scalar_size = 4;
    c.model = "mlp";
    c.optimizer = "sgd";
    c.num_parameters = 5;
    c.state_rows = 0;
    c.parameter_bytes = raw<float>({1, 2, 3, 4, 5});
    c.state_bytes.clear();
    c.optimizer_host.clear();
    c.scaler = {};
    c.loop.clear();
    checkpoint_seed(dir, "mlp_sgd_float.ckpt", c);
    // safetensors: a model file as save_model writes it, and one in the
    // form of other writers (no metadata, other dtypes, a scalar).
    gradsum::Safetensors s;
    s.metadata = {{"gradsum.model", "mlp:2-3(tanh)-1"}, {"gradsum.features", "2"},
                  {"gradsum.outputs", "1"}, {"gradsum.class.0", "b\xc3\xa9nin"}};
    s.append("layers.0.weight", {3, 2}, {0.5, -1, 2, 0.25, 1e-3, 7}, 4);
    s.append("layers.0.bias", {3}, {0, 1, -1}, 4);
    s.append("layers.1.weight", {1, 3}, {1, 2, 3}, 8);
    s.append("layers.1.bias", {1}, {0.5}, 8);
    safetensors_seed(dir, "mlp.safetensors", s);
    gradsum::Safetensors other;
    other.append("weight", {1, 2}, {1, 2}, 4);
    other.append("bias", {}, {3}, 8);
    other.tensors.push_back({"steps", "I64", {1}, other.data.size(), other.data.size() + 8});
    other.data += std::string(8, '\0');
    safetensors_seed(dir, "other.safetensors", other);
    // gradsum-train command lines.
    args_seed(dir, "demo", {"--data", "breast_cancer.csv", "--model", "logistic", "--standardize",
                            "--lr", "0.5", "--epochs", "3", "--batch", "64"});
    args_seed(dir, "mlp", {"--data", "digits.csv", "--model", "mlp:32,16", "--activation", "tanh",
                           "--init", "he_normal", "--optimizer", "adam", "--beta1", "0.8",
                           "--beta2", "0.99", "--eps", "1e-7", "--weight-decay", "0.01",
                           "--clip-norm", "5", "--diagnostics", "--loss", "softmax",
                           "--test-fraction", "0.2", "--seed", "42"});
    args_seed(dir, "schedule", {"--data", "d.csv", "--schedule", "cosine:100:0.1", "--warmup", "5",
                                "--optimizer", "momentum", "--momentum", "0.5", "--l2", "1e-4"});
    args_seed(dir, "step_schedule", {"--data", "d.csv", "--schedule", "step:10:0.5",
                                     "--reduce", "reproducible", "--aggregate", "trimmed:1",
                                     "--workers", "4", "--accumulate", "2"});
    args_seed(dir, "init", {"--data", "d.csv", "--init-params", "p.txt", "--print-gradient"});
    args_seed(dir, "lbfgs", {"--data", "d.csv", "--optimizer", "lbfgs", "--history", "5",
                             "--line-search", "armijo", "--max-steps", "100", "--grad-tol",
                             "1e-6", "--loss-tol", "1e-9", "--on-nonfinite", "skip"});
    args_seed(dir, "files", {"--data", "d.csv", "--log", "log.csv", "--checkpoint", "c.ckpt",
                             "--checkpoint-every", "2", "--resume", "old.ckpt", "--save-params",
                             "p.safetensors", "--save-model", "m.safetensors", "--early-stop", "3", "--validation", "0.1",
                             "--progress", "off", "--target-column", "0", "--space", "serial",
                             "--aggregate", "clip:2.5", "--kokkos-threads=2", "--print-gradient"});
    args_seed(dir, "help", {"--help"});
  } catch (const std::exception& e) {
    std::cerr << "fuzz_seeds: a seed was rejected: " << e.what() << '\n';
    return 1;
  }
  std::cout << "fuzz_seeds: wrote " << written << " seeds under " << dir.string() << '\n';
  return 0;
}
