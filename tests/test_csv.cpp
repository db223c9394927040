// SPDX-License-Identifier: Apache-2.0
// Tests of the host CSV reader and the feature scaler.

#include <doctest/doctest.h>

#include <gradsum/data/csv.hpp>
#include <gradsum/data/scaling.hpp>
#include <gradsum/data/split.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <new>
#include <sstream>
#include <streambuf>
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

TEST_CASE("CSV: class names with control characters or bytes that are not UTF-8 are refused") {
  gradsum::CsvOptions options;
  options.class_names = true;
  auto error = [&](const std::string& text) {
    try {
      parse(text, options);
    } catch (const gradsum::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string rule =
      " (class names are printed as they are, so they must be UTF-8 text without control "
      "characters)";
  // An xterm title change (ESC ] 0 ; ... BEL) on the second row.
  CHECK(error("1,a\n2,a\x1b]0;pwned\x07\n") ==
        "t.csv:2:2: class name 'a\\x1b]0;pwned\\x07' holds control character '\\x1b' at byte 2" +
            rule);
  CHECK(error("1,a\rb\n") ==
        "t.csv:1:2: class name 'a\\x0db' holds control character '\\x0d' at byte 2" + rule);
  CHECK(error("1,ding\x07\n") ==
        "t.csv:1:2: class name 'ding\\x07' holds control character '\\x07' at byte 5" + rule);
  CHECK(error("1,x\x7f\n") ==
        "t.csv:1:2: class name 'x\\x7f' holds control character '\\x7f' at byte 2" + rule);
  // U+009B, the C1 control sequence introducer, encoded in UTF-8.
  CHECK(error("1,\xc2\x9b" "2J\n") ==
        "t.csv:1:2: class name '\\xc2\\x9b2J' holds control character '\\xc2\\x9b' at byte 1" +
            rule);
  // A lone 0x9b, the same introducer to a terminal in an 8-bit mode.
  CHECK(error("1,x\x9b" "2J\n") ==
        "t.csv:1:2: class name 'x\\x9b2J' holds byte '\\x9b', which is not UTF-8 text, at byte 2" +
            rule);
  CHECK(error("1,\xe2\x82\n") ==  // a truncated three-byte sequence
        "t.csv:1:2: class name '\\xe2\\x82' holds byte '\\xe2', which is not UTF-8 text, at byte 1" +
            rule);
  CHECK(error("1,\xc0\xaf\n") ==  // an overlong '/'
        "t.csv:1:2: class name '\\xc0\\xaf' holds byte '\\xc0', which is not UTF-8 text, at byte 1" +
            rule);
  // A tab inside a name (the delimiter is ','), after a valid first name.
  CHECK(error("1,ok\n2,a\tb\n") ==
        "t.csv:2:2: class name 'a\\x09b' holds control character '\\x09' at byte 2" + rule);
  // UTF-8 text of any script is a name: é (2 bytes), 日本 (3 each), 😀 (4).
  const auto t = parse("1,caf\xc3\xa9\n2,\xe6\x97\xa5\xe6\x9c\xac\n3,\xf0\x9f\x98\x80\n", options);
  CHECK(t.class_names ==
        std::vector<std::string>{"caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x98\x80"});
}

TEST_CASE("CSV: a target rule is checked where the target is, by line and column") {
  gradsum::CsvOptions options;
  options.target_rule = {[](double y) { return y >= 0 && y <= 1; }, "a probability in [0, 1]"};
  CHECK(parse("1,0\n2,0.25\n3,1\n", options).targets == std::vector<double>{0, 0.25, 1});
  CHECK_THROWS_WITH_AS(parse("1,0\n\n2,1.5\n", options),
                       "t.csv:3:2: target '1.5' is invalid (expected a probability in [0, 1])",
                       gradsum::Error);
  options.target_column = 0;
  CHECK_THROWS_WITH_AS(parse("x,y\n-1,2\n", options),
                       "t.csv:2:1: target '-1' is invalid (expected a probability in [0, 1])",
                       gradsum::Error);
  // Class names are numbered, not checked against the rule.
  options.target_column = -1;
  options.class_names = true;
  CHECK(parse("1,a\n2,b\n3,c\n", options).targets == std::vector<double>{0, 1, 2});
}

TEST_CASE("CSV: what one input may cost: max_values and max_line_bytes") {
  gradsum::CsvOptions options;
  CHECK(options.max_values == (std::int64_t(1) << 28));      // 2 GiB of values, documented
  CHECK(options.max_line_bytes == (std::int64_t(1) << 24));  // 16 MiB, documented
  // 2 features a row: 4 values hold 2 rows; the third row, on line 4 (a
  // header and a blank line before), is refused.
  options.max_values = 4;
  CHECK(parse("1,2,0\n3,4,1\n", options).num_rows == 2);
  CHECK_THROWS_WITH_AS(parse("a,b,y\n1,2,0\n\n3,4,1\n5,6,0\n", options),
                       "t.csv:5: 3 rows x 2 features exceed the 4 values a table may hold "
                       "(CsvOptions::max_values, 8 bytes a value; raise it to read a larger table)",
                       gradsum::Error);
  // A distinct class name of n bytes counts as 16 + n/8 values: two names
  // of 8 bytes take 34, three rows of one feature 3 more.
  options.class_names = true;
  options.max_values = 37;
  CHECK(parse("1,abcdefgh\n2,bcdefghi\n3,abcdefgh\n", options).num_rows == 3);
  options.max_values = 36;
  CHECK_THROWS_WITH_AS(parse("1,abcdefgh\n2,bcdefghi\n3,abcdefgh\n", options),
                       doctest::Contains("t.csv:3: 3 rows x 1 features and class names worth 34 "
                                         "values exceed the 36 values"),
                       gradsum::Error);
  // Lines: max_line_bytes is read, one byte more is refused, also when
  // the line spans the reader's chunks (64 KiB).
  gradsum::CsvOptions lines;
  lines.max_line_bytes = 6;  // "1,2,3\r": the '\r' of a CRLF counts, the '\n' does not
  CHECK(parse("1,2,3\r\n4,5,6", lines).num_rows == 2);
  lines.max_line_bytes = 5;
  CHECK_THROWS_WITH_AS(parse("1,2,3\n4,5,67\n", lines),
                       "t.csv:2: the line is longer than 5 bytes (CsvOptions::max_line_bytes; "
                       "raise it to read longer lines)",
                       gradsum::Error);
  const std::string wide = "1" + std::string(199996, ' ') + ",0\n";  // 199999 bytes and '\n'
  lines.max_line_bytes = 199999;
  const auto t = parse(wide + wide, lines);
  CHECK(t.features == std::vector<double>{1, 1});
  lines.max_line_bytes = 199998;
  CHECK_THROWS_WITH_AS(parse(wide + wide, lines),
                       doctest::Contains("t.csv:1: the line is longer than 199998 bytes"),
                       gradsum::Error);
  lines.max_line_bytes = 0;
  CHECK_THROWS_WITH_AS(parse("1,2\n", lines),
                       "t.csv: CsvOptions::max_line_bytes 0 is invalid (expected a positive "
                       "number of bytes)",
                       gradsum::Error);
}

namespace {

// A stream buffer of lines "1,2", 64 KiB of them (a chunk of the reader)
// at a time, whose third refill fails as an allocation would.
class FailingBuffer : public std::streambuf {
 protected:
  int_type underflow() override {
    if (++fills_ == 3) throw std::bad_alloc();
    text_.clear();
    for (int i = 0; i < 16384; ++i) text_ += "1,2\n";
    setg(&text_[0], &text_[0], &text_[0] + text_.size());
    return traits_type::to_int_type(text_[0]);
  }

 private:
  int fills_ = 0;
  std::string text_;
};

}  // namespace

TEST_CASE("CSV: running out of memory while reading is an error naming the source and line") {
  FailingBuffer buffer;
  std::istream in(&buffer);
  // Two chunks read: 32768 rows of one feature and a target, 16 bytes each.
  CHECK_THROWS_WITH_AS(gradsum::parse_csv(in, "big.csv"),
                       "big.csv:32768: out of memory while reading, holding 32768 rows x 1 "
                       "features (524288 bytes of values); lower CsvOptions::max_values so that such a file is "
                       "refused before memory runs out",
                       gradsum::Error);
}
