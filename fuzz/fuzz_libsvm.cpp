// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: gradsum::parse_libsvm. Byte 0 chooses the options (see
// inputs.hpp), the rest is the file. Only gradsum::Error may leave the
// reader, its message must name the source, and an accepted table must be
// consistent with the options.

#include "inputs.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const char* target = "fuzz_libsvm";
  const gradsum::LibsvmOptions options = gradsum_fuzz::libsvm_options(data[0]);
  gradsum::Table t;
  const auto parse = [&](std::istream& in, const std::string& source) {
    return gradsum::parse_libsvm(in, source, options);
  };
  if (!gradsum_fuzz::parse_table(target, data, size, "fuzz.svm", parse, t)) return 0;
  gradsum_fuzz::check_table(target, t, options.allow_nonfinite, options.num_classes);
  if (std::int64_t(t.features.size()) > options.max_values)
    gradsum_fuzz::broken(target, "dense table larger than max_values");
  if (options.num_features > 0 && std::int64_t(t.num_features) != options.num_features)
    gradsum_fuzz::broken(target, "width differs from num_features");
  return 0;
}
