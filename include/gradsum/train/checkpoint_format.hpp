// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// The checkpoint file format on its own: what a checkpoint holds, its
/// encoding and its checked decoding. No Kokkos, so tools (and the fuzz
/// targets in fuzz/) can read checkpoints without it; train/checkpoint.hpp
/// adds saving and loading a step's state.

#include <gradsum/core/error.hpp>
#include <gradsum/core/input_file.hpp>
#include <gradsum/core/restored.hpp>
#include <gradsum/core/text.hpp>
#include <gradsum/data/scaling.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace gradsum {

/// Where training stands, saved with the parameters: enough to continue
/// the exact trajectory (the mini-batch order is a function of the seed and
/// the epoch, see MiniBatchSampler).
struct TrainingPosition {
  std::int64_t step = 0;   ///< optimizer steps done so far
  std::int64_t epoch = 0;  ///< epochs completed
  std::int64_t batch = 0;  ///< batches done in epoch `epoch` (0 at an epoch boundary)
  std::uint64_t seed = 0;  ///< seed of the mini-batch order
};

/// Everything a checkpoint file holds, on the host.
///
/// Layout (version 2, all integers in the writer's byte order, which the
/// byte-order mark lets a reader check):
///
///     "GRADSUMC"  u32 version  u32 byte-order mark 0x01020304  u64 file length
///     str scalar  u32 scalar size
///     str model  str loss  str optimizer  str gradient  str reduction  str aggregation
///     i64 parameters  i64 features  i64 outputs  i64 ranks
///     i64 step  i64 epoch  i64 batch  u64 seed
///     i64 state rows   parameters and optimizer state as raw Scalars
///     vec optimizer host state  vec scaler mean  vec scaler scale  vec loop state
///     u32 class names count  str class name …  (versions 2 and 3)
///     str vocabulary  (version 3 only)
///     u32 CRC-32 (IEEE 802.3) of every byte before it
///
/// where str is a u32 length and bytes, vec a u64 count and doubles; the
/// model is named as detail::model_description names it ("linear",
/// "mlp:13-32(tanh)-3"). A checkpoint is written in the oldest version
/// that holds it, so that older gradsum reads it: version 1 (without class
/// names or vocabulary), 2 (with class names), 3 (with a vocabulary, the
/// class names then possibly none); every version is read.
struct CheckpointData {
  std::string scalar;          ///< "double" or "float"
  std::uint32_t scalar_size = 0;
  std::string model, loss, optimizer, gradient, reduction, aggregation;
  std::int64_t num_parameters = 0, num_features = 0, num_outputs = 0;
  std::int64_t ranks = 1;      ///< number of ranks of the run that wrote it (informative)
  TrainingPosition position;
  std::int64_t state_rows = 0;
  std::string parameter_bytes;  ///< num_parameters raw Scalars
  std::string state_bytes;      ///< state_rows x num_parameters raw Scalars, row-major
  std::vector<double> optimizer_host;  ///< scalars the optimizer keeps on the host (Adam's t …)
  StandardScaler scaler;               ///< the feature scaling of the data (empty when none)
  std::vector<double> loop;            ///< the training loop's own state (fit's early stopping)
  /// Names of the classes 0 … C-1 of a target column of names (see
  /// CsvOptions::class_names); empty when the labels were numbers.
  std::vector<std::string> class_names;
  /// The characters of a model over text, token id 0 first (strictly
  /// increasing bytes, CharVocabulary::characters()); empty for other models.
  std::string vocabulary;

  /// The parameters as doubles.
  std::vector<double> parameters() const {
    std::vector<double> out(static_cast<std::size_t>(num_parameters));
    for (std::size_t j = 0; j < out.size(); ++j) out[j] = value_at(parameter_bytes, j);
    return out;
  }
  /// Scalar `j` of raw Scalars `bytes` (parameter_bytes, state_bytes) as a double.
  double value_at(const std::string& bytes, std::size_t j) const {
    if (scalar_size == sizeof(double)) {
      double v;
      std::memcpy(&v, bytes.data() + j * sizeof v, sizeof v);
      return v;
    }
    float v;
    std::memcpy(&v, bytes.data() + j * sizeof v, sizeof v);
    return double(v);
  }
};

/// The newest version of the checkpoint format, which this gradsum writes
/// for a checkpoint with a vocabulary (see CheckpointData for the older
/// ones) and reads with every older one.
constexpr std::uint32_t checkpoint_version = 3;

namespace detail {

/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zlib's crc32().
inline std::uint32_t crc32(const unsigned char* data, std::size_t n, std::uint32_t crc = 0) {
  static const auto table = [] {
    std::vector<std::uint32_t> t(256);
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i) crc = table[(crc ^ data[i]) & 0xFFu] ^ (crc >> 8);
  return ~crc;
}

constexpr char checkpoint_magic[9] = "GRADSUMC";
constexpr std::uint32_t byte_order_mark = 0x01020304u;

class CheckpointWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable<T>::value, "raw value");
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_string(const std::string& s) {
    put(std::uint32_t(s.size()));
    bytes_ += s;
  }
  void put_vector(const std::vector<double>& v) {
    put(std::uint64_t(v.size()));
    bytes_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
  }
  void put_raw(const std::string& raw) { bytes_ += raw; }
  std::string& bytes() { return bytes_; }

 private:
  std::string bytes_;
};

class CheckpointReader {
 public:
  CheckpointReader(const std::string& path, const std::string& bytes, std::size_t end)
      : path_(path), bytes_(bytes), end_(end) {}
  template <class T>
  T get(const char* what) {
    T v;
    need(sizeof v, what);
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string get_raw(std::size_t n, const char* what) {
    need(n, what);
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  // Every string a checkpoint holds is printed somewhere (names, messages):
  // none may carry control characters to a terminal.
  std::string get_string(const char* what) {
    std::string s = get_raw(get<std::uint32_t>(what), what);
    const std::string reason = unprintable_reason(s);
    if (!reason.empty())
      fail("gradsum::load_checkpoint: '", path_, "': ", what, " ", quote_text(s), " holds ",
           reason, "; the file is corrupted");
    return s;
  }
  std::vector<double> get_vector(const char* what) {
    const auto n = get<std::uint64_t>(what);
    if (n > (end_ - at_) / sizeof(double)) need(end_, what);  // reports the overrun
    std::vector<double> v(static_cast<std::size_t>(n));
    if (n > 0) std::memcpy(v.data(), bytes_.data() + at_, std::size_t(n) * sizeof(double));
    at_ += std::size_t(n) * sizeof(double);
    return v;
  }
  std::size_t position() const { return at_; }

 private:
  void need(std::size_t n, const char* what) const {
    if (n > end_ - at_)
      fail("gradsum::load_checkpoint: '", path_, "': the record ends at byte ", end_,
           " while reading ", what, " at byte ", at_, " (", n, " bytes needed); the file is "
           "corrupted");
  }
  const std::string& path_;
  const std::string& bytes_;
  std::size_t end_;
  std::size_t at_ = 24;
};

}  // namespace detail

/// Encodes a checkpoint (see CheckpointData for the layout).
inline std::string encode_checkpoint(const CheckpointData& c) {
  detail::CheckpointWriter w;
  w.bytes().append(detail::checkpoint_magic, 8);
  const std::uint32_t version = !c.vocabulary.empty() ? 3 : c.class_names.empty() ? 1 : 2;
  w.put(version);
  w.put(detail::byte_order_mark);
  w.put(std::uint64_t(0));  // the length, filled in below
  w.put_string(c.scalar);
  w.put(c.scalar_size);
  for (const std::string* s : {&c.model, &c.loss, &c.optimizer, &c.gradient, &c.reduction,
                               &c.aggregation})
    w.put_string(*s);
  w.put(c.num_parameters);
  w.put(c.num_features);
  w.put(c.num_outputs);
  w.put(c.ranks);
  w.put(c.position.step);
  w.put(c.position.epoch);
  w.put(c.position.batch);
  w.put(c.position.seed);
  w.put(c.state_rows);
  w.put_raw(c.parameter_bytes);
  w.put_raw(c.state_bytes);
  w.put_vector(c.optimizer_host);
  w.put_vector(c.scaler.mean);
  w.put_vector(c.scaler.scale);
  w.put_vector(c.loop);
  if (version >= 2) {
    w.put(std::uint32_t(c.class_names.size()));
    for (const std::string& name : c.class_names) {
      const std::string reason = detail::unprintable_reason(name);
      if (!reason.empty())  // it would be refused when read back
        fail("gradsum::save_checkpoint: class name ", detail::quote_text(name), " holds ",
                     reason, " (class names must be UTF-8 text without control characters)");
      w.put_string(name);
    }
  }
  if (version >= 3) {
    const std::string reason = detail::vocabulary_error(c.vocabulary);
    if (!reason.empty()) fail("gradsum::save_checkpoint: the vocabulary: ", reason);
    w.put_string(c.vocabulary);
  }
  std::string& bytes = w.bytes();
  const std::uint64_t length = bytes.size() + sizeof(std::uint32_t);
  std::memcpy(&bytes[16], &length, sizeof length);
  const std::uint32_t crc =
      detail::crc32(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  w.put(crc);
  return bytes;
}

namespace detail {

/// Checks a checkpoint's fixed header - its first `available` bytes, at
/// least min(size, 24) - against the `size` of the whole file, so that a
/// reader knows the length is right before it reads the rest.
inline void check_checkpoint_header(const std::string& path, const char* bytes,
                                    std::size_t available, std::uint64_t size) {
  const char* function = "gradsum::load_checkpoint";
  if (available < 8 || std::memcmp(bytes, detail::checkpoint_magic, 8) != 0)
    fail(function, ": '", path, "' is not a gradsum checkpoint (it does not start with "
         "\"GRADSUMC\"; ", size, " bytes)");
  if (size < 28 || available < 24)
    fail(function, ": '", path, "' is truncated: ", size,
         " bytes, shorter than the 28-byte header and checksum");
  std::uint32_t version, mark;
  std::uint64_t length;
  std::memcpy(&version, bytes + 8, 4);
  std::memcpy(&mark, bytes + 12, 4);
  std::memcpy(&length, bytes + 16, 8);
  if (mark != detail::byte_order_mark)
    fail(function, ": '", path, "' was written with another byte order (or its header is "
         "corrupted): byte-order mark ", mark, ", expected ", detail::byte_order_mark);
  if (version < 1 || version > checkpoint_version)
    fail(function, ": '", path, "' has format version ", version,
         "; this gradsum reads versions 1 to ", checkpoint_version);
  if (length != size)
    fail(function, ": '", path, "' is ", size, " bytes long but its header says ", length,
         length > size ? ": the file is truncated" : ": the header or the file is corrupted");
}

/// Checks the values of a decoded checkpoint that no writer makes, since a
/// file written consistently with false values passes the checksum: a
/// position out of range, a rank count below 1, a scaler whose width
/// differs from the model's or that does not hold a finite mean and a
/// positive finite scale per feature.
inline void check_checkpoint_values(const std::string& path, const CheckpointData& c) {
  const char* function = "gradsum::load_checkpoint";
  const TrainingPosition& p = c.position;
  // An array, not a braced list: nvcc 11 cannot deduce the range of one.
  const std::pair<std::int64_t, const char*> counts[] = {
      {p.step, "step"}, {p.epoch, "epoch"}, {p.batch, "batch"}};
  for (const auto& [value, name] : counts)
    if (value < 0 || value > max_saved_count)
      fail(function, ": '", path, "' holds ", name, " ", value, ", expected an integer in [0, ",
           max_saved_count, "]");
  if (c.ranks < 1 || c.ranks > std::numeric_limits<int>::max())
    fail(function, ": '", path, "' was written by ", c.ranks, " ranks, expected 1 to ",
         std::numeric_limits<int>::max());
  c.scaler.validate(function);
  if (!c.scaler.mean.empty() && std::int64_t(c.scaler.mean.size()) != c.num_features)
    fail(function, ": '", path, "' declares ", c.num_features, " features but its scaler "
         "holds ", c.scaler.mean.size(), "; the file is corrupted");
}

}  // namespace detail

/// Decodes and checks a checkpoint held in `bytes`, read from `path` (the
/// name used in messages). Throws gradsum::Error naming the file and what
/// is wrong: not a checkpoint, another version or byte order, truncated,
/// checksum mismatch, inconsistent sizes, a value no writer makes (see
/// detail::check_checkpoint_values). The scaler's source is set to `path`.
inline CheckpointData decode_checkpoint(const std::string& path, const std::string& bytes) {
  const char* function = "gradsum::load_checkpoint";
  detail::check_checkpoint_header(path, bytes.data(), bytes.size(), bytes.size());
  std::uint32_t version;
  std::memcpy(&version, bytes.data() + 8, 4);
  std::uint32_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 4, 4);
  const std::uint32_t computed =
      detail::crc32(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size() - 4);
  if (stored != computed)
    fail(function, ": '", path, "' fails its checksum (CRC-32 stored ", stored,
                 ", computed ", computed, "): the file is corrupted");

  detail::CheckpointReader r(path, bytes, bytes.size() - 4);
  CheckpointData c;
  c.scalar = r.get_string("the scalar type");
  c.scalar_size = r.get<std::uint32_t>("the scalar size");
  if (!((c.scalar == "double" && c.scalar_size == 8) || (c.scalar == "float" && c.scalar_size == 4)))
    fail(function, ": '", path, "' names scalar type '", c.scalar, "' of ", c.scalar_size,
                 " bytes; expected double (8) or float (4)");
  for (std::string* s : {&c.model, &c.loss, &c.optimizer, &c.gradient, &c.reduction,
                         &c.aggregation})
    *s = r.get_string("a policy name");
  c.num_parameters = r.get<std::int64_t>("the number of parameters");
  c.num_features = r.get<std::int64_t>("the number of features");
  c.num_outputs = r.get<std::int64_t>("the number of outputs");
  c.ranks = r.get<std::int64_t>("the number of ranks");
  c.position.step = r.get<std::int64_t>("the step");
  c.position.epoch = r.get<std::int64_t>("the epoch");
  c.position.batch = r.get<std::int64_t>("the batch");
  c.position.seed = r.get<std::uint64_t>("the seed");
  c.state_rows = r.get<std::int64_t>("the number of optimizer state rows");
  if (c.num_parameters < 0 || c.state_rows < 0 || c.num_parameters > (std::int64_t(1) << 40) ||
      c.state_rows > (std::int64_t(1) << 20))
    fail(function, ": '", path, "' declares ", c.num_parameters, " parameters and ",
                 c.state_rows, " optimizer state rows; the file is corrupted");
  c.parameter_bytes = r.get_raw(std::size_t(c.num_parameters) * c.scalar_size, "the parameters");
  c.state_bytes = r.get_raw(std::size_t(c.state_rows * c.num_parameters) * c.scalar_size,
                            "the optimizer state");
  c.optimizer_host = r.get_vector("the optimizer's host state");
  c.scaler.mean = r.get_vector("the scaler's means");
  c.scaler.scale = r.get_vector("the scaler's scales");
  c.loop = r.get_vector("the training loop's state");
  if (version >= 2) {
    const auto n = r.get<std::uint32_t>("the number of class names");
    // A forged count runs into the end of the record (reported) long
    // before memory does: each name takes at least 4 bytes.
    for (std::uint32_t k = 0; k < n; ++k) c.class_names.push_back(r.get_string("a class name"));
    if (n == 0 && version == 2)
      fail(function, ": '", path, "' is version 2 but holds no class names; the file "
                   "is corrupted");
  }
  if (version >= 3) {
    c.vocabulary = r.get_raw(r.get<std::uint32_t>("the vocabulary's length"), "the vocabulary");
    const std::string reason = detail::vocabulary_error(c.vocabulary);
    if (!reason.empty())
      fail(function, ": '", path, "': the vocabulary: ", reason, "; the file is corrupted");
    if (std::int64_t(c.vocabulary.size()) != c.num_outputs)
      fail(function, ": '", path, "' holds a vocabulary of ", c.vocabulary.size(),
           " characters for a model of ", c.num_outputs, " outputs; the file is corrupted");
  }
  if (r.position() != bytes.size() - 4)
    fail(function, ": '", path, "' holds ", bytes.size() - 4 - r.position(),
                 " unexpected bytes before its checksum; the file is corrupted");
  c.scaler.source = path;
  detail::check_checkpoint_values(path, c);
  return c;
}

namespace detail {

/// The bytes of the checkpoint file `path`: a regular file, whose header
/// is checked against its size before the rest is read, and of which no
/// more than the declared length and one byte are read.
inline std::string read_checkpoint_bytes(const std::string& path) {
  const char* function = "gradsum::load_checkpoint";
  InputFile file(path, function, "a checkpoint");
  const std::uint64_t size = file.size();
  std::string bytes(size < 24 ? std::size_t(size) : 24, '\0');
  const std::size_t head = file.read_up_to(&bytes[0], bytes.size());
  if (head < bytes.size()) return bytes.substr(0, head);  // it shrank: decoding says how
  check_checkpoint_header(path, bytes.data(), head, size);
  try {
    bytes.resize(std::size_t(size) + 1);  // one byte more shows a file that grew
  } catch (const std::bad_alloc&) {
    fail(function, ": '", path, "' is ", size, " bytes long, more than this process can hold");
  }
  bytes.resize(head + file.read_up_to(&bytes[head], bytes.size() - head));
  return bytes;
}

}  // namespace detail

/// Reads and checks a checkpoint file on the host (no step needed: tools
/// such as gradsum-predict learn the model from it). Throws gradsum::Error
/// naming the file on any problem, having read no more than the length its
/// header declares (and checked against the file's size) and one byte.
/// Not collective.
inline CheckpointData read_checkpoint(const std::string& path) {
  return decode_checkpoint(path, detail::read_checkpoint_bytes(path));
}

}  // namespace gradsum
