// SPDX-License-Identifier: Apache-2.0
#pragma once

// Files for the tests: whole-file reads and writes, a fresh folder, what a
// folder holds.

#include <doctest/doctest.h>

#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace gradsum_test {

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(out.good());
}

/// A file name in the working folder, unique to this process.
inline std::string temp_path(const std::string& name) {
  return "gradsum_test_" + std::to_string(::getpid()) + "_" + name;
}

/// Whether two vectors hold the same bits, NaNs and signed zeros included.
inline bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

/// A new, empty folder under /tmp (mode 0700).
inline std::string temp_folder(const std::string& stem = "gradsum_test") {
  std::string pattern = "/tmp/" + stem + "_XXXXXX";
  REQUIRE(::mkdtemp(&pattern[0]) != nullptr);
  return pattern;
}

/// The names in `folder`, "." and ".." left out.
inline std::set<std::string> folder_entries(const std::string& folder) {
  std::set<std::string> names;
  DIR* d = ::opendir(folder.c_str());
  REQUIRE(d != nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.insert(name);
  }
  ::closedir(d);
  return names;
}

}  // namespace gradsum_test
