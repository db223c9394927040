// SPDX-License-Identifier: Apache-2.0
#pragma once

// Command-line options of gradsum-train, parsed without Kokkos so the
// parser can be tested (and fuzzed) on its own.

#include <gradsum/core/error.hpp>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace gradsum_train {

/// Everything gradsum-train can be told.
struct Options {
  std::string data;
  std::string model = "logistic";  // linear | logistic | softmax
  std::string optimizer = "sgd";
  double lr = 0.1;
  int epochs = 10;
  std::int64_t batch = 0;  // 0 = full batch
  double l2 = 0.0;
  std::uint64_t seed = 0;
  bool standardize = false;
  std::string space;  // empty = Kokkos' default execution space
  int target_column = -1;
  std::string save_params;
  bool print_gradient = false;
  bool help = false;
};

inline const char* usage() {
  return "usage: gradsum-train --data FILE [options]\n"
         "\n"
         "Trains a model on a numeric CSV file (optional header row, target in\n"
         "the last column) by data-parallel gradient descent.\n"
         "\n"
         "  --data FILE            the CSV file (required)\n"
         "  --target-column K      0-based column of the target (default: last)\n"
         "  --model M              linear | logistic | softmax (default logistic)\n"
         "  --optimizer sgd        the optimizer (default sgd)\n"
         "  --lr X                 learning rate > 0 (default 0.1)\n"
         "  --epochs E             passes over the data, >= 0 (default 10)\n"
         "  --batch B              mini-batch size, 0 = full batch (default 0)\n"
         "  --l2 X                 L2 penalty >= 0 on weights (default 0)\n"
         "  --seed S               seed of the mini-batch order (default 0)\n"
         "  --standardize          scale features to mean 0, deviation 1\n"
         "  --space NAME           Kokkos execution space, e.g. serial, openmp\n"
         "  --save-params FILE     write the parameters, one per line\n"
         "  --print-gradient       print the objective and its gradient at zero\n"
         "                         parameters, one value per line, and exit\n"
         "  --help                 this text\n";
}

namespace detail {

inline double parse_double(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v))
    gradsum::detail::fail(flag, ": expected a finite number, got '", text, "'");
  return v;
}

inline std::int64_t parse_integer(const std::string& flag, const std::string& text,
                                  std::int64_t lo, std::int64_t hi) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE || v < lo || v > hi)
    gradsum::detail::fail(flag, ": expected an integer in [", lo, ", ", hi,
                          "], got '", text, "'");
  return v;
}

}  // namespace detail

/// Parses the arguments (program name excluded). Throws gradsum::Error
/// naming the flag and the value on anything it cannot accept. Arguments
/// starting with --kokkos- are left to Kokkos.
inline Options parse(const std::vector<std::string>& args) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& flag = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) gradsum::detail::fail(flag, ": missing value");
      return args[++i];
    };
    if (flag == "--help" || flag == "-h") {
      o.help = true;
    } else if (flag == "--data") {
      o.data = value();
    } else if (flag == "--model") {
      o.model = value();
      if (o.model != "linear" && o.model != "logistic" && o.model != "softmax")
        gradsum::detail::fail("--model: expected linear, logistic or softmax, got '",
                              o.model, "'");
    } else if (flag == "--optimizer") {
      o.optimizer = value();
      if (o.optimizer != "sgd")
        gradsum::detail::fail("--optimizer: expected sgd, got '", o.optimizer, "'");
    } else if (flag == "--lr") {
      o.lr = detail::parse_double(flag, value());
      if (!(o.lr > 0)) gradsum::detail::fail("--lr: must be positive, got ", o.lr);
    } else if (flag == "--epochs") {
      o.epochs = int(detail::parse_integer(flag, value(), 0, 100000000));
    } else if (flag == "--batch") {
      o.batch = detail::parse_integer(flag, value(), 0, INT64_MAX);
    } else if (flag == "--l2") {
      o.l2 = detail::parse_double(flag, value());
      if (o.l2 < 0) gradsum::detail::fail("--l2: must be non-negative, got ", o.l2);
    } else if (flag == "--seed") {
      o.seed = std::uint64_t(detail::parse_integer(flag, value(), 0, INT64_MAX));
    } else if (flag == "--standardize") {
      o.standardize = true;
    } else if (flag == "--space") {
      o.space = value();
    } else if (flag == "--target-column") {
      o.target_column = int(detail::parse_integer(flag, value(), 0, 1000000000));
    } else if (flag == "--save-params") {
      o.save_params = value();
      if (o.save_params.empty()) gradsum::detail::fail("--save-params: empty file name");
    } else if (flag == "--print-gradient") {
      o.print_gradient = true;
    } else if (flag.rfind("--kokkos-", 0) == 0) {
      // Kokkos' own option, e.g. --kokkos-threads=2.
    } else {
      gradsum::detail::fail("unknown option '", flag, "' (see --help)");
    }
  }
  if (!o.help && o.data.empty()) gradsum::detail::fail("--data FILE is required (see --help)");
  return o;
}

}  // namespace gradsum_train
