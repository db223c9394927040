// SPDX-License-Identifier: Apache-2.0
// Tests of the host CSV reader and the feature scaler.

#include <doctest/doctest.h>

#include <gradsum/data/csv.hpp>
#include <gradsum/data/scaling.hpp>
#include <gradsum/data/split.hpp>

#include <cmath>
#include <cstddef>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace {

gradsum::Table parse(const std::string& text,
                     const gradsum::CsvOptions& options = {}) {
  std::istringstream in(text);
  return gradsum::parse_csv(in, "t.csv", options);
}

gradsum::CsvOptions with_header(gradsum::Header h) {
  gradsum::CsvOptions o;
  o.header = h;
  return o;
}

gradsum::CsvOptions with_target(int t) {
  gradsum::CsvOptions o;
  o.target_column = t;
  return o;
}

gradsum::CsvOptions with_delimiter(char c) {
  gradsum::CsvOptions o;
  o.delimiter = c;
  return o;
}

}  // namespace

TEST_CASE("csv: small table with the target last") {
  const auto t = parse("1,2,3\n4.5,-5e-1,0\n");
  CHECK(t.source == "t.csv");
  CHECK(t.header.empty());
  REQUIRE(t.num_rows == 2);
  REQUIRE(t.num_features == 2);
  CHECK(t.features == std::vector<double>{1, 2, 4.5, -0.5});
  CHECK(t.targets == std::vector<double>{3, 0});
  CHECK(t.feature(1, 0) == 4.5);
  CHECK(t.feature(1, 1) == -0.5);
  CHECK_THROWS_AS(t.feature(2, 0), gradsum::Error);
  CHECK_THROWS_AS(t.feature(0, 2), gradsum::Error);
}

TEST_CASE("csv: no trailing newline, trimmed fields, single row") {
  const auto t = parse("  1 ,\t2\t");
  REQUIRE(t.num_rows == 1);
  CHECK(t.features == std::vector<double>{1});
  CHECK(t.targets == std::vector<double>{2});
}

TEST_CASE("csv: automatic header detection") {
  SUBCASE("numeric first line is data") {
    const auto t = parse("3,2\n1,0\n");
    CHECK(t.header.empty());
    CHECK(t.num_rows == 2);
    CHECK(t.features == std::vector<double>{3, 1});
  }
  SUBCASE("sklearn-style first line is a header of another width") {
    const auto t = parse("3,2,a,b\n1,2,0\n3,4,1\n5,6,0\n");
    CHECK(t.header == std::vector<std::string>{"3", "2", "a", "b"});
    CHECK(t.num_rows == 3);
    CHECK(t.num_features == 2);
    CHECK(t.targets == std::vector<double>{0, 1, 0});
  }
  SUBCASE("named columns, pandas-style empty index name") {
    const auto t = parse(" ,x, y \n0,1,2\n");
    CHECK(t.header == std::vector<std::string>{"", "x", "y"});
    CHECK(t.num_rows == 1);
  }
  SUBCASE("header only") {
    CHECK_THROWS_WITH_AS(parse("x,y\n\n"), "t.csv: no data rows",
                         gradsum::Error);
  }
}

TEST_CASE("csv: explicit header modes") {
  SUBCASE("present: a numeric first line is still the header") {
    const auto t = parse("1,2\n3,4\n", with_header(gradsum::Header::present));
    CHECK(t.header == std::vector<std::string>{"1", "2"});
    CHECK(t.num_rows == 1);
    CHECK(t.targets == std::vector<double>{4});
  }
  SUBCASE("absent: a text first line is bad data") {
    CHECK_THROWS_WITH_AS(parse("\nx,1\n3,4\n",
                               with_header(gradsum::Header::absent)),
                         "t.csv:2:1: non-numeric field 'x' (expected a number)",
                         gradsum::Error);
  }
}

TEST_CASE("csv: target column") {
  const std::string text = "1,2,3\n4,5,6\n";
  SUBCASE("first") {
    const auto t = parse(text, with_target(0));
    CHECK(t.targets == std::vector<double>{1, 4});
    CHECK(t.features == std::vector<double>{2, 3, 5, 6});
  }
  SUBCASE("middle") {
    const auto t = parse(text, with_target(1));
    CHECK(t.targets == std::vector<double>{2, 5});
    CHECK(t.features == std::vector<double>{1, 3, 4, 6});
  }
  SUBCASE("last, by index and by -1") {
    CHECK(parse(text, with_target(2)).targets == std::vector<double>{3, 6});
    CHECK(parse(text, with_target(-1)).targets == std::vector<double>{3, 6});
  }
  SUBCASE("out of range, reported on the first data row") {
    CHECK_THROWS_WITH_AS(parse("a,b\n\n1,2,3,4,5\n", with_target(7)),
                         "t.csv:3: target column 7 is out of range for 5 "
                         "columns",
                         gradsum::Error);
  }
  SUBCASE("negative other than -1") {
    CHECK_THROWS_WITH_AS(parse(text, with_target(-2)),
                         doctest::Contains("t.csv: target_column -2 is "
                                           "invalid"),
                         gradsum::Error);
  }
}

TEST_CASE("csv: whitespace delimiter") {
  const auto t = parse("  1 \t 2   3\t\n\t4 5 6  \n", with_delimiter(' '));
  REQUIRE(t.num_rows == 2);
  CHECK(t.features == std::vector<double>{1, 2, 4, 5});
  CHECK(t.targets == std::vector<double>{3, 6});
  CHECK_THROWS_WITH_AS(parse("1 2 3\n4  5\n", with_delimiter(' ')),
                       "t.csv:2:1: row has 2 fields, expected 3 (as on line 1)",
                       gradsum::Error);
}

TEST_CASE("csv: other delimiters") {
  const auto t = parse("1;2\n3;4\n", with_delimiter(';'));
  CHECK(t.targets == std::vector<double>{2, 4});
  const auto u = parse("1\t2\n3\t 4\n", with_delimiter('\t'));
  CHECK(u.targets == std::vector<double>{2, 4});
  CHECK_THROWS_WITH_AS(parse("1\n", with_delimiter('\n')),
                       doctest::Contains("t.csv: delimiter '\\x0a' is invalid"),
                       gradsum::Error);
  CHECK_THROWS_AS(parse("1.2.3\n", with_delimiter('.')), gradsum::Error);
}

TEST_CASE("csv: CRLF line endings, blank lines and a byte order mark") {
  const auto t =
      parse("\xEF\xBB\xBFh1,h2\r\n\r\n  \t \r\n1,2\r\n\n3,4\r\n\r\n");
  CHECK(t.header == std::vector<std::string>{"h1", "h2"});
  REQUIRE(t.num_rows == 2);
  CHECK(t.features == std::vector<double>{1, 3});
  CHECK(t.targets == std::vector<double>{2, 4});
  // Line numbers count the blank lines.
  CHECK_THROWS_WITH_AS(parse("1,2\r\n\r\n3,x\r\n"),
                       "t.csv:3:2: non-numeric field 'x' (expected a number)",
                       gradsum::Error);
}

TEST_CASE("csv: field errors carry line and field number") {
  CHECK_THROWS_WITH_AS(parse("1,2\n3,4\n5,abc\n"),
                       "t.csv:3:2: non-numeric field 'abc' (expected a number)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,2,3\n4,,6\n"),
                       "t.csv:2:2: empty field (expected a number)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,2\n3, nan\n"),
                       "t.csv:2:2: non-finite value 'nan' (the data must be "
                       "finite)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,2\n-inf,4\n"),
                       doctest::Contains("t.csv:2:1: non-finite value '-inf'"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,2\n3,1e999\n"),
                       doctest::Contains("t.csv:2:2: value '1e999' is out of "
                                         "range"),
                       gradsum::Error);
  // A number followed by junk is not a number.
  CHECK_THROWS_WITH_AS(parse("1,2\n3,4x\n"),
                       doctest::Contains("t.csv:2:2: non-numeric field '4x'"),
                       gradsum::Error);
  // strtod would skip a leading vertical tab; the reader does not.
  CHECK_THROWS_WITH_AS(parse("1,2\n3,\v4\n"),
                       doctest::Contains("t.csv:2:2: non-numeric field"),
                       gradsum::Error);
  // Tiny values that underflow are finite and accepted.
  CHECK(parse("1,1e-400\n").targets.size() == 1);
}

TEST_CASE("csv: ragged rows are reported at column 1") {
  CHECK_THROWS_WITH_AS(parse("a,b,c\n1,2,3,4\n\n5,6,7,8\n1,2,3\n"),
                       "t.csv:5:1: row has 3 fields, expected 4 (as on line 2)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,2\n3,4,5\n"),
                       "t.csv:2:1: row has 3 fields, expected 2 (as on line 1)",
                       gradsum::Error);
}

TEST_CASE("csv: file-level errors") {
  CHECK_THROWS_WITH_AS(parse(""), "t.csv: no data rows", gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("\n \n\r\n"), "t.csv: no data rows",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("x\n1\n2\n"),
                       doctest::Contains("t.csv:2: row has 1 field, but at "
                                         "least 2 columns are needed"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(
      gradsum::read_csv("/nonexistent/gradsum/none.csv"),
      "/nonexistent/gradsum/none.csv: cannot open for reading: No such file "
      "or directory",
      gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::read_csv("/"),
                       doctest::Contains("/: cannot open for reading: Is a "
                                         "directory"),
                       gradsum::Error);
}

TEST_CASE("csv: hostile input") {
  SUBCASE("odd bytes are reported, escaped and shortened") {
    const std::string junk("1,\x01\xff\0z", 6);
    try {
      parse("1,2\n" + junk + "\n");
      FAIL("expected an error");
    } catch (const gradsum::Error& e) {
      CHECK(std::string(e.what()) ==
            "t.csv:2:2: non-numeric field '\\x01\\xff\\x00z' (expected a "
            "number)");
    }
    const std::string big(100000, 'q');
    try {
      parse("1,2\n3," + big + "\n");
      FAIL("expected an error");
    } catch (const gradsum::Error& e) {
      CHECK(std::string(e.what()).size() < 200);
    }
  }
  SUBCASE("every single byte as a field") {
    for (int b = 0; b < 256; ++b) {
      const std::string text = std::string("1,2\n3,") +
                               static_cast<char>(b) + "\n";
      try {
        (void)parse(text);
      } catch (const gradsum::Error&) {
      }
    }
  }
  SUBCASE("a million columns") {
    const std::size_t n = 1000000;
    std::string row;
    row.reserve(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      row += i + 1 < n ? "1," : "0";
    }
    const auto t = parse(row + "\n" + row + "\n");
    CHECK(t.num_rows == 2);
    CHECK(t.num_features == n - 1);
    CHECK(t.targets == std::vector<double>{0, 0});
    CHECK_THROWS_WITH_AS(parse(row + "\n" + row + ",1\n"),
                         doctest::Contains("t.csv:2:1: row has 1000001 "
                                           "fields, expected 1000000"),
                         gradsum::Error);
    CHECK_THROWS_WITH_AS(parse(std::string(n, ','),
                               with_header(gradsum::Header::absent)),
                         "t.csv:1:1: empty field (expected a number)",
                         gradsum::Error);
  }
}

TEST_CASE("csv: scikit-learn breast cancer data") {
  const std::string path =
      "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    MESSAGE("skipped: " << path << " is absent");
    return;
  }
  const auto t = gradsum::read_csv(path);
  CHECK(t.source == path);
  CHECK(t.header ==
        std::vector<std::string>{"569", "30", "malignant", "benign"});
  REQUIRE(t.num_rows == 569);
  REQUIRE(t.num_features == 30);
  CHECK(t.features.size() == 569u * 30u);
  CHECK(t.feature(0, 0) == 17.99);
  std::size_t bad_targets = 0;
  for (const double y : t.targets) bad_targets += (y != 0.0 && y != 1.0);
  CHECK(bad_targets == 0);
}

namespace {

// Population mean and standard deviation of column j, computed plainly.
void column_stats(const gradsum::Table& t, std::size_t j, double& mean,
                  double& sd) {
  long double s = 0;
  for (std::size_t i = 0; i < t.num_rows; ++i) s += t.feature(i, j);
  const long double m = s / t.num_rows;
  long double q = 0;
  for (std::size_t i = 0; i < t.num_rows; ++i) {
    const long double e = t.feature(i, j) - m;
    q += e * e;
  }
  mean = static_cast<double>(m);
  sd = static_cast<double>(std::sqrt(q / t.num_rows));
}

}  // namespace

TEST_CASE("scaler: standardizes to mean 0 and population deviation 1") {
  auto t = parse("1,100,7,0\n2,300,7,1\n4,200,7,0\n8,1e6,7,1\n-3,5,7,0\n");
  const auto scaler = gradsum::StandardScaler::fit(t);
  REQUIRE(scaler.mean.size() == 3);
  REQUIRE(scaler.scale.size() == 3);
  double m = 0, sd = 0;
  column_stats(t, 0, m, sd);
  CHECK(scaler.mean[0] == doctest::Approx(12.0 / 5));
  CHECK(scaler.scale[0] == doctest::Approx(sd));
  CHECK(scaler.scale[2] == 1.0);  // constant column

  const auto targets = t.targets;
  scaler.transform(t);
  CHECK(t.targets == targets);
  for (std::size_t j = 0; j < 2; ++j) {
    column_stats(t, j, m, sd);
    CHECK(std::fabs(m) < 1e-12);
    CHECK(sd == doctest::Approx(1.0).epsilon(1e-12));
  }
  for (std::size_t i = 0; i < t.num_rows; ++i) CHECK(t.feature(i, 2) == 0.0);
}

TEST_CASE("scaler: constant columns map to exactly 0") {
  auto t = parse("0.1,0.1\n0.1,0.2\n0.1,0.3\n");
  const auto scaler = gradsum::StandardScaler::fit(t);
  CHECK(scaler.mean[0] == 0.1);
  CHECK(scaler.scale[0] == 1.0);
  scaler.transform(t);
  for (std::size_t i = 0; i < 3; ++i) CHECK(t.feature(i, 0) == 0.0);
}

TEST_CASE("scaler: a large offset and extreme magnitudes") {
  auto t = parse("1000000001,1e308,0\n1000000002,-1e308,0\n"
                 "1000000003,1e308,0\n1000000004,-1e308,0\n");
  const auto scaler = gradsum::StandardScaler::fit(t);
  CHECK(scaler.mean[0] == 1000000002.5);
  CHECK(scaler.scale[0] == doctest::Approx(std::sqrt(1.25)));
  CHECK(scaler.mean[1] == 0.0);
  CHECK(scaler.scale[1] == doctest::Approx(1e308));
  scaler.transform(t);
  CHECK(t.feature(0, 0) == doctest::Approx(-1.5 / std::sqrt(1.25)));
  CHECK(t.feature(0, 1) == doctest::Approx(1.0));
  CHECK(t.feature(1, 1) == doctest::Approx(-1.0));
}

TEST_CASE("scaler: errors") {
  gradsum::Table empty;
  empty.num_features = 3;
  empty.source = "e.csv";
  CHECK_THROWS_WITH_AS(gradsum::StandardScaler::fit(empty),
                       doctest::Contains("table 'e.csv' has no rows"),
                       gradsum::Error);

  const auto scaler = gradsum::StandardScaler::fit(parse("1,2,3\n4,5,6\n"));
  auto wide = parse("1,2,3,4\n5,6,7,8\n");
  CHECK_THROWS_WITH_AS(scaler.transform(wide),
                       "gradsum::StandardScaler::transform: table 't.csv' has "
                       "3 features, but the scaler was fit on 2 features",
                       gradsum::Error);

  auto broken = parse("1,2,3\n4,5,6\n");
  broken.features.pop_back();
  CHECK_THROWS_AS(scaler.transform(broken), gradsum::Error);
  CHECK_THROWS_AS(gradsum::StandardScaler::fit(broken), gradsum::Error);
}

TEST_CASE("scaler: scikit-learn breast cancer data") {
  const std::string path =
      "/usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    MESSAGE("skipped: " << path << " is absent");
    return;
  }
  auto t = gradsum::read_csv(path);
  gradsum::StandardScaler::fit(t).transform(t);
  for (std::size_t j = 0; j < t.num_features; ++j) {
    double m = 0, sd = 0;
    column_stats(t, j, m, sd);
    CHECK(std::fabs(m) < 1e-12);
    CHECK(sd == doctest::Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("CSV: class labels checked where they are, non-finite values only when allowed") {
  gradsum::CsvOptions options;
  options.header = gradsum::Header::absent;
  options.num_classes = 3;
  auto parse = [&](const std::string& text) {
    std::istringstream in(text);
    return gradsum::parse_csv(in, "labels.csv", options);
  };
  CHECK(parse("1,0\n2,2\n").targets == std::vector<double>{0, 2});
  CHECK_THROWS_WITH_AS(parse("1,0\n2,3\n"),
                       "labels.csv:2:2: label '3' is not a class (expected an integer in [0, 3))",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,1.5\n"),
                       "labels.csv:1:2: label '1.5' is not a class (expected an integer in [0, 3))",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,-1\n"),
                       "labels.csv:1:2: label '-1' is not a class (expected an integer in [0, 3))",
                       gradsum::Error);
  options.num_classes = 0;
  CHECK_THROWS_WITH_AS(parse("nan,1\n"),
                       doctest::Contains("labels.csv:1:1: non-finite value 'nan'"), gradsum::Error);
  options.allow_nonfinite = true;
  const auto t = parse("nan,1\ninf,2\n");
  CHECK(std::isnan(t.features[0]));
  CHECK(std::isinf(t.features[1]));
}

TEST_CASE("CSV: class names in the target column become classes in sorted order") {
  gradsum::CsvOptions options;
  options.class_names = true;
  // Hand-sorted: "setosa" < "versicolor" < "virginica" byte-wise.
  const auto t = parse("5.1,3.5,setosa\n7.0,3.2,versicolor\n6.3,3.3,virginica\n4.9,3.0,setosa\n",
                       options);
  REQUIRE(t.num_rows == 4);
  CHECK(t.header.empty());  // a non-numeric target alone is no header
  CHECK(t.features == std::vector<double>{5.1, 3.5, 7.0, 3.2, 6.3, 3.3, 4.9, 3.0});
  CHECK(t.class_names == std::vector<std::string>{"setosa", "versicolor", "virginica"});
  CHECK(t.targets == std::vector<double>{0, 1, 2, 0});
  // The order of the rows does not change the mapping; byte order puts
  // upper case first.
  const auto r = parse("1,b\n2,a\n3,B\n4,a\n", options);
  CHECK(r.class_names == std::vector<std::string>{"B", "a", "b"});
  CHECK(r.targets == std::vector<double>{2, 1, 0, 1});
  const auto s = parse("4,a\n3,B\n2,a\n1,b\n", options);
  CHECK(s.class_names == r.class_names);
  CHECK(s.targets == std::vector<double>{1, 0, 1, 2});
  // A header is still recognized by its feature fields, and a target
  // column elsewhere holds names too.
  gradsum::CsvOptions first = options;
  first.target_column = 0;
  const auto h = parse("species,x\nno,1\nyes,2\n", first);
  CHECK(h.header == std::vector<std::string>{"species", "x"});
  CHECK(h.class_names == std::vector<std::string>{"no", "yes"});
  CHECK(h.targets == std::vector<double>{0, 1});
  CHECK(h.features == std::vector<double>{1, 2});
  // Both sides of a split keep the names their targets stand for.
  const auto [train, test] = gradsum::train_test_split(t, 0.5, 1);
  CHECK(train.class_names == t.class_names);
  CHECK(test.class_names == t.class_names);
  // Numbers stay numbers, with no names.
  const auto n = parse("1,0\n2,1\n", options);
  CHECK(n.class_names.empty());
  CHECK(n.targets == std::vector<double>{0, 1});
}

TEST_CASE("CSV: class names are refused where they do not fit") {
  gradsum::CsvOptions options;
  options.class_names = true;
  CHECK_THROWS_WITH_AS(parse("1,setosa\n2,versicolor\n3,2\n", options),
                       "t.csv:3:2: number '2' in a target column of class names (line 1 holds "
                       "'setosa'; the target column must hold only numbers or only class names)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,0\n2,1\n\n3,virginica\n", options),
                       "t.csv:4:2: class name 'virginica' in a target column of numbers (line 1 "
                       "holds a number; the target column must hold only numbers or only class "
                       "names)",
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(parse("1,a\n2,\n", options), "t.csv:2:2: empty field (expected a class name)",
                       gradsum::Error);
  // Features are numbers, class names or not.
  CHECK_THROWS_WITH_AS(parse("1,2,a\n3,x,b\n", options),
                       "t.csv:2:2: non-numeric field 'x' (expected a number)", gradsum::Error);
  options.num_classes = 2;
  CHECK_THROWS_WITH_AS(parse("1,a\n2,b\n3,c\n", options),
                       "t.csv: the target column holds 3 class names, more than the 2 classes "
                       "expected",
                       gradsum::Error);
  // Without the option, names are what they always were: not numbers.
  CHECK_THROWS_WITH_AS(parse("x,1\n1,a\n"), "t.csv:2:2: non-numeric field 'a' (expected a number)",
                       gradsum::Error);
}
