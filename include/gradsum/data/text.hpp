// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// Text as data for next-token training, one character per token.
///
/// - `CharVocabulary`: the sorted distinct bytes of the training text; a
///   byte's token id is its rank. Stored as its characters (in a
///   checkpoint, say) and rebuilt from them.
/// - `split_text`: the last fraction of the characters for validation.
/// - `TextWindows`: the token ids in a memory space and the windows of
///   `context + 1` consecutive tokens they hold; a window's first `context`
///   tokens are the input, its last `context` the targets (each token's
///   next one). The full batch is every window at stride `context`, from
///   the first token on, the last partial window dropped; mini-batches are
///   windows at seeded random offsets (`draw_offsets`), the same on every
///   rank.

#include <gradsum/core/error.hpp>
#include <gradsum/core/input_file.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/text.hpp>
#include <gradsum/data/dataset.hpp>
#include <gradsum/data/rows.hpp>
#include <gradsum/data/sampler.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gradsum {

namespace detail {

/// "line L, column C" of the byte at `offset` of `text` (both from 1).
inline std::string text_position(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

}  // namespace detail

/// A character-level vocabulary: distinct bytes in increasing order, a
/// byte's token id its place among them.
class CharVocabulary {
 public:
  /// An empty vocabulary (size 0), to be assigned.
  CharVocabulary() { ids_.fill(-1); }

  /// The vocabulary of `text`: its distinct bytes, sorted. An empty text
  /// is a gradsum::Error naming `source`.
  static CharVocabulary of_text(const std::string& text, const std::string& source) {
    if (text.empty())
      fail("gradsum::CharVocabulary: ", source, " is empty; a vocabulary needs at least one character");
    std::array<bool, 256> seen{};
    for (char c : text) seen[static_cast<unsigned char>(c)] = true;
    std::string characters;
    for (int c = 0; c < 256; ++c)
      if (seen[std::size_t(c)]) characters.push_back(static_cast<char>(c));
    return CharVocabulary(characters);
  }

  /// The vocabulary whose characters() were `characters` (as stored):
  /// non-empty, strictly increasing bytes, else a gradsum::Error.
  static CharVocabulary from_characters(const std::string& characters) {
    const std::string reason = detail::vocabulary_error(characters);
    if (!reason.empty()) fail("gradsum::CharVocabulary::from_characters: ", reason);
    return CharVocabulary(characters);
  }

  /// Number of tokens.
  int size() const { return int(characters_.size()); }
  /// The bytes, token id 0 first.
  const std::string& characters() const { return characters_; }
  /// The token id of byte `c`, or -1 if the vocabulary lacks it.
  int id(unsigned char c) const { return ids_[c]; }

  /// The token ids of `text`. A byte the vocabulary lacks is a
  /// gradsum::Error naming the byte, its line and column, and `source`.
  std::vector<std::int32_t> encode(const std::string& text, const std::string& source) const {
    std::vector<std::int32_t> out(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
      const int t = ids_[static_cast<unsigned char>(text[i])];
      if (t < 0)
        fail("gradsum::CharVocabulary::encode: ", source, ", ", detail::text_position(text, i),
             ": the character ", detail::shown_byte(static_cast<unsigned char>(text[i])),
             " is not in the vocabulary of ", size(), " characters the model was trained with");
      out[i] = t;
    }
    return out;
  }

  /// The text of token ids `ids`; an id outside [0, size()) is a
  /// gradsum::Error naming it and its place.
  std::string decode(const std::vector<std::int32_t>& ids) const {
    std::string out(ids.size(), '\0');
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= size())
        fail("gradsum::CharVocabulary::decode: token ", i, " is ", ids[i],
             "; expected an id from 0 to ", size() - 1);
      out[i] = characters_[std::size_t(ids[i])];
    }
    return out;
  }

 private:
  explicit CharVocabulary(const std::string& characters) : characters_(characters) {
    ids_.fill(-1);
    for (std::size_t i = 0; i < characters_.size(); ++i)
      ids_[static_cast<unsigned char>(characters_[i])] = int(i);
  }
  std::string characters_;
  std::array<int, 256> ids_;
};

/// The bytes of the regular file at `path`, at most `max_bytes` of them
/// (2^31 - 1 by default: a character-level model reads no more), for
/// CharVocabulary and TextWindows. A missing file, a folder, a pipe or a
/// device, and a longer file, are gradsum::Errors naming `who` and the path.
inline std::string read_text_file(const std::string& path, const char* who,
                                  std::uint64_t max_bytes = 2147483647) {
  detail::InputFile file(path, who, "a text file");
  if (file.size() > max_bytes)
    fail(who, ": '", path, "' holds ", file.size(), " bytes, more than ", max_bytes);
  std::string text(std::size_t(file.size()), '\0');
  text.resize(file.read_up_to(text.data(), text.size()));
  return text;
}

/// A text split for training and validation: the validation part is the
/// last `fraction` of the characters (rounded down), the training part
/// the rest.
struct TextSplit {
  std::string train, validation;
};

/// Splits `text`, keeping the last `fraction` (in [0, 1)) of its
/// characters for validation; a fraction outside that range is a
/// gradsum::Error.
inline TextSplit split_text(const std::string& text, double fraction) {
  if (!(fraction >= 0 && fraction < 1))
    fail("gradsum::split_text: the validation fraction is ", fraction, "; expected one in [0, 1)");
  const auto held = std::size_t(double(text.size()) * fraction);
  return {text.substr(0, text.size() - held), text.substr(text.size() - held)};
}

/// The token ids of a text in `Memory` and the windows of `context + 1`
/// tokens they hold.
template <class Memory = Kokkos::DefaultExecutionSpace::memory_space>
class TextWindows {
 public:
  using memory_space = Memory;

  /// The windows of `context` input tokens in `ids`; `source` names the
  /// text in errors. A context below 1, or fewer than `context + 1` ids
  /// (not one window), is a gradsum::Error.
  TextWindows(const std::vector<std::int32_t>& ids, int context, const std::string& source)
      : context_(context) {
    if (context < 1)
      fail("gradsum::TextWindows: the context is ", context, " tokens; expected 1 or more");
    if (std::int64_t(ids.size()) < std::int64_t(context) + 1)
      fail("gradsum::TextWindows: ", source, " holds ", ids.size(),
           " characters, shorter than one window of ", context, " + 1 (a context of ", context,
           " and the next character)");
    tokens_ = Kokkos::View<std::int32_t*, Memory>(
        Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::data::text_tokens"), ids.size());
    const Kokkos::View<const std::int32_t*, Kokkos::HostSpace,
                       Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        host(ids.data(), ids.size());
    Kokkos::deep_copy(tokens_, host);
  }

  /// Number of tokens of the text.
  std::int64_t num_tokens() const { return std::int64_t(tokens_.extent(0)); }
  /// Input tokens per window.
  int context() const { return context_; }
  /// Windows of the full batch: every window at stride context from the
  /// first token, (num_tokens() - 1) / context, the last partial one
  /// dropped.
  std::int64_t num_windows() const { return (num_tokens() - 1) / context_; }
  /// The largest offset a window can start at: num_tokens() - context - 1.
  std::int64_t max_offset() const { return num_tokens() - context_ - 1; }
  /// The token ids, on Memory.
  Kokkos::View<const std::int32_t*, Memory> tokens() const { return tokens_; }

  /// The offsets of full-batch windows `first` to `first + count - 1`
  /// (window w starts at w * context), on the host.
  std::vector<std::int64_t> full_batch_offsets(std::int64_t first, std::int64_t count) const {
    if (first < 0 || count < 0 || first + count > num_windows())
      fail("gradsum::TextWindows::full_batch_offsets: windows ", first, " to ", first + count - 1,
           " asked for; the text has ", num_windows(), " at stride ", context_);
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(count));
    for (std::int64_t w = 0; w < count; ++w) offsets[std::size_t(w)] = (first + w) * context_;
    return offsets;
  }

  /// The offsets of mini-batch `step`'s `batch` windows, uniform in
  /// [0, max_offset()], drawn from (seed, step) by SplitMix64: the same on
  /// every rank, compiler and standard library.
  std::vector<std::int64_t> draw_offsets(std::uint64_t seed, std::int64_t step,
                                         std::int64_t batch) const {
    if (batch < 1) fail("gradsum::TextWindows::draw_offsets: a batch of ", batch, " windows; expected 1 or more");
    detail::SplitMix64 rng(seed ^ (0xbb67ae8584caa73bULL * (std::uint64_t(step) + 1)));
    std::vector<std::int64_t> offsets(static_cast<std::size_t>(batch));
    for (auto& o : offsets) o = std::int64_t(rng.below(std::uint64_t(max_offset()) + 1));
    return offsets;
  }

  /// Every window as a row of a data set for a Network over text: row r
  /// holds tokens r … r + context (as Scalar), the window at offset r, for
  /// r from 0 to max_offset(); the target of row r is its last token
  /// (the network reads every position's target from the row itself). The
  /// rows overlap: they are one copy of the text read with strides (1, 1),
  /// kept alive by the targets, which are the same copy from token
  /// `context` on. Select rows with select(full_batch_offsets(…)) or
  /// select(draw_offsets(…)). Blocking.
  template <class Scalar>
  Dataset<Scalar, Memory, Kokkos::LayoutStride> dataset() const {
    using Values = Kokkos::View<Scalar*, Memory>;
    const Values values(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::data::text_values"),
                        tokens_.extent(0));
    const auto tokens = tokens_;
    Kokkos::parallel_for(
        "gradsum::data::text_windows::values",
        Kokkos::RangePolicy<typename Memory::execution_space, Kokkos::IndexType<std::int64_t>>(
            0, num_tokens()),
        KOKKOS_LAMBDA(std::int64_t i) { values(i) = Scalar(tokens(i)); });
    Kokkos::fence();
    const auto rows = std::size_t(max_offset() + 1), width = std::size_t(context_ + 1);
    const Kokkos::View<Scalar**, Kokkos::LayoutStride, Memory> windows(
        values.data(), Kokkos::LayoutStride(rows, 1, width, 1));
    const Kokkos::View<Scalar*, Kokkos::LayoutStride, Memory> last =
        Kokkos::subview(values, Kokkos::make_pair(std::size_t(context_), std::size_t(context_) + rows));
    return Dataset<Scalar, Memory, Kokkos::LayoutStride>(windows, last);
  }

  /// The rows of dataset() starting at `offsets`: copies them into `index`
  /// (at least offsets.size() values in Memory, allocated once by the
  /// caller) and selects them. An offset outside [0, max_offset()] is a
  /// gradsum::Error. Blocking.
  RowList<Memory> select(const std::vector<std::int64_t>& offsets,
                         const Kokkos::View<std::int64_t*, Memory>& index) const {
    if (index.extent(0) < offsets.size())
      fail("gradsum::TextWindows::select: ", offsets.size(), " offsets but room for ",
           index.extent(0));
    for (std::size_t b = 0; b < offsets.size(); ++b)
      if (offsets[b] < 0 || offsets[b] > max_offset())
        fail("gradsum::TextWindows::select: window ", b, " starts at token ", offsets[b],
             "; a window of ", context_, " + 1 tokens starts at 0 to ", max_offset());
    const Kokkos::View<const std::int64_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>
        host(offsets.data(), offsets.size());
    Kokkos::deep_copy(Kokkos::subview(index, Kokkos::make_pair(std::size_t(0), offsets.size())), host);
    return RowList<Memory>{index, 0, std::int64_t(offsets.size())};
  }

  /// out(b, j) = token offsets(b) + j as a Scalar, for j from 0 to
  /// context: the windows starting at `offsets` (a View in Memory), row
  /// by row. An offset outside [0, max_offset()] is a gradsum::Error
  /// naming the first one. Blocking (the offsets are checked first).
  template <class Space, class Offsets, class Out>
  void gather(const Space& space, const Offsets& offsets, const Out& out) const {
    using Scalar = typename Out::non_const_value_type;
    if (out.extent(0) != offsets.extent(0) || std::int64_t(out.extent(1)) != context_ + 1)
      fail("gradsum::TextWindows::gather: out is ", out.extent(0), " x ", out.extent(1),
           " for ", offsets.extent(0), " windows; expected ", offsets.extent(0), " x ",
           context_ + 1);
    const std::int64_t last = max_offset();
    const std::int64_t none = std::int64_t(offsets.extent(0));
    std::int64_t first_bad = none;
    Kokkos::parallel_reduce(
        "gradsum::data::text_windows::check_offsets",
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, none),
        KOKKOS_LAMBDA(std::int64_t b, std::int64_t & bad) {
          if ((offsets(b) < 0 || offsets(b) > last) && b < bad) bad = b;
        },
        Kokkos::Min<std::int64_t>(first_bad));
    if (first_bad < none) {
      std::int64_t seen = 0;
      Kokkos::deep_copy(seen, Kokkos::subview(offsets, first_bad));
      fail("gradsum::TextWindows::gather: window ", first_bad, " starts at token ", seen,
           "; a window of ", context_, " + 1 tokens starts at 0 to ", last);
    }
    const auto tokens = tokens_;
    const std::int64_t width = context_ + 1;
    Kokkos::parallel_for(
        "gradsum::data::text_windows::gather",
        Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(
            space, 0, std::int64_t(out.extent(0))),
        KOKKOS_LAMBDA(std::int64_t b) {
          const std::int64_t first = offsets(b);
          for (std::int64_t j = 0; j < width; ++j) out(b, j) = Scalar(tokens(first + j));
        });
  }

 private:
  int context_ = 1;
  Kokkos::View<std::int32_t*, Memory> tokens_;
};

}  // namespace gradsum
