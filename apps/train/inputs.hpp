// SPDX-License-Identifier: Apache-2.0
#pragma once

// Reading --data: the rows to train on, those held out, their scaling, and
// what every rank must find alike in them.

#include "context.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace gradsum_train {

/// Reads --data, splits off the test and validation rows (seeded, the same
/// on every rank) and scales the features; returns the file's rows before
/// any split when --duplicates asks for them.
gradsum::Table read_inputs(const Options& options, Inputs& inputs);

/// What every rank must share before its first collective: the flags, and
/// the data as read, split and scaled (a file that differs between nodes, a
/// split or a scaling on one rank only would train a wrong model silently).
gradsum::Signature run_signature(const Options& o, const Inputs& in);

/// Why the ranks' class names differ ("" when they agree). Collective.
std::string class_names_disagree(const std::vector<std::string>& names, const std::string& data);

/// The number of classes C of integer labels 0 … C-1, checked for a softmax head.
int count_classes(const gradsum::Table& table, const std::vector<std::string>& names);

/// --duplicates: the groups of rows of the whole file whose features are
/// identical and whose targets differ. Collective; rank 0 prints.
void report_duplicates(const Context& context, gradsum::Table& whole);

/// A host table's rows in a Dataset (empty for an empty table).
template <class Data>
Data to_device(const gradsum::Table& table) {
  if (table.num_rows == 0) return Data{};
  return Data::from_host(std::int64_t(table.num_rows), int(table.num_features), table.features,
                         table.targets);
}

}  // namespace gradsum_train
