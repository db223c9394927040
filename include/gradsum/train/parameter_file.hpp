// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Parameters read from a file in either form gradsum writes: a
/// safetensors model file (train/model_file.hpp) or text of one value per
/// line (gradsum-train --save-params FILE), told apart by their first bytes.

#include <gradsum/core/error.hpp>
#include <gradsum/core/input_file.hpp>
#include <gradsum/core/text.hpp>
#include <gradsum/data/lines.hpp>
#include <gradsum/train/model_file.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace gradsum {
namespace detail {

/// `n` values, one per line, from the text file `path`; errors name the
/// file and line. Reads no more than n + 1 lines of at most 4 KiB.
inline std::vector<double> read_parameter_lines(const std::string& path, std::int64_t n) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("gradsum::read_parameters: cannot open '", path, "'");
  LineReader lines(in.rdbuf(), path, 4096, "gradsum::read_parameters");
  std::vector<double> values;
  std::string_view line;
  while (lines.next(line)) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string text(line);
    double v = 0;
    if (!parse_finite(text, v))
      fail(path, ':', lines.line_number(), ": ", quote_text(text),
           " is not a finite number (a parameter file holds one value per line)");
    if (std::int64_t(values.size()) == n)
      fail(path, ':', lines.line_number(), ": more than the model's ", n, " parameters");
    values.push_back(v);
  }
  if (std::int64_t(values.size()) != n)
    fail(path, ": holds ", values.size(), " values, the model has ", n, " parameters");
  return values;
}

}  // namespace detail

/// The parameters of `model` in `path`, as doubles: a safetensors file
/// (read_model_parameters: its architecture, if it declares one, must be
/// `model`'s, and its tensors are checked) or text of exactly
/// model.num_parameters() numbers, one per line, in the order of the
/// model's parameter vector. Throws gradsum::Error naming the file and
/// the tensor or line. Not collective.
template <class Model>
std::vector<double> read_parameters(const std::string& path, const Model& model) {
  // A missing file or one that is not a regular file is refused here.
  const detail::InputFile file(path, "gradsum::read_parameters", "a parameter file");
  if (looks_like_safetensors(path)) return read_model_parameters(path, model);
  return detail::read_parameter_lines(path, model.num_parameters());
}

}  // namespace gradsum
