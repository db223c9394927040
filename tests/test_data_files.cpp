// SPDX-License-Identifier: Apache-2.0
// Data files beyond plain CSV: gzip-compressed tables (compressed here with
// zlib, and Debian's own diabetes .gz), the LIBSVM reader with every
// malformed input and its file:line:column message, the seeded train/test
// split, and the all-rank scaler on one process.

#include "file_helpers.hpp"
#include "test_helpers.hpp"

#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

using gradsum_test::temp_path;

namespace {

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), unsigned(text.size())) == int(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

gradsum::Table libsvm(const std::string& text, const gradsum::LibsvmOptions& options = {}) {
  std::istringstream in(text);
  return gradsum::parse_libsvm(in, "t.svm", options);
}

std::string libsvm_error(const std::string& text, const gradsum::LibsvmOptions& options = {}) {
  try {
    libsvm(text, options);
  } catch (const gradsum::Error& e) {
    return e.what();
  }
  return "accepted";
}

// Kibibytes on the line of /proc/self/status that starts with `key`.
long long status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size()));
  return -1;
}

// How far this process's peak resident memory rises above its resident
// memory while `work` runs, in bytes, the peak reset first through
// /proc/self/clear_refs (Linux 4.0 on); -1 where no reset is offered.
long long peak_growth(const std::function<void()>& work) {
  {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    if (!clear) return -1;
  }
  const long long before = status_kib("VmRSS:");
  if (before < 0 || status_kib("VmHWM:") > before + 1024) return -1;  // no reset
  work();
  return (status_kib("VmHWM:") - before) * 1024;
}

// Text a thousand times larger than its table: row k is "k<pad>,k % 3"
// with about 1 KiB of padding, then a line of spaces; every 1000th row is
// padded to 100 KiB instead, a line over a chunk of the reader.
std::string padded_rows(int rows) {
  std::string text;
  for (int k = 0; k < rows; ++k) {
    text += std::to_string(k) + std::string(k % 1000 == 0 ? 100000 : 1000, ' ') + "," +
            std::to_string(k % 3) + "\n";
    text += std::string(1000, ' ') + "\n";
  }
  return text;
}

}  // namespace

TEST_CASE("a gzip CSV is read as a stream: memory is its table, not its text") {
  // 50 MB of text (its table: 24000 rows of a feature and a target, 384
  // KB), compressed to about 100 KB: reading it costs the table and a
  // chunk, not the text (and a copy of it), which the reader held before.
  const int rows = 24000;
  const std::string path = temp_path("padded.csv.gz");
  {
    const std::string text = padded_rows(rows);
    REQUIRE(text.size() > 48000000);
    write_gzip(path, text);
  }
  gradsum::Table table;
  const long long growth = peak_growth([&] { table = gradsum::read_csv(path); });
  REQUIRE(table.num_rows == std::size_t(rows));
  bool same = table.num_features == 1;
  for (int k = 0; k < rows; ++k)
    same = same && table.features[std::size_t(k)] == k && table.targets[std::size_t(k)] == k % 3;
  CHECK_MESSAGE(same, "the streamed table is not rows k, k % 3");
  if (growth < 0)
    MESSAGE("skipped the memory bound: the kernel offers no reset of the peak (clear_refs)");
  else
    CHECK_MESSAGE(growth < 16 * 1024 * 1024, "reading 50 MB of text raised the peak by " << growth
                                                 << " bytes; its table is 384 KB");
  // LIBSVM: the same rows as "k % 3 1:k", comments padding them.
  {
    std::string text;
    for (int k = 0; k < rows; ++k)
      text += std::to_string(k % 3) + " 1:" + std::to_string(k) + " #" +
              std::string(k % 1000 == 0 ? 100000 : 2000, ' ') + "\n";
    write_gzip(path, text);
  }
  gradsum::Table sparse;
  const long long sparse_growth = peak_growth([&] { sparse = gradsum::read_libsvm(path); });
  REQUIRE(sparse.num_rows == std::size_t(rows));
  CHECK(sparse.features[std::size_t(rows - 1)] == rows - 1);
  CHECK(sparse.targets[std::size_t(rows - 1)] == (rows - 1) % 3);
  if (sparse_growth >= 0)
    CHECK_MESSAGE(sparse_growth < 16 * 1024 * 1024,
                  "reading 48 MB of LIBSVM text raised the peak by " << sparse_growth << " bytes");
  std::remove(path.c_str());
}

TEST_CASE("read_text_file: the whole text, bounded") {
  const std::string path = temp_path("text.gz");
  write_gzip(path, std::string(100000, 'x'));
  CHECK(gradsum::read_text_file(path) == std::string(100000, 'x'));
  CHECK(gradsum::read_text_file(path, 100000).size() == 100000);
  CHECK_THROWS_WITH_AS(gradsum::read_text_file(path, 99999),
                       (path + ": the text exceeds 99999 bytes (after decompression); "
                               "read_text_file's max_bytes bounds it: raise it to read a longer "
                               "text").c_str(),
                       gradsum::Error);
  CHECK(gradsum::default_max_text_bytes == (std::uint64_t(1) << 30));
  std::remove(path.c_str());
}

TEST_CASE("a gzip-compressed CSV reads as its plain text") {
  const std::string text = "a,b,y\n1,2,3\n4.5,-6,7\n";
  const std::string path = temp_path("table.csv.gz");
  write_gzip(path, text);
  const auto table = gradsum::read_csv(path);
  std::istringstream in(text);
  const auto plain = gradsum::parse_csv(in, "plain");
  CHECK(table.num_rows == 2);
  CHECK(table.features == plain.features);
  CHECK(table.targets == plain.targets);
  CHECK(table.header == plain.header);

  // Errors inside a compressed file still name file:line:column.
  write_gzip(path, "1,2,3\n4,x,6\n");
  CHECK_THROWS_WITH(gradsum::read_csv(path),
                    (path + ":2:2: non-numeric field 'x' (expected a number)").c_str());

  // A truncated archive is an error, not a shorter table.
  write_gzip(path, std::string(5000, '1') + ",2\n");
  std::ifstream whole(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(whole)), std::istreambuf_iterator<char>());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), 20);
  std::string message;
  try {
    gradsum::read_csv(path);
  } catch (const gradsum::Error& e) {
    message = e.what();
  }
  CHECK(message.rfind(path + ": the gzip data is corrupted or truncated", 0) == 0);
  std::remove(path.c_str());
}

TEST_CASE("Debian's diabetes_data_raw.csv.gz: 442 rows of 10 columns") {
  const std::string path =
      "/usr/lib/python3/dist-packages/sklearn/datasets/data/diabetes_data_raw.csv.gz";
  gradsum::CsvOptions options;
  options.delimiter = ' ';
  const auto table = gradsum::read_csv(path, options);
  CHECK(table.num_rows == 442);
  CHECK(table.num_features == 9);  // the last of 10 columns is read as the target
  // First row of the scikit-learn file: 59 2 32.1 101 157 93.2 38 4 4.8598 87
  CHECK(table.feature(0, 0) == 59);
  CHECK(table.feature(0, 2) == 32.1);
  CHECK(table.targets[0] == 87);
}

TEST_CASE("LIBSVM rows become dense rows") {
  const auto t = libsvm("+1 1:0.5 3:-2 # comment\n\n-1 2:4\r\n0\n");
  CHECK(t.num_rows == 3);
  CHECK(t.num_features == 3);
  CHECK(t.targets == std::vector<double>{1, -1, 0});
  CHECK(t.features == std::vector<double>{0.5, 0, -2, 0, 4, 0, 0, 0, 0});
  gradsum::LibsvmOptions wide;
  wide.num_features = 5;
  CHECK(libsvm("1 2:1\n", wide).num_features == 5);
  gradsum::LibsvmOptions zero;
  zero.zero_based = true;
  CHECK(libsvm("1 0:7 2:1\n", zero).features == std::vector<double>{7, 0, 1});
  const std::string path = temp_path("data.svm.gz");
  write_gzip(path, "2 1:1.5\n");
  CHECK(gradsum::read_libsvm(path).features == std::vector<double>{1.5});
  std::remove(path.c_str());
}

TEST_CASE("every malformed LIBSVM input is rejected with file:line:column") {
  CHECK(libsvm_error("") == "t.svm: no data rows");
  CHECK(libsvm_error("# only a comment\n\n") == "t.svm: no data rows");
  CHECK(libsvm_error("1 1:2\nyes 1:2\n") ==
        "t.svm:2:1: non-numeric field 'yes' (expected a number)");
  CHECK(libsvm_error("1 1:2 3\n") == "t.svm:1:3: expected INDEX:VALUE, got '3'");
  CHECK(libsvm_error("1 a:2\n") == "t.svm:1:2: feature index 'a' is not an integer >= 1");
  CHECK(libsvm_error("1 0:2\n") == "t.svm:1:2: feature index '0' is not an integer >= 1");
  CHECK(libsvm_error("1 :2\n") == "t.svm:1:2: feature index '' is not an integer >= 1");
  CHECK(libsvm_error("1 3:1 2:1\n") ==
        "t.svm:1:3: feature index 2 does not follow the previous index 3 (indices must increase "
        "along a line)");
  CHECK(libsvm_error("1 2:1 2:1\n") ==
        "t.svm:1:3: feature index 2 does not follow the previous index 2 (indices must increase "
        "along a line)");
  CHECK(libsvm_error("1 1:x\n") == "t.svm:1:2: non-numeric field 'x' (expected a number)");
  CHECK(libsvm_error("1 1:\n") == "t.svm:1:2: empty field (expected a number)");
  CHECK(libsvm_error("1 1:nan\n") ==
        "t.svm:1:2: non-finite value 'nan' (the data must be finite)");
  CHECK(libsvm_error("inf 1:1\n") ==
        "t.svm:1:1: non-finite value 'inf' (the data must be finite)");
  CHECK(libsvm_error("1 1:1e999\n") ==
        "t.svm:1:2: value '1e999' is out of range for a double (the data must be finite)");
  gradsum::LibsvmOptions allow;
  allow.allow_nonfinite = true;
  CHECK(std::isnan(libsvm("1 1:nan\n", allow).features[0]));
  gradsum::LibsvmOptions narrow;
  narrow.num_features = 2;
  CHECK(libsvm_error("1 1:1\n0 3:1\n", narrow) ==
        "t.svm:2:2: feature index 3 is beyond the 2 features expected");
  gradsum::LibsvmOptions classes;
  classes.num_classes = 3;
  CHECK(libsvm_error("0 1:1\n3 1:1\n", classes) ==
        "t.svm:2:1: label '3' is out of range for 3 classes (expected an integer in [0, 3))");
  CHECK(libsvm_error("1.5 1:1\n", classes) ==
        "t.svm:1:1: label '1.5' is out of range for 3 classes (expected an integer in [0, 3))");
  CHECK(libsvm_error("-1 1:1\n", classes) ==
        "t.svm:1:1: label '-1' is out of range for 3 classes (expected an integer in [0, 3))");
  gradsum::LibsvmOptions tiny;
  tiny.max_values = 10;
  CHECK(libsvm_error("1 1:1\n1 11:1\n", tiny) ==
        "t.svm:2: 2 rows x 11 features exceed the 10 values a table may hold "
        "(LibsvmOptions::max_values, 8 bytes a value; raise it to read a larger table)");
  // Checked after every line: 10 values hold 5 rows of 2 features.
  CHECK(libsvm_error("1 2:1\n1 1:1\n0\n0\n0\n0\n0\n", tiny) ==
        "t.svm:6: 6 rows x 2 features exceed the 10 values a table may hold "
        "(LibsvmOptions::max_values, 8 bytes a value; raise it to read a larger table)");
  tiny.max_line_bytes = 8;
  CHECK(libsvm_error("1 1:1234\n1 1:12345\n", tiny) ==
        "t.svm:2: the line is longer than 8 bytes (LibsvmOptions::max_line_bytes; raise it to "
        "read longer lines)");
  CHECK_THROWS_WITH(gradsum::read_libsvm(temp_path("missing.svm")),
                    (temp_path("missing.svm") +
                     ": cannot open for reading: No such file or directory").c_str());
}

TEST_CASE("seeded train/test split: a partition of the rows, fixed by the seed") {
  gradsum::Table t;
  t.num_rows = 50;
  t.num_features = 2;
  for (int i = 0; i < 50; ++i) {
    t.features.push_back(i);
    t.features.push_back(-i);
    t.targets.push_back(i % 3);
  }
  const auto [train, test] = gradsum::train_test_split(t, 0.2, 17);
  CHECK(test.num_rows == 10);
  CHECK(train.num_rows == 40);
  std::set<double> seen;
  for (const auto* part : {&train, &test})
    for (std::size_t i = 0; i < part->num_rows; ++i) {
      const double row = part->features[2 * i];
      CHECK(part->features[2 * i + 1] == -row);  // rows stay whole
      CHECK(part->targets[i] == double(int(row) % 3));
      seen.insert(row);
    }
  CHECK(seen.size() == 50);
  CHECK(std::is_sorted(test.features.begin(), test.features.end(),
                       [](double a, double b) { return std::fabs(a) < std::fabs(b); }));
  const auto again = gradsum::train_test_split(t, 0.2, 17);
  CHECK(again.second.features == test.features);
  CHECK(gradsum::train_test_split(t, 0.2, 18).second.features != test.features);
  CHECK_THROWS_WITH(gradsum::train_test_split(t, 1.0, 1),
                    "gradsum::train_test_split: test_fraction must be in [0, 1), got 1");
  CHECK_THROWS_WITH(gradsum::train_test_split(t, 0.001, 1),
                    "gradsum::train_test_split: a test fraction of 0.001 of 50 rows leaves 0 test "
                    "rows and 50 training rows; both must be non-empty");
}

TEST_CASE("the all-rank scaler on one process equals StandardScaler::fit") {
  const auto table = gradsum::read_csv("/usr/lib/python3/dist-packages/sklearn/datasets/data/wine_data.csv");
  const auto expected = gradsum::StandardScaler::fit(table);
  gradsum::Local local;
  const auto scaler = gradsum::fit_global_scaler(table, local);
  REQUIRE(scaler.mean.size() == expected.mean.size());
  for (std::size_t j = 0; j < scaler.mean.size(); ++j) {
    CHECK(scaler.mean[j] == doctest::Approx(expected.mean[j]).epsilon(1e-14));
    CHECK(scaler.scale[j] == doctest::Approx(expected.scale[j]).epsilon(1e-13));
  }
}
