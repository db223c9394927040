// SPDX-License-Identifier: Apache-2.0
// Text as data: the vocabulary is the sorted distinct bytes; windows and
// targets at both ends of a text; the full batch's stride and its dropped
// partial window; seeded offsets; short, empty and foreign-byte texts are
// errors that say where.

#include "file_helpers.hpp"
#include "test_helpers.hpp"

#include <gradsum/data/text.hpp>

#include <string>
#include <vector>

using gradsum::CharVocabulary;
using gradsum::TextWindows;

TEST_CASE("text: the vocabulary is the sorted distinct bytes, and ids are their ranks") {
  const auto v = CharVocabulary::of_text("hello, world\n", "greeting");
  CHECK(v.characters() == std::string("\n ,dehlorw"));
  CHECK(v.size() == 10);
  CHECK(v.id('\n') == 0);
  CHECK(v.id('w') == 9);
  CHECK(v.id('z') == -1);
  const auto ids = v.encode("low", "probe");
  CHECK(ids == std::vector<std::int32_t>{6, 7, 9});
  CHECK(v.decode(ids) == "low");
  // Rebuilt from its characters (as a checkpoint stores them): the same ids.
  const auto again = CharVocabulary::from_characters(v.characters());
  CHECK(again.encode("hello, world\n", "x") == v.encode("hello, world\n", "x"));
  // Bytes above 127 sort as unsigned bytes, after ASCII.
  const auto high = CharVocabulary::of_text(std::string("a\xe9" "b"), "accents");
  CHECK(high.id('a') == 0);
  CHECK(high.id(0xe9) == 2);
}

TEST_CASE("text: empty texts, foreign bytes and bad vocabularies are errors that say where") {
  CHECK_THROWS_WITH_AS(CharVocabulary::of_text("", "train.txt"),
                       doctest::Contains("train.txt is empty"), gradsum::Error);
  const auto v = CharVocabulary::of_text("abc\nabc", "train.txt");
  CHECK_THROWS_WITH_AS(v.encode("ab\nca!", "prompt"),
                       doctest::Contains("prompt, line 2, column 3: the character '!' is not in the vocabulary of 4"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(v.encode(std::string("a\x01"), "prompt"),
                       doctest::Contains("'\\x01'"), gradsum::Error);
  CHECK_THROWS_WITH_AS(v.decode({0, 4}), doctest::Contains("token 1 is 4; expected an id from 0 to 3"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(CharVocabulary::from_characters("ba"),
                       doctest::Contains("not in increasing order"), gradsum::Error);
  CHECK_THROWS_WITH_AS(CharVocabulary::from_characters("aa"),
                       doctest::Contains("not in increasing order"), gradsum::Error);
  CHECK_THROWS_AS(CharVocabulary::from_characters(""), gradsum::Error);
}

TEST_CASE("text: the validation split takes the last fraction of the characters") {
  const std::string text = "0123456789";
  auto s = gradsum::split_text(text, 0.25);  // 2.5 characters, rounded down
  CHECK(s.train == "01234567");
  CHECK(s.validation == "89");
  s = gradsum::split_text(text, 0.1);
  CHECK(s.train == "012345678");
  CHECK(s.validation == "9");
  s = gradsum::split_text(text, 0);
  CHECK(s.train == text);
  CHECK(s.validation.empty());
  CHECK_THROWS_WITH_AS(gradsum::split_text(text, 1), doctest::Contains("expected one in [0, 1)"),
                       gradsum::Error);
  CHECK_THROWS_AS(gradsum::split_text(text, -0.5), gradsum::Error);
}

namespace {

template <class Space>
std::vector<double> gathered(const TextWindows<typename Space::memory_space>& w,
                             const std::vector<std::int64_t>& offsets) {
  using Memory = typename Space::memory_space;
  Kokkos::View<std::int64_t*, Memory> o("offsets", offsets.size());
  auto ho = Kokkos::create_mirror_view(o);
  for (std::size_t i = 0; i < offsets.size(); ++i) ho(i) = offsets[i];
  Kokkos::deep_copy(o, ho);
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> out("out", offsets.size(),
                                                          std::size_t(w.context()) + 1);
  w.gather(Space(), o, out);
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  return std::vector<double>(h.data(), h.data() + h.size());
}

}  // namespace

TEST_CASE_TEMPLATE_DEFINE("text: windows and their targets at both ends, the full batch's stride",
                          Space, text_windows) {
  using Memory = typename Space::memory_space;
  // Ids 0..10 stand for an 11-character text: windows of context 3 hold 4
  // tokens, the input ids t..t+2 and the targets t+1..t+3.
  std::vector<std::int32_t> ids(11);
  for (int i = 0; i < 11; ++i) ids[std::size_t(i)] = i;
  const TextWindows<Memory> w(ids, 3, "eleven");
  CHECK(w.num_tokens() == 11);
  CHECK(w.max_offset() == 7);
  // Stride 3: windows at 0, 3, 6 (tokens 0-3, 3-6, 6-9); the one at 9 would
  // need token 12: dropped.
  CHECK(w.num_windows() == 3);
  CHECK(w.full_batch_offsets(0, 3) == std::vector<std::int64_t>{0, 3, 6});
  CHECK_THROWS_AS(w.full_batch_offsets(1, 3), gradsum::Error);
  // The first and the last window of the text.
  CHECK(gathered<Space>(w, {0, 7}) == std::vector<double>{0, 1, 2, 3, 7, 8, 9, 10});
  CHECK_THROWS_WITH_AS(gathered<Space>(w, {0, 8}),
                       doctest::Contains("window 1 starts at token 8; a window of 3 + 1 tokens starts at 0 to 7"),
                       gradsum::Error);
  CHECK_THROWS_AS(gathered<Space>(w, {-1}), gradsum::Error);
  // Exactly one window: context + 1 tokens.
  const TextWindows<Memory> one(std::vector<std::int32_t>{5, 6, 7}, 2, "three");
  CHECK(one.num_windows() == 1);
  CHECK(one.max_offset() == 0);
  CHECK(gathered<Space>(one, {0}) == std::vector<double>{5, 6, 7});
  // One token short of a window.
  CHECK_THROWS_WITH_AS(TextWindows<Memory>(std::vector<std::int32_t>{5, 6}, 2, "two.txt"),
                       doctest::Contains("two.txt holds 2 characters, shorter than one window of 2 + 1"),
                       gradsum::Error);
  CHECK_THROWS_AS(TextWindows<Memory>(ids, 0, "zero"), gradsum::Error);
}
TEST_CASE_TEMPLATE_APPLY(text_windows, gradsum_test::Spaces);

TEST_CASE("text: mini-batch offsets are seeded, in range and spread over the text") {
  std::vector<std::int32_t> ids(1000, 0);
  const TextWindows<Kokkos::HostSpace> w(ids, 16, "zeros");
  const auto a = w.draw_offsets(7, 0, 4096);
  CHECK(a == w.draw_offsets(7, 0, 4096));  // the same seed and step: the same windows
  CHECK(a != w.draw_offsets(7, 1, 4096));  // the next step: others
  CHECK(a != w.draw_offsets(8, 0, 4096));
  // Every offset from 0 to max_offset() = 983 can come out, uniformly:
  // 4096 draws put about 4.2 in each; each tenth of the range gets its
  // tenth to within a few standard deviations (about 20).
  std::vector<int> tenths(10, 0);
  std::int64_t lo = w.max_offset(), hi = 0;
  for (auto o : a) {
    REQUIRE(o >= 0);
    REQUIRE(o <= w.max_offset());
    lo = o < lo ? o : lo;
    hi = o > hi ? o : hi;
    ++tenths[std::size_t(o * 10 / (w.max_offset() + 1))];
  }
  CHECK(lo <= 5);
  CHECK(hi >= w.max_offset() - 5);
  for (int t : tenths) CHECK(std::abs(t - 410) < 100);
  CHECK_THROWS_AS(w.draw_offsets(7, 0, 0), gradsum::Error);
}

TEST_CASE("text: a text file read whole, and files that are no text file are errors naming them") {
  const std::string path = gradsum_test::temp_path("gradsum_text_file.txt");
  const std::string bytes = std::string("In the beginning\n\x01\xff", 19);
  gradsum_test::write_bytes(path, bytes);
  CHECK(gradsum::read_text_file(path, "probe") == bytes);
  CHECK_THROWS_WITH_AS(gradsum::read_text_file(path, "probe", 10),
                       doctest::Contains("holds 19 bytes, more than 10"), gradsum::Error);
  ::unlink(path.c_str());
  CHECK_THROWS_WITH_AS(gradsum::read_text_file(path, "probe"),
                       doctest::Contains("probe: cannot open"), gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::read_text_file("/tmp", "probe"),
                       doctest::Contains("is not a regular file"), gradsum::Error);
}
