// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The safetensors file format (the weights format PyTorch users exchange,
/// https://github.com/huggingface/safetensors), written and read by gradsum
/// itself, without Kokkos:
///
///     u64 N (little-endian)   N bytes of JSON header   data
///
/// The header maps each tensor's name to {"dtype", "shape", "data_offsets":
/// [begin, end]} (offsets into the data), plus an optional "__metadata__"
/// object of strings; the data are the tensors' little-endian values,
/// row-major. A reader checks every length and offset against the file
/// before it allocates or reads anything: the header length is at most
/// safetensors_max_header and the file's own length; every tensor's bytes
/// are what its dtype and shape make and lie inside the data; the tensors
/// cover the data without a gap or an overlap. The model-level calls
/// (save_model, load_model) are in train/model_file.hpp.

#include <gradsum/core/detail/safetensors_header.hpp>
#include <gradsum/core/error.hpp>
#include <gradsum/core/input_file.hpp>
#include <gradsum/core/text.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace gradsum {

/// The largest header a reader accepts (the limit of the safetensors
/// library itself), so that a forged length allocates nothing large.
constexpr std::uint64_t safetensors_max_header = 100000000;

/// The bytes per element of a safetensors dtype ("F32": 4), or 0 for a
/// name the format does not define.
inline std::size_t safetensors_dtype_size(const std::string& dtype) {
  // An array, not a braced list: nvcc 11 cannot deduce the range of one.
  static const std::pair<const char*, std::size_t> sizes[] = {
      {"F64", 8}, {"F32", 4},  {"F16", 2}, {"BF16", 2}, {"I64", 8},     {"I32", 4},
      {"I16", 2}, {"I8", 1},   {"U64", 8}, {"U32", 4},  {"U16", 2},     {"U8", 1},
      {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  for (const auto& [name, size] : sizes)
    if (dtype == name) return size;
  return 0;
}

/// A safetensors file in memory: its metadata, its tensor entries in the
/// order of the header, and the data they index.
struct Safetensors {
  std::vector<std::pair<std::string, std::string>> metadata;
  std::vector<SafetensorsTensor> tensors;
  std::string data;

  /// The entry named `name`, or nullptr.
  const SafetensorsTensor* find(const std::string& name) const {
    for (const SafetensorsTensor& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
  /// The metadata value of `key`, or nullptr.
  const std::string* metadata_value(const std::string& key) const {
    for (const auto& [k, v] : metadata)
      if (k == key) return &v;
    return nullptr;
  }
  /// Element `j` (row-major) of tensor `t`, an F32 or F64 entry, as a
  /// double; the caller checked `t` against the data (decode_safetensors).
  double value(const SafetensorsTensor& t, std::size_t j) const {
    const std::size_t size = t.dtype == "F64" ? 8 : 4;
    std::uint64_t bits = 0;
    const char* at = data.data() + t.begin + j * size;
    for (std::size_t k = size; k-- > 0;) bits = (bits << 8) | static_cast<unsigned char>(at[k]);
    if (size == 8) {
      double v;
      std::memcpy(&v, &bits, 8);
      return v;
    }
    const auto narrow = std::uint32_t(bits);
    float v;
    std::memcpy(&v, &narrow, 4);
    return double(v);
  }
  /// Appends an F64 (`size` 8) or F32 (`size` 4) tensor `name` of `shape`
  /// holding `values` (rounded to float for F32), after the data already
  /// held.
  void append(const std::string& name, const std::vector<std::uint64_t>& shape,
              const std::vector<double>& values, std::size_t size) {
    SafetensorsTensor t{name, size == 8 ? "F64" : "F32", shape, data.size(), 0};
    for (const double v : values) {
      std::uint64_t bits = 0;
      if (size == 8) {
        std::memcpy(&bits, &v, 8);
      } else {
        const float f = float(v);
        std::uint32_t narrow;
        std::memcpy(&narrow, &f, 4);
        bits = narrow;
      }
      for (std::size_t k = 0; k < size; ++k) data += char((bits >> (8 * k)) & 0xffu);
    }
    t.end = data.size();
    tensors.push_back(std::move(t));
  }
};

namespace detail {

inline std::uint64_t load_u64_le(const char* at) {
  std::uint64_t v = 0;
  for (int k = 7; k >= 0; --k) v = (v << 8) | static_cast<unsigned char>(at[k]);
  return v;
}

/// "[2, 3]".
inline std::string shape_text(const std::vector<std::uint64_t>& shape) {
  std::string s = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

/// Checks the header length `n` of a file of `size` bytes.
inline void check_safetensors_length(const std::string& path, std::uint64_t n,
                                     std::uint64_t size, const char* function) {
  if (size < 8)
    fail(function, ": '", path, "' is ", size, " bytes long, shorter than the 8-byte header "
         "length of a safetensors file");
  if (n > size - 8)
    fail(function, ": '", path, "' declares a header of ", n, " bytes, but only ", size - 8,
         " bytes follow the length (the file is truncated or not a safetensors file)");
  if (n > safetensors_max_header)
    fail(function, ": '", path, "' declares a header of ", n, " bytes, more than the ",
         safetensors_max_header, " a safetensors header may have");
  if (n < 2)
    fail(function, ": '", path, "' declares a header of ", n, " bytes; a header is a JSON "
         "object, at least '{}'");
}

/// Checks every entry against the `data_size` bytes of data: a known
/// dtype, the bytes its shape makes, inside the data, and together
/// covering it without a gap or an overlap (as the format requires).
inline void check_safetensors_entries(const std::string& path,
                                      const std::vector<SafetensorsTensor>& tensors,
                                      std::uint64_t data_size, const char* function) {
  for (const SafetensorsTensor& t : tensors) {
    const std::string where = concat(function, ": '", path, "': tensor ", quote_text(t.name));
    const std::size_t size = safetensors_dtype_size(t.dtype);
    if (size == 0)
      fail(where, " has dtype ", quote_text(t.dtype), ", which safetensors does not define");
    if (t.begin > t.end || t.end > data_size)
      fail(where, " has data_offsets [", t.begin, ", ", t.end, "], outside the ", data_size,
           " bytes of data (or begin > end)");
    // Counted while the bytes fit 64 bits, so that no product overflows.
    const std::uint64_t most = UINT64_MAX / size;
    const bool empty = std::find(t.shape.begin(), t.shape.end(), 0u) != t.shape.end();
    bool huge = false;
    std::uint64_t elements = empty ? 0 : 1;
    for (const std::uint64_t extent : t.shape) {
      if (empty) break;
      if (elements > most / extent) {
        huge = true;
        break;
      }
      elements *= extent;
    }
    if (huge || elements * size != t.end - t.begin)
      fail(where, " of dtype ", t.dtype, " and shape ", shape_text(t.shape), " needs ",
           huge ? std::string("more than 2^64 bytes")
                : concat(elements * size, " bytes"),
           ", but its data_offsets [", t.begin, ", ", t.end, "] hold ", t.end - t.begin);
  }
  std::vector<const SafetensorsTensor*> order;
  for (const SafetensorsTensor& t : tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t covered = 0;
  const SafetensorsTensor* previous = nullptr;
  for (const SafetensorsTensor* t : order) {
    if (t->begin < covered)
      fail(function, ": '", path, "': tensor ", quote_text(t->name), " at data_offsets [",
           t->begin, ", ", t->end, "] overlaps tensor ", quote_text(previous->name), " at [",
           previous->begin, ", ", previous->end, "]");
    if (t->begin > covered)
      fail(function, ": '", path, "': bytes ", covered, " to ", t->begin, " of the data belong "
           "to no tensor (tensor ", quote_text(t->name), " starts at ", t->begin, ")");
    covered = t->end;
    previous = t;
  }
  if (covered != data_size)
    fail(function, ": '", path, "': the data holds ", data_size, " bytes but its tensors end "
         "at byte ", covered, " (the rest belongs to no tensor)");
}

/// The header (its length field included) of `file`, whose data is
/// `data_size` bytes, parsed and checked.
inline Safetensors decode_safetensors_header(const std::string& path, std::string_view header,
                                             std::uint64_t data_size, const char* function) {
  Safetensors s;
  SafetensorsHeaderParser(header, path, function).parse(s.metadata, s.tensors);
  check_safetensors_entries(path, s.tensors, data_size, function);
  return s;
}

}  // namespace detail

/// The bytes of a safetensors file holding `s`: its tensors in the order
/// given, the header padded with spaces to a multiple of 8 bytes (so that
/// the data are aligned, as the safetensors library writes them).
inline std::string encode_safetensors(const Safetensors& s) {
  std::string header = "{";
  if (!s.metadata.empty()) {
    header += "\"__metadata__\":{";
    for (std::size_t k = 0; k < s.metadata.size(); ++k)
      header += (k ? "," : "") + detail::json_string(s.metadata[k].first) + ":" +
                detail::json_string(s.metadata[k].second);
    header += "}";
  }
  for (std::size_t k = 0; k < s.tensors.size(); ++k) {
    const SafetensorsTensor& t = s.tensors[k];
    std::string shape;
    for (std::size_t d = 0; d < t.shape.size(); ++d)
      shape += (d ? "," : "") + std::to_string(t.shape[d]);
    header += (k || !s.metadata.empty() ? "," : "") + detail::json_string(t.name) +
              ":{\"dtype\":" + detail::json_string(t.dtype) + ",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(t.begin) + "," + std::to_string(t.end) +
              "]}";
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes(8, '\0');
  for (int k = 0; k < 8; ++k) bytes[std::size_t(k)] = char((header.size() >> (8 * k)) & 0xffu);
  return bytes + header + s.data;
}

/// Decodes and checks the safetensors file held in `bytes`, read from
/// `path` (the name used in messages). Throws gradsum::Error naming the
/// file, and the tensor or header byte, with the value seen: too short, a
/// header length past the end, malformed JSON, an unknown dtype, offsets
/// out of range, overlapping or leaving a gap, sizes that do not match
/// the shape.
inline Safetensors decode_safetensors(const std::string& path, const std::string& bytes) {
  const char* function = "gradsum::read_safetensors";
  const std::uint64_t n = bytes.size() >= 8 ? detail::load_u64_le(bytes.data()) : 0;
  detail::check_safetensors_length(path, n, bytes.size(), function);
  Safetensors s = detail::decode_safetensors_header(
      path, std::string_view(bytes).substr(8, std::size_t(n)), bytes.size() - 8 - n, function);
  s.data = bytes.substr(8 + std::size_t(n));
  return s;
}

/// Whether `path` is a regular file that starts as a safetensors file
/// does: a header length that fits the file, then '{' (text, a checkpoint
/// or a CSV file never does). False for a file that cannot be opened. Not
/// a check of the file: read_safetensors makes those.
inline bool looks_like_safetensors(const std::string& path) {
  try {
    detail::InputFile file(path, "gradsum::looks_like_safetensors", "a safetensors file");
    char head[9] = {};
    if (file.read_up_to(head, 9) < 9 || head[8] != '{') return false;
    return detail::load_u64_le(head) <= file.size() - 8;
  } catch (const Error&) {
    return false;
  }
}

/// Reads and checks the safetensors file `path` (a regular file): its
/// header length against the file's length and safetensors_max_header,
/// then its header (see decode_safetensors), then `check_header(s)` on the
/// decoded entries before any data is read (a caller's own checks, such
/// as load_model's against a model, which may throw), and only then its
/// data, whose length was checked. Throws gradsum::Error naming the file.
/// Not collective.
inline Safetensors read_safetensors(
    const std::string& path,
    const std::function<void(const Safetensors&)>& check_header = nullptr) {
  const char* function = "gradsum::read_safetensors";
  detail::InputFile file(path, function, "a safetensors file");
  const std::uint64_t size = file.size();
  char length[8] = {};
  const std::size_t got = file.read_up_to(length, size < 8 ? std::size_t(size) : 8);
  const std::uint64_t n = got == 8 ? detail::load_u64_le(length) : 0;
  detail::check_safetensors_length(path, n, got < 8 ? got : size, function);
  std::string header(std::size_t(n), '\0');
  if (file.read_up_to(&header[0], header.size()) != header.size())
    fail(function, ": '", path, "' ended while its header was read (it shrank)");
  Safetensors s = detail::decode_safetensors_header(path, header, size - 8 - n, function);
  if (check_header) check_header(s);
  try {
    s.data.resize(std::size_t(size - 8 - n) + 1);  // one byte more shows a file that grew
  } catch (const std::bad_alloc&) {
    fail(function, ": '", path, "' holds ", size - 8 - n, " bytes of data, more than this "
         "process can hold");
  }
  const std::size_t read = file.read_up_to(&s.data[0], s.data.size());
  if (read != size - 8 - n)
    fail(function, ": '", path, "' changed while it was read (", read, " bytes of data, ",
         size - 8 - n, " expected)");
  s.data.resize(read);
  return s;
}

}  // namespace gradsum
