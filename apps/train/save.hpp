// SPDX-License-Identifier: Apache-2.0
#pragma once

// What gradsum-train writes once training ends (--save-params; the
// checkpoints are a callback's), and the work only rank 0 does.

#include "context.hpp"

#include <string>
#include <vector>

namespace gradsum_train {

/// Runs `work` on rank 0 alone; a failure there fails every rank alike.
/// Collective.
template <class Aggregation, class Work>
void on_rank0(Aggregation& aggregation, const Work& work) {
  gradsum::on_every_rank(aggregation, [&] {
    if (aggregation.rank() == 0) work();
  });
}

/// A View's values on the host.
template <class View>
std::vector<double> host_values(const View& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

/// One value per line, 17 significant digits: read back, the same doubles.
inline void write_params(const std::string& path, const std::vector<double>& theta) {
  gradsum::OutputFile out(path, "--save-params");
  for (double v : theta) out.print("%.17g\n", v);
  out.commit();
}

/// A folder that cannot take the outputs fails the run now, not after
/// training. Collective.
template <class Aggregation>
void check_outputs(Aggregation& aggregation, const Options& o) {
  if (!o.save_params.empty())
    on_rank0(aggregation, [&] { gradsum::OutputFile::check(o.save_params, "--save-params"); });
  if (!o.suspects_out.empty())
    on_rank0(aggregation, [&] { gradsum::OutputFile::check(o.suspects_out, "--suspects-out"); });
}

/// --save-params, written by rank 0. Collective.
template <class Aggregation, class Theta>
void save_params(Aggregation& aggregation, const Options& o, const Theta& theta) {
  if (!o.save_params.empty())
    on_rank0(aggregation, [&] { write_params(o.save_params, host_values(theta)); });
}

}  // namespace gradsum_train
