// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: gradsum::parse_csv (and StandardScaler on what it
// accepts). Byte 0 chooses the options (see inputs.hpp), the rest is the
// file. Only gradsum::Error may leave the reader, its message must name the
// source, and an accepted table must be consistent with the options.

#include "inputs.hpp"

#include <gradsum/data/scaling.hpp>

#include <cmath>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const char* target = "fuzz_csv";
  const gradsum::CsvOptions options = gradsum_fuzz::csv_options(data[0]);
  gradsum::Table t;
  const auto parse = [&](std::istream& in, const std::string& source) {
    return gradsum::parse_csv(in, source, options);
  };
  if (!gradsum_fuzz::parse_table(target, data, size, "fuzz.csv", parse, t)) return 0;
  gradsum_fuzz::check_table(target, t, options.allow_nonfinite, options.num_classes);
  try {
    const auto scaler = gradsum::StandardScaler::fit(t);
    if (scaler.mean.size() != t.num_features || scaler.scale.size() != t.num_features)
      gradsum_fuzz::broken(target, "scaler width differs from the table's");
    scaler.transform(t);
    if (!options.allow_nonfinite)
      for (double v : t.features)
        if (!std::isfinite(v)) gradsum_fuzz::broken(target, "scaling made a finite table non-finite");
  } catch (const gradsum::Error&) {
  }
  return 0;
}
