// SPDX-License-Identifier: Apache-2.0
// save_model / load_model (train/model_file.hpp): every model gradsum ships
// round-trips in both precisions (the same bytes written again, the same
// predictions), its tensors hold the parameters where PyTorch's nn.Linear
// keeps them (checked against the models' documented layouts), double
// files load into float models rounded as a cast rounds, a model of the
// user's own plugs in through describe(), from_description() and
// parameter_tensors(), and files that do not fit the model are refused
// naming the tensor and the value seen.

#include "file_helpers.hpp"
#include "test_helpers.hpp"

#include <gradsum/train/model_file.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

using namespace gradsum_test;

namespace {

// theta[j] = j + 1 on the host, so that a value names its position.
template <class Scalar>
Kokkos::View<Scalar*, Kokkos::HostSpace> numbered(int n) {
  Kokkos::View<Scalar*, Kokkos::HostSpace> theta("numbered", n);
  for (int j = 0; j < n; ++j) theta(j) = Scalar(j + 1);
  return theta;
}

// Tensor `name` of the file at `path`, row-major, as doubles.
std::vector<double> tensor_values(const std::string& path, const std::string& name) {
  const gradsum::Safetensors s = gradsum::read_safetensors(path);
  const gradsum::SafetensorsTensor* t = s.find(name);
  REQUIRE(t != nullptr);
  std::vector<double> v;
  const std::size_t size = t->dtype == "F64" ? 8 : 4;
  for (std::size_t j = 0; j < (t->end - t->begin) / size; ++j) v.push_back(s.value(*t, j));
  return v;
}

// The predictions of `model` with `theta` for `x` (n x d), on the host.
template <class Model, class Theta>
std::vector<double> outputs(const Model& model, const Theta& theta, const std::vector<double>& x) {
  using Scalar = typename Theta::non_const_value_type;
  const std::int64_t n = std::int64_t(x.size()) / model.num_features();
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Kokkos::HostSpace> xs("x", n, model.num_features());
  for (std::size_t j = 0; j < x.size(); ++j) xs.data()[j] = Scalar(x[j]);
  Kokkos::View<Scalar**, Kokkos::LayoutRight, Kokkos::HostSpace> z("z", n, model.num_outputs());
  gradsum::predict(Kokkos::DefaultHostExecutionSpace(), model, theta, xs, z);
  return std::vector<double>(z.data(), z.data() + z.size());
}

template <class Fn>
std::string error_of(const Fn& fn) {
  try {
    fn();
  } catch (const gradsum::Error& e) {
    return e.what();
  }
  return "accepted";
}

// Saves `model` with random parameters of `Scalar`, loads it back as
// Model, and checks the bytes of a second save and the predictions.
template <class Model, class Scalar>
void check_round_trip(const Model& model, const std::string& name) {
  INFO(name << " in " << (sizeof(Scalar) == 8 ? "double" : "float"));
  const std::string path = temp_path(name + ".safetensors"), again = temp_path(name + "2");
  const std::vector<double> values = random_vector(std::size_t(model.num_parameters()), 11, 1.0);
  Kokkos::View<Scalar*, Kokkos::HostSpace> theta("theta", values.size());
  for (std::size_t j = 0; j < values.size(); ++j) theta(j) = Scalar(values[j]);
  gradsum::ModelNotes notes;
  notes.loss = "squared_error";
  gradsum::save_model(path, model, theta, notes);
  const auto loaded = gradsum::load_model<Model, Scalar, Kokkos::HostSpace>(path);
  CHECK(loaded.notes.loss == "squared_error");
  CHECK(gradsum::detail::model_description(loaded.model) ==
        gradsum::detail::model_description(model));
  gradsum::save_model(again, loaded.model, loaded.theta, loaded.notes);
  CHECK(read_bytes(again) == read_bytes(path));
  const std::vector<double> x = random_vector(std::size_t(7 * model.num_features()), 5, 1.0);
  CHECK(same_bits(outputs(loaded.model, loaded.theta, x), outputs(model, theta, x)));
  std::remove(path.c_str());
  std::remove(again.c_str());
}

// A model of the user's own (a stand-in for a composition of layers): y =
// a * x + c per feature, its two vectors named "scale" and "shift".
struct Affine {
  int d = 1;
  static const char* name() { return "affine"; }
  int num_features() const { return d; }
  int num_outputs() const { return d; }
  int num_parameters() const { return 2 * d; }
  std::string describe() const { return std::to_string(d); }
  static Affine from_description(const std::string& text) { return Affine{std::stoi(text)}; }
  std::vector<gradsum::ParameterTensor> parameter_tensors() const {
    return {{"scale", {d}, 0, {2}}, {"shift", {d}, 1, {2}}};
  }
};

}  // namespace

TEST_CASE("save_model: every model round-trips in both precisions, bytes and predictions") {
  const gradsum::MLP net(5, {7, 4}, 3, gradsum::Activation::tanh);
  check_round_trip<gradsum::Linear, double>(gradsum::Linear(6), "linear");
  check_round_trip<gradsum::Linear, float>(gradsum::Linear(6), "linear");
  check_round_trip<gradsum::Softmax, double>(gradsum::Softmax(4, 3), "softmax");
  check_round_trip<gradsum::Softmax, float>(gradsum::Softmax(4, 3), "softmax");
  check_round_trip<gradsum::MLP, double>(net, "mlp");
  check_round_trip<gradsum::MLP, float>(net, "mlp");
  const gradsum::MLP relu(3, {2}, 1, gradsum::Activation::relu);
  check_round_trip<gradsum::MLP, float>(relu, "mlp_relu");
}

TEST_CASE("save_model: tensors in PyTorch's layout, F64 for double and F32 for float") {
  const std::string path = temp_path("layout.safetensors");
  // Softmax keeps [w_0, b_0, w_1, b_1, …] (w_c of length d): nn.Linear(2, 3)'s
  // weight [3, 2] is rows w_c, its bias the b_c.
  gradsum::save_model(path, gradsum::Softmax(2, 3), numbered<double>(9));
  CHECK(tensor_values(path, "weight") == std::vector<double>{1, 2, 4, 5, 7, 8});
  CHECK(tensor_values(path, "bias") == std::vector<double>{3, 6, 9});
  CHECK(gradsum::read_safetensors(path).find("weight")->dtype == "F64");
  // Linear keeps [w_0 … w_{d-1}, b]: weight [1, 3], bias [1].
  gradsum::save_model(path, gradsum::Linear(3), numbered<float>(4));
  CHECK(tensor_values(path, "weight") == std::vector<double>{1, 2, 3});
  CHECK(tensor_values(path, "bias") == std::vector<double>{4});
  CHECK(gradsum::read_safetensors(path).find("weight")->shape ==
        std::vector<std::uint64_t>{1, 3});
  CHECK(gradsum::read_safetensors(path).find("bias")->dtype == "F32");
  // MLP layer l: weight [outputs, inputs] is W_l transposed (MLP::weights).
  const gradsum::MLP net(3, {2}, 2, gradsum::Activation::relu);
  const auto theta = numbered<double>(net.num_parameters());
  gradsum::save_model(path, net, theta);
  for (int l = 0; l < 2; ++l) {
    const auto W = net.weights(theta, l);
    const auto b = net.bias(theta, l);
    std::vector<double> weight, bias;
    for (int o = 0; o < net.layer_outputs(l); ++o) {
      for (int i = 0; i < net.layer_inputs(l); ++i) weight.push_back(W(i, o));
      bias.push_back(b(o));
    }
    const std::string prefix = "layers." + std::to_string(l) + ".";
    CHECK(tensor_values(path, prefix + "weight") == weight);
    CHECK(tensor_values(path, prefix + "bias") == bias);
  }
  const gradsum::Safetensors s = gradsum::read_safetensors(path);
  CHECK(*s.metadata_value("gradsum.model") == "mlp:3-2(relu)-2");
  CHECK(*s.metadata_value("gradsum.features") == "3");
  CHECK(*s.metadata_value("gradsum.outputs") == "2");
  std::remove(path.c_str());
}

TEST_CASE("load_model: double parameters load into a float model, rounded as a cast rounds") {
  const std::string path = temp_path("convert.safetensors");
  const gradsum::Softmax model(3, 2);
  Kokkos::View<double*, Kokkos::HostSpace> theta("theta", model.num_parameters());
  const std::vector<double> values = random_vector(theta.size(), 3, 1.0);
  for (std::size_t j = 0; j < values.size(); ++j) theta(j) = values[j] / 3;
  gradsum::save_model(path, model, theta);
  Kokkos::View<float*, Kokkos::HostSpace> narrow("narrow", model.num_parameters());
  gradsum::load_model(path, model, narrow);
  for (std::size_t j = 0; j < values.size(); ++j) CHECK(narrow(j) == float(theta(j)));
  // And back: float parameters load into a double model exactly.
  gradsum::save_model(path, model, narrow);
  Kokkos::View<double*, Kokkos::HostSpace> wide("wide", model.num_parameters());
  gradsum::load_model(path, model, wide);
  for (std::size_t j = 0; j < values.size(); ++j) CHECK(wide(j) == double(narrow(j)));
  // A double beyond float's range, or a NaN, is refused naming the tensor:
  // theta[4] is w_1[0], weight[1][0], element 3 of weight row-major.
  theta(4) = 1e300;
  gradsum::save_model(path, model, theta);
  CHECK(error_of([&] { gradsum::load_model(path, model, narrow); })
            .find("tensor 'weight' element 3 (row-major) is 1e+300, beyond the range of "
                  "float") != std::string::npos);
  theta(4) = std::nan("");
  gradsum::save_model(path, model, theta);
  CHECK(error_of([&] { gradsum::load_model(path, model, wide); })
            .find("parameters must be finite") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("save_model: the notes (loss, scaler, class names) round-trip") {
  const std::string path = temp_path("notes.safetensors");
  gradsum::ModelNotes notes;
  notes.loss = "softmax_cross_entropy";
  notes.scaler.mean = {0.1, -2.5};
  notes.scaler.scale = {1.0 / 3, 7};
  notes.class_names = {"setosa", "versi,color", "\xc3\xa9t\xc3\xa9"};
  gradsum::save_model(path, gradsum::Softmax(2, 3), numbered<double>(9), notes);
  const auto loaded = gradsum::load_model<gradsum::Softmax>(path);
  CHECK(loaded.notes.loss == notes.loss);
  CHECK(same_bits(loaded.notes.scaler.mean, notes.scaler.mean));
  CHECK(same_bits(loaded.notes.scaler.scale, notes.scaler.scale));
  CHECK(loaded.notes.class_names == notes.class_names);
  notes.class_names = {"a\nb"};
  CHECK(error_of([&] {
          gradsum::save_model(path, gradsum::Softmax(2, 3), numbered<double>(9), notes);
        }).find("control character") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("save_model: a model of the user's own plugs in through its description and tensors") {
  const std::string path = temp_path("affine.safetensors");
  gradsum::save_model(path, Affine{3}, numbered<double>(6));
  CHECK(tensor_values(path, "scale") == std::vector<double>{1, 3, 5});
  CHECK(tensor_values(path, "shift") == std::vector<double>{2, 4, 6});
  const auto loaded = gradsum::load_model<Affine, double, Kokkos::HostSpace>(path);
  CHECK(loaded.model.d == 3);
  for (int j = 0; j < 6; ++j) CHECK(loaded.theta(j) == j + 1);
  std::remove(path.c_str());
}

TEST_CASE("load_model: a file in PyTorch's layout without gradsum's metadata loads into a model") {
  // What safetensors.torch.save_file writes for nn.Linear(2, 1): F32
  // tensors, no __metadata__.
  const std::string path = temp_path("torch.safetensors");
  gradsum::Safetensors s;
  s.append("weight", {1, 2}, {0.5, -1.5}, 4);
  s.append("bias", {1}, {0.25}, 4);
  write_bytes(path, gradsum::encode_safetensors(s));
  Kokkos::View<double*, Kokkos::HostSpace> theta("theta", 3);
  gradsum::load_model(path, gradsum::Linear(2), theta);
  CHECK(theta(0) == 0.5);
  CHECK(theta(1) == -1.5);
  CHECK(theta(2) == 0.25);
  CHECK(error_of([&] { gradsum::load_model<gradsum::Linear>(path); })
            .find("names no model (no __metadata__ gradsum.model") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("load_model: files that do not fit the model are refused naming the tensor") {
  const std::string path = temp_path("misfit.safetensors");
  const gradsum::MLP net(3, {4}, 2, gradsum::Activation::tanh);
  gradsum::save_model(path, net, numbered<double>(net.num_parameters()));
  Kokkos::View<double*, Kokkos::HostSpace> theta("theta", net.num_parameters());
  const gradsum::MLP other(3, {4}, 2, gradsum::Activation::relu);
  CHECK(error_of([&] { gradsum::load_model(path, other, theta); })
            .find("holds model 'mlp:3-4(tanh)-2', expected 'mlp:3-4(relu)-2'") !=
        std::string::npos);
  CHECK(error_of([&] { gradsum::load_model<gradsum::Softmax>(path); })
            .find("holds model 'mlp:3-4(tanh)-2', not a softmax model") != std::string::npos);
  Kokkos::View<double*, Kokkos::HostSpace> short_theta("short", 3);
  CHECK(error_of([&] { gradsum::load_model(path, net, short_theta); })
            .find("theta has 3 entries, the model 26 parameters") != std::string::npos);

  // Tensors written by hand around the model's: each misfit by name.
  auto refused = [&](const gradsum::Safetensors& file) {
    write_bytes(path, gradsum::encode_safetensors(file));
    return error_of([&] { gradsum::load_model(path, net, theta); });
  };
  const std::vector<double> w0(12, 1.0), b0(4, 1.0), w1(8, 1.0), b1(2, 1.0);
  gradsum::Safetensors s;
  s.append("layers.0.weight", {4, 3}, w0, 4);
  s.append("layers.0.bias", {4}, b0, 4);
  s.append("layers.1.weight", {2, 4}, w1, 4);
  CHECK(refused(s).find("tensor 'layers.1.bias' (shape [2]) is missing") != std::string::npos);
  s.append("layers.1.bias", {2}, b1, 4);
  CHECK(refused(s) == "accepted");
  gradsum::Safetensors extra = s;
  extra.append("layers.2.weight", {1}, {0.0}, 4);
  CHECK(refused(extra).find("tensor 'layers.2.weight' is not a parameter of mlp:3-4(tanh)-2") !=
        std::string::npos);
  gradsum::Safetensors transposed = s;
  transposed.tensors[0].shape = {3, 4};
  CHECK(refused(transposed).find("tensor 'layers.0.weight' has shape [3, 4], expected [4, 3]") !=
        std::string::npos);
  gradsum::Safetensors integers = s;
  integers.tensors[3].dtype = "I32";
  CHECK(refused(integers).find("tensor 'layers.1.bias' has dtype 'I32', expected F32 or F64") !=
        std::string::npos);
  gradsum::Safetensors widths = s;
  widths.metadata = {{"gradsum.model", "mlp:3-4(tanh)-2"}, {"gradsum.features", "x3"},
                     {"gradsum.outputs", "2"}};
  CHECK(refused(widths).find("__metadata__ gradsum.features is 'x3', expected an integer in "
                             "[1, 2147483646]") != std::string::npos);
  gradsum::Safetensors scaler = s;
  scaler.metadata = {{"gradsum.scaler.mean", "1,2,3"}, {"gradsum.scaler.scale", "1,0x,1"}};
  CHECK(refused(scaler).find("__metadata__ gradsum.scaler.scale value 2 is '0x', expected a "
                             "finite number") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("load_model: a file declaring 1 GB of tensors is refused before its data is read") {
  // A valid safetensors file (sparse: it takes no disk) whose one tensor
  // of 2^28 floats does not fit Linear(3): refused from the header, with
  // no growth of the peak memory the size of its data.
  const std::string path = temp_path("huge_tensor.safetensors");
  std::string header = "{\"weight\":{\"dtype\":\"F32\",\"shape\":[268435456],"
                       "\"data_offsets\":[0,1073741824]}}";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string head(8, '\0');
  for (int k = 0; k < 8; ++k) head[std::size_t(k)] = char((header.size() >> (8 * k)) & 0xff);
  head += header;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, head.data(), head.size()) == ::ssize_t(head.size()));
  REQUIRE(::ftruncate(fd, ::off_t(head.size() + 1073741824)) == 0);
  ::close(fd);
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  Kokkos::View<double*, Kokkos::HostSpace> theta("theta", 4);
  CHECK(error_of([&] { gradsum::load_model(path, gradsum::Linear(3), theta); })
            .find("tensor 'weight' has shape [268435456], expected [1, 3]") != std::string::npos);
  ::getrusage(RUSAGE_SELF, &after);
  CHECK(after.ru_maxrss - before.ru_maxrss < 64 * 1024);  // kilobytes
  std::remove(path.c_str());
}

TEST_CASE_TEMPLATE_DEFINE("save_model: through a step, loaded on every space, the same predictions",
                          Space, model_file_spaces) {
  using Memory = typename Space::memory_space;
  const std::string path = temp_path("step.safetensors");
  const gradsum::MLP net(4, {6}, 3, gradsum::Activation::sigmoid);
  auto step = gradsum::make_step<double>(Space(), net, gradsum::SoftmaxCrossEntropy{},
                                         gradsum::SGD{});
  auto theta = step.make_parameters();
  gradsum::initialize(net, gradsum::Initializer::parse("glorot").with_seed(3), theta);
  gradsum::save_model(path, step, theta);
  const auto loaded = gradsum::load_model<gradsum::MLP, double, Memory>(path);
  CHECK(loaded.notes.loss == "softmax_cross_entropy");
  const auto p = random_problem(9, 4, Kind::multiclass, 3, 17);
  const auto data = gradsum::Dataset<double, Memory>::from_host(p.n, p.d, p.x, p.y);
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> a("a", p.n, 3), b("b", p.n, 3);
  gradsum::predict(Space(), net, theta, data.features(), a);
  gradsum::predict(Space(), loaded.model, loaded.theta, data.features(), b);
  const auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  const auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  CHECK(same_bits(std::vector<double>(ha.data(), ha.data() + ha.size()),
                  std::vector<double>(hb.data(), hb.data() + hb.size())));
  std::remove(path.c_str());
}
TEST_CASE_TEMPLATE_APPLY(model_file_spaces, Spaces);
