// SPDX-License-Identifier: Apache-2.0
#pragma once

// Debian's copy of the UCI handwritten digits (scikit-learn's load_digits):
// 1,797 images of 8 x 8 pixels in 0 … 16, then the digit, no header.

#include <gradsum/gradsum.hpp>

#include <doctest/doctest.h>
#include <zlib.h>

#include <sstream>
#include <string>
#include <utility>

namespace gradsum_test {

inline gradsum::Table digits() {
  const std::string path = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";
  gzFile f = gzopen(path.c_str(), "rb");
  REQUIRE_MESSAGE(f != nullptr, "cannot open " << path << " (Debian package python3-sklearn)");
  std::string text;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(f, buffer, sizeof buffer)) > 0) text.append(buffer, std::size_t(n));
  gzclose(f);
  std::istringstream in(text);
  gradsum::CsvOptions options;
  options.header = gradsum::Header::absent;
  auto table = gradsum::parse_csv(in, path, options);
  REQUIRE(table.num_rows == 1797);
  REQUIRE(table.num_features == 64);
  return table;
}

/// The digits split 80/20 with seed 42, standardized by the training
/// part's statistics.
inline std::pair<gradsum::Table, gradsum::Table> standardized_digits() {
  auto split = gradsum::train_test_split(digits(), 0.2, 42);
  const auto scaler = gradsum::StandardScaler::fit(split.first);
  scaler.transform(split.first);
  scaler.transform(split.second);
  return split;
}

}  // namespace gradsum_test
