// SPDX-License-Identifier: Apache-2.0
// A composition of layers as a model (Network): a small GPT's gradient
// through the step is the central differences of its mean loss over every
// position, at odd contexts and several heads; the sums of two halves of a
// batch are the sums of the whole (the partition identity, token by
// token); the count is windows x context; an MLP written as dense layers
// gives the MLP's own gradient; check_model passes the GPT and catches a
// planted wrong factor and a backward that assigns; a GPT is named by its
// shape in files, its tensors and vocabulary round-trip through
// safetensors, and a run resumed from its checkpoint continues bit for
// bit; and what a Network cannot do, or data it cannot read, is a clear
// error.

#include "file_helpers.hpp"
#include "test_helpers.hpp"

#include <gradsum/gradsum.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

using namespace gradsum_test;

namespace network_test {

const char* const text =
    "In the beginning God created the heaven and the earth. And the earth was without form, "
    "and void; and darkness was upon the face of the deep.";

template <class Space>
using Theta = Kokkos::View<double*, typename Space::memory_space>;

template <class Space>
Theta<Space> device_vector(const std::vector<double>& v) {
  Theta<Space> out("theta", v.size());
  auto h = Kokkos::create_mirror_view(out);
  for (std::size_t j = 0; j < v.size(); ++j) h(j) = v[j];
  Kokkos::deep_copy(out, h);
  return out;
}

template <class View>
std::vector<double> host_vector(const View& v, std::size_t n) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return std::vector<double>(h.data(), h.data() + n);
}

// The GPT's gradient of the mean loss against central differences of the
// loss the step reports, on every coordinate.
template <class Space>
void check_gpt_gradient(int context, int heads, int width, int layers) {
  using Memory = typename Space::memory_space;
  const auto vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  const gradsum::TextWindows<Memory> windows(vocabulary.encode(text, "text"), context, "text");
  const auto data = windows.template dataset<double>();
  const gradsum::GptShape shape{vocabulary.size(), context, layers, heads, width};
  const auto gpt = gradsum::make_gpt(shape);
  const int P = gpt.num_parameters();
  INFO("context " << context << ", heads " << heads << ", width " << width << ", layers "
                  << layers << ", " << P << " parameters");
  auto step = gradsum::make_step<double>(Space(), gpt, gradsum::SoftmaxCrossEntropy{},
                                         gradsum::SGD{0.1});
  CHECK(step.gradient_path() == gradsum::GradientPath::network);
  Kokkos::View<std::int64_t*, Memory> index("index", 8);
  const auto rows = windows.select(windows.draw_offsets(3, 0, 6), index);
  auto theta = device_vector<Space>(random_vector(std::size_t(P), 11, 0.4));
  const auto result = step.evaluate(theta, data, rows);
  CHECK(result.count == 6 * context);
  const auto gradient = host_vector(step.gradient(), std::size_t(P));
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), theta);
  std::vector<double> differences(static_cast<std::size_t>(P));
  const double h = 1e-5;
  for (int j = 0; j < P; ++j) {
    const double keep = host(j);
    host(j) = keep + h;
    Kokkos::deep_copy(theta, host);
    const double up = step.evaluate(theta, data, rows).loss;
    host(j) = keep - h;
    Kokkos::deep_copy(theta, host);
    const double down = step.evaluate(theta, data, rows).loss;
    host(j) = keep;
    differences[std::size_t(j)] = (up - down) / (2 * h);
  }
  CHECK(relative_distance(gradient, differences) < 1e-7);
}

TEST_CASE_TEMPLATE_DEFINE("network: a GPT's gradient is the central differences of its mean "
                          "loss over every position",
                          Space, gpt_gradient) {
  check_gpt_gradient<Space>(5, 2, 4, 2);  // odd context, two heads, two blocks
  check_gpt_gradient<Space>(1, 1, 3, 1);  // a context of one token, one head
  check_gpt_gradient<Space>(4, 4, 8, 1);  // heads of width 2
}
TEST_CASE_TEMPLATE_APPLY(gpt_gradient, Spaces);

TEST_CASE_TEMPLATE_DEFINE("network: the sums of two halves of a batch are the sums of the whole, "
                          "and the count is windows x context",
                          Space, gpt_partition) {
  using Memory = typename Space::memory_space;
  const auto vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  const int context = 7;
  const gradsum::TextWindows<Memory> windows(vocabulary.encode(text, "text"), context, "text");
  const auto data = windows.template dataset<double>();
  const auto gpt = gradsum::make_gpt({vocabulary.size(), context, 2, 2, 8});
  const int P = gpt.num_parameters();
  gradsum::Gpt small = gpt;
  small.panel_tokens = 2 * context;  // panels of two windows: several per batch
  auto step = gradsum::make_step<double>(Space(), gpt, gradsum::SoftmaxCrossEntropy{});
  auto panelled = gradsum::make_step<double>(Space(), small, gradsum::SoftmaxCrossEntropy{});
  const auto theta = device_vector<Space>(
      gradsum::gpt_initial_parameters({vocabulary.size(), context, 2, 2, 8}, 5));
  const auto offsets = windows.full_batch_offsets(0, windows.num_windows());
  const std::int64_t n = std::int64_t(offsets.size()), half = n / 2;
  Kokkos::View<std::int64_t*, Memory> index("index", offsets.size());
  const auto all = windows.select(offsets, index);
  const auto whole = step.evaluate(theta, data, all);
  CHECK(whole.count == n * context);
  const auto total = host_vector(step.sums(), std::size_t(P) + 1);
  // The loss alone, without the backward passes: the same bits.
  const auto alone = panelled.evaluate_loss(theta, data, all);
  CHECK(alone.loss == panelled.evaluate(theta, data, all).loss);
  CHECK(std::isnan(alone.gradient_norm));
  CHECK(alone.count == n * context);
  const auto in_panels = panelled.evaluate(theta, data, all);
  CHECK(in_panels.count == n * context);
  CHECK(relative_distance(host_vector(panelled.sums(), std::size_t(P) + 1), total) < 1e-12);
  const auto first = panelled.evaluate(theta, data, gradsum::RowList<Memory>{index, 0, half});
  const auto a = host_vector(panelled.sums(), std::size_t(P) + 1);
  const auto second = panelled.evaluate(theta, data, gradsum::RowList<Memory>{index, half, n});
  const auto b = host_vector(panelled.sums(), std::size_t(P) + 1);
  CHECK(first.count + second.count == whole.count);
  std::vector<double> both(a.size());
  for (std::size_t j = 0; j < a.size(); ++j) both[j] = a[j] + b[j];
  CHECK(relative_distance(both, total) < 1e-12);
  // The mean loss of the first window at random parameters is near log V.
  CHECK(whole.loss > 0);
}
TEST_CASE_TEMPLATE_APPLY(gpt_partition, Spaces);

// The MLP's gradient mapped into the dense layers' order through its
// named tensors (PyTorch's [out, in] weights and the bias).
std::vector<double> to_dense_order(const gradsum::MLP& mlp, const std::vector<double>& v) {
  std::vector<double> out;
  for (const auto& t : gradsum::parameter_tensors(mlp))
    for (std::int64_t j = 0; j < t.size(); ++j) out.push_back(v[std::size_t(t.position(j))]);
  return out;
}

template <class Space, class Body, class Loss>
void compare_with_mlp(const gradsum::MLP& mlp, const Body& body, const Loss& loss,
                      const HostProblem& problem) {
  using Data = DataOn<Space, double>;
  const auto data = Data::from_host(problem.n, problem.d, problem.x, problem.y);
  const gradsum::Network<Body> network(body);
  REQUIRE(network.num_parameters() == mlp.num_parameters());
  const int P = mlp.num_parameters();
  const auto start = random_vector(std::size_t(P), 17, 0.5);
  auto by_mlp = gradsum::make_step<double>(Space(), mlp, loss);
  auto by_layers = gradsum::make_step<double>(Space(), network, loss);
  CHECK(by_layers.gradient_path() == gradsum::GradientPath::network);
  const auto rows = gradsum::RowRange{0, problem.n};
  const auto a = by_mlp.evaluate(device_vector<Space>(start), data, rows);
  const auto b = by_layers.evaluate(device_vector<Space>(to_dense_order(mlp, start)), data, rows);
  CHECK(a.count == b.count);
  CHECK(b.loss == doctest::Approx(a.loss).epsilon(1e-12));
  const auto expected = to_dense_order(mlp, host_vector(by_mlp.gradient(), std::size_t(P)));
  CHECK(relative_distance(host_vector(by_layers.gradient(), std::size_t(P)), expected) < 1e-12);

  // predict, in panels of 32 rows: the MLP's outputs and classes.
  gradsum::Network<Body> panelled = network;
  panelled.panel_tokens = 32;
  const int k = mlp.num_outputs();
  using Memory = typename Space::memory_space;
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> z_mlp("z_mlp", problem.n, k),
      z_net("z_net", problem.n, k);
  gradsum::predict(Space(), mlp, device_vector<Space>(start), data.features(), z_mlp);
  const auto mapped = device_vector<Space>(to_dense_order(mlp, start));
  gradsum::predict(Space(), panelled, mapped, data.features(), z_net);
  const auto hm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), z_mlp);
  const auto hn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), z_net);
  CHECK(relative_distance(std::vector<double>(hn.data(), hn.data() + hn.size()),
                          std::vector<double>(hm.data(), hm.data() + hm.size())) < 1e-12);
  Kokkos::View<int*, Memory> c_mlp("c_mlp", problem.n), c_net("c_net", problem.n);
  gradsum::predict_classes(Space(), mlp, loss, device_vector<Space>(start), data.features(),
                           c_mlp);
  gradsum::predict_classes(Space(), panelled, loss, mapped, data.features(), c_net);
  const auto cm = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c_mlp);
  const auto cn = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c_net);
  int differ = 0;
  for (std::int64_t i = 0; i < problem.n; ++i) differ += cm(i) != cn(i);
  CHECK(differ == 0);

  // fit(): three epochs of mini-batches land where the MLP's land.
  auto fit_mlp = gradsum::make_step<double>(Space(), mlp, loss, gradsum::SGD{0.1});
  auto fit_net = gradsum::make_step<double>(Space(), network, loss, gradsum::SGD{0.1});
  const auto theta_mlp = device_vector<Space>(start);
  const auto theta_net = device_vector<Space>(to_dense_order(mlp, start));
  gradsum::FitOptions options;
  options.epochs = 3;
  options.batch = 50;
  options.seed = 4;
  const auto fitted_mlp = gradsum::fit(fit_mlp, theta_mlp, data, options);
  const auto fitted_net = gradsum::fit(fit_net, theta_net, data, options);
  CHECK(fitted_net.position.step == fitted_mlp.position.step);
  CHECK(relative_distance(host_vector(theta_net, std::size_t(P)),
                          to_dense_order(mlp, host_vector(theta_mlp, std::size_t(P)))) < 1e-10);
}

TEST_CASE_TEMPLATE_DEFINE("network: an MLP written as dense layers gives the MLP's gradient, "
                          "predictions and fit()",
                          Space, mlp_as_layers) {
  using gradsum::Activation;
  using gradsum::Dense;
  const int d = 6;
  const auto classes = random_problem(203, d, Kind::multiclass, 4, 31);
  const auto labels = random_problem(150, d, Kind::binary, 1, 32);
  for (Activation f : {Activation::tanh, Activation::relu, Activation::sigmoid}) {
    INFO("activation " << gradsum::activation_name(f));
    using Two = gradsum::Sequential<Dense, Dense>;
    compare_with_mlp<Space>(gradsum::MLP(d, {9}, 4, f), Two(Dense(d, 9, f), Dense(9, 4)),
                            gradsum::SoftmaxCrossEntropy{}, classes);
    using Three = gradsum::Sequential<Dense, Dense, Dense>;
    compare_with_mlp<Space>(gradsum::MLP(d, {9, 5}, 1, f),
                            Three(Dense(d, 9, f), Dense(9, 5, f), Dense(5, 1)),
                            gradsum::BinaryCrossEntropy{}, labels);
  }
}
TEST_CASE_TEMPLATE_APPLY(mlp_as_layers, Spaces);

TEST_CASE("network: shapes that do not fit, reductions without the network path and foreign "
          "token ids are errors that say what") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  using gradsum::Dense;
  using Body = gradsum::Sequential<Dense, Dense>;
  const Body body(Dense(3, 4), Dense(4, 5));
  CHECK_THROWS_WITH_AS(gradsum::Network<Body>(body, 8, 5),
                       doctest::Contains("takes one token id per row"), gradsum::Error);
  using Text = gradsum::Sequential<gradsum::TokenEmbedding, Dense>;
  const Text embed(gradsum::TokenEmbedding{5, 4}, Dense(4, 6));
  CHECK_THROWS_WITH_AS(gradsum::Network<Text>(embed, 8, 5, gradsum::NetworkOutput::body),
                       doctest::Contains("the vocabulary has 5"), gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::Network<Text>(embed, 0, 5),
                       doctest::Contains("a context of 0"), gradsum::Error);
  const auto gpt = gradsum::make_gpt({5, 4, 1, 1, 4});
  CHECK_THROWS_WITH_AS(
      gradsum::make_step<double>(Space(), gpt, gradsum::SoftmaxCrossEntropy{}, gradsum::SGD{},
                                 gradsum::Objective{}, gradsum::Analytic{},
                                 gradsum::Reproducible{}),
      doctest::Contains("network path"), gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::make_gpt({5, 4, 1, 3, 4}),
                       doctest::Contains("not divisible by heads 3"), gradsum::Error);
  // Windows holding a value the vocabulary of 5 lacks.
  using Memory = Space::memory_space;
  const gradsum::TextWindows<Memory> windows({0, 1, 2, 3, 4, 0, 1, 7, 2, 3}, 4, "ids");
  const auto data = windows.dataset<double>();
  auto step = gradsum::make_step<double>(Space(), gpt, gradsum::SoftmaxCrossEntropy{});
  Kokkos::View<double*, Memory> theta("theta", std::size_t(gpt.num_parameters()));
  CHECK_THROWS_WITH_AS(step.evaluate(theta, data, gradsum::RowRange{0, 2}),
                       doctest::Contains("not a token id of the vocabulary of 5"),
                       gradsum::Error);
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> z("z", 5, 5);
  Kokkos::View<double**, Kokkos::LayoutRight, Memory> rows("rows", 5, 5);
  CHECK_THROWS_WITH_AS(gradsum::predict(Space(), gpt, theta, rows, z),
                       doctest::Contains("outputs at every position"), gradsum::Error);
}

TEST_CASE("network: the GPT's named tensors cover its parameters in order, with PyTorch's "
          "names and shapes") {
  const gradsum::GptShape shape{63, 64, 4, 4, 128};
  const auto tensors = gradsum::gpt_parameter_tensors(shape);
  // 0.81 M parameters: (V + T) C + L (12 C^2 + 13 C) + 2 C.
  const std::int64_t C = 128, expected = (63 + 64) * C + 4 * (12 * C * C + 13 * C) + 2 * C;
  CHECK(gradsum::make_gpt(shape).num_parameters() == expected);
  std::int64_t at = 0;
  for (const auto& t : tensors) {
    CHECK(t.offset == at);
    at += t.size();
  }
  CHECK(at == expected);
  REQUIRE(tensors.size() == 2 + 4 * 12 + 2);
  CHECK(tensors[0].name == "wte.weight");
  CHECK(tensors[1].name == "wpe.weight");
  CHECK(tensors[4].name == "blocks.0.qkv.weight");
  CHECK(tensors[4].shape == std::vector<std::int64_t>{3 * C, C});
  CHECK(tensors[12].name == "blocks.0.fcproj.weight");
  CHECK(tensors[12].shape == std::vector<std::int64_t>{C, 4 * C});
  CHECK(tensors.back().name == "lnf.bias");
  // Layer norms start at 1, biases at 0.
  const auto theta = gradsum::gpt_initial_parameters({5, 4, 1, 1, 4}, 3);
  const auto small = gradsum::gpt_parameter_tensors({5, 4, 1, 1, 4});
  CHECK(theta[std::size_t(small[2].offset)] == 1.0);       // blocks.0.ln1.weight
  CHECK(theta[std::size_t(small[3].offset)] == 0.0);       // blocks.0.ln1.bias
  CHECK(theta[std::size_t(small[0].offset)] != 0.0);       // wte.weight
}

TEST_CASE("network: generate extends the prompt, the same text for the same seed, the most "
          "likely token at temperature 0") {
  using Space = Kokkos::DefaultExecutionSpace;
  const auto vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  const gradsum::GptShape shape{vocabulary.size(), 8, 1, 2, 8};
  const auto gpt = gradsum::make_gpt(shape);
  const auto theta = device_vector<Space>(random_vector(std::size_t(gpt.num_parameters()), 4, 0.5));
  const auto prompt = vocabulary.encode("And God said", "prompt");
  const auto a = gradsum::generate(Space(), gpt, theta, prompt, 20, 1.0, 7);
  const auto b = gradsum::generate(Space(), gpt, theta, prompt, 20, 1.0, 7);
  REQUIRE(a.size() == prompt.size() + 20);
  CHECK(a == b);
  CHECK(std::vector<std::int32_t>(a.begin(), a.begin() + long(prompt.size())) == prompt);
  for (const auto id : a) CHECK((id >= 0 && id < vocabulary.size()));
  // Seeds apart give texts apart (20 draws from 30-odd tokens at random
  // parameters: the same text by chance is out of reach).
  CHECK(gradsum::generate(Space(), gpt, theta, prompt, 20, 1.0, 8) != a);
  // At temperature 0 each token is the argmax of the logits at the last
  // position: the token whose cross-entropy as the next target is least,
  // which the step's loss over one window tells independently.
  const auto greedy = gradsum::generate(Space(), gpt, theta, prompt, 1, 0.0, 0);
  using Memory = Space::memory_space;
  auto step = gradsum::make_step<double>(Space(), gpt, gradsum::SoftmaxCrossEntropy{});
  double best = 1e300;
  int best_id = -1;
  const int T = 8;  // the context: the prompt's last 8 tokens are the window
  for (int v = 0; v < vocabulary.size(); ++v) {
    // One window: the prompt's last T tokens, then candidate v as the
    // target of the last position (the only loss term that depends on v).
    std::vector<std::int32_t> ids(prompt.end() - T, prompt.end());
    ids.push_back(v);
    const gradsum::TextWindows<Memory> one(ids, T, "window");
    const auto data = one.dataset<double>();
    const double loss = step.evaluate(theta, data, gradsum::RowRange{0, 1}).loss;
    if (loss < best) best = loss, best_id = v;
  }
  CHECK(greedy.back() == best_id);
  CHECK_THROWS_WITH_AS(gradsum::generate(Space(), gpt, theta, {}, 3, 1.0, 1),
                       doctest::Contains("the prompt is empty"), gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::generate(Space(), gpt, theta, {0, 99}, 3, 1.0, 1),
                       doctest::Contains("token 1 of the prompt is 99"), gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::generate(Space(), gpt, theta, prompt, 3, -1.0, 1),
                       doctest::Contains("temperature -1"), gradsum::Error);
}

TEST_CASE("network: a GPT is named by its shape in files and rebuilt from that name") {
  const gradsum::GptShape shape{5, 4, 2, 2, 8};
  const gradsum::Gpt gpt(shape);
  CHECK(gradsum::detail::model_description(gpt) ==
        "gpt:vocabulary=5,context=4,layers=2,heads=2,width=8");
  const auto back = gradsum::Gpt::from_description(gpt.describe());
  CHECK(back.describe() == gpt.describe());
  CHECK(back.num_parameters() == gpt.num_parameters());
  CHECK(back.architecture() == gpt.architecture());
  const char* const bad[][2] = {
      {"vocabulary=5,context=4,layers=2,heads=2", "ends after heads="},
      {"vocabulary=5,context=4,layers=2,heads=2,width=8,", "holds more after width"},
      {"vocabulary=5,context=0,layers=2,heads=2,width=8", "has no positive context"},
      {"vocabulary=5,layers=2,context=4,heads=2,width=8", "lacks context= in its place"},
      {"vocabulary=5,context=4,layers=2,heads=3,width=8", "not divisible by heads 3"},
      {"vocabulary=99999999999,context=4,layers=2,heads=2,width=8", "has no positive vocabulary"}};
  for (const auto& entry : bad) {
    const char* description = entry[0];
    INFO(description);
    CHECK_THROWS_WITH_AS(gradsum::Gpt::from_description(description),
                         doctest::Contains(entry[1]), gradsum::Error);
  }
}

TEST_CASE("network: a GPT's parameters and vocabulary round-trip through safetensors under "
          "PyTorch's names, and files that do not fit are refused naming the tensor") {
  using Space = Kokkos::DefaultHostExecutionSpace;
  const gradsum::GptShape shape{4, 3, 1, 2, 4};
  const gradsum::Gpt gpt(shape);
  const std::size_t P = std::size_t(gpt.num_parameters());
  const auto values = random_vector(P, 21, 1.0);
  const auto theta = device_vector<Space>(values);
  gradsum::ModelNotes notes;
  notes.vocabulary = std::string("\n a\xff", 4);
  const std::string path = temp_path("gpt.safetensors");
  gradsum::save_model(path, gpt, theta, notes);

  const auto loaded = gradsum::load_model<gradsum::Gpt, double, Kokkos::HostSpace>(path);
  CHECK(loaded.model.describe() == gpt.describe());
  CHECK(loaded.notes.vocabulary == notes.vocabulary);
  CHECK(same_bits(std::vector<double>(loaded.theta.data(), loaded.theta.data() + P), values));
  // The file's tensors are the ones PyTorch's state_dict names, each
  // element where the flat vector keeps it (row-major, [out, in]).
  const gradsum::Safetensors file = gradsum::read_safetensors(path);
  const auto tensors = gradsum::gpt_parameter_tensors(shape);
  REQUIRE(file.tensors.size() == tensors.size());
  for (const auto& t : tensors) {
    const gradsum::SafetensorsTensor* stored = file.find(t.name);
    REQUIRE(stored != nullptr);
    CHECK(stored->dtype == "F64");
    for (std::int64_t j = 0; j < t.size(); ++j)
      CHECK(file.value(*stored, std::size_t(j)) == values[std::size_t(t.offset + j)]);
  }
  // The whole blocks.0.qkv.weight is 3C x C, queries in its first C rows.
  CHECK(file.find("blocks.0.qkv.weight")->shape == std::vector<std::uint64_t>{12, 4});

  // Another width: the file names its own model; loaded into this one's
  // shape with the tensors alone, the first tensor of another shape fails.
  const gradsum::Gpt wider({4, 3, 1, 2, 8});
  Kokkos::View<double*, Kokkos::HostSpace> other("other", std::size_t(wider.num_parameters()));
  CHECK_THROWS_WITH_AS(gradsum::load_model(path, wider, other),
                       doctest::Contains("holds model 'gpt:vocabulary=4,context=3,layers=1,"
                                         "heads=2,width=4', expected 'gpt:vocabulary=4,"
                                         "context=3,layers=1,heads=2,width=8'"),
                       gradsum::Error);
  gradsum::Safetensors bare;  // as PyTorch writes it: no metadata
  for (const auto& t : gradsum::gpt_parameter_tensors(shape)) {
    std::vector<double> v(std::size_t(t.size()), 0.5);
    const std::string name = t.name == "blocks.0.fc.bias" ? "blocks.0.fc.b" : t.name;
    bare.append(name, std::vector<std::uint64_t>(t.shape.begin(), t.shape.end()), v, 4);
  }
  write_bytes(path, gradsum::encode_safetensors(bare));
  Kokkos::View<double*, Kokkos::HostSpace> same("same", P);
  CHECK_THROWS_WITH_AS(gradsum::load_model(path, gpt, same),
                       doctest::Contains("tensor 'blocks.0.fc.bias' (shape [16]) is missing"),
                       gradsum::Error);
  CHECK_THROWS_WITH_AS(gradsum::load_model(path, wider, other),
                       doctest::Contains("tensor 'wte.weight' has shape [4, 4], expected [4, 8]"),
                       gradsum::Error);
  // A vocabulary that is no vocabulary.
  notes.vocabulary = "ba";
  CHECK_THROWS_WITH_AS(gradsum::save_model(path, gpt, theta, notes),
                       doctest::Contains("the vocabulary: characters 0 and 1 ('b', 'a')"),
                       gradsum::Error);
  notes.vocabulary = "abc";
  CHECK_THROWS_WITH_AS(gradsum::save_model(path, gpt, theta, notes),
                       doctest::Contains("a vocabulary of 3 characters for a model of 4 outputs"),
                       gradsum::Error);
  std::remove(path.c_str());
}

TEST_CASE_TEMPLATE_DEFINE("network: a GPT run resumed from its checkpoint continues bit for bit",
                          Space, gpt_resume) {
  using Memory = typename Space::memory_space;
  const auto vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  const gradsum::GptShape shape{vocabulary.size(), 6, 1, 2, 8};
  const gradsum::Gpt gpt(shape);
  const gradsum::TextWindows<Memory> windows(vocabulary.encode(text, "text"), 6, "text");
  const auto data = windows.template dataset<float>();
  auto make = [&] {
    return gradsum::make_step<float>(
        Space(), gpt, gradsum::SoftmaxCrossEntropy{},
        gradsum::Scheduled<gradsum::AdamW>(gradsum::AdamW{0.01},
                                           gradsum::Schedule::cosine(8).with_warmup(2)));
  };
  Kokkos::View<std::int64_t*, Memory> index("index", 4);
  auto run = [&](auto& step, const auto& theta, std::int64_t from, std::int64_t to) {
    for (std::int64_t s = from; s < to; ++s)
      step(theta, data, windows.select(windows.draw_offsets(9, s, 4), index));
  };
  auto start = [&] {
    const auto values = gradsum::gpt_initial_parameters(shape, 2);
    Kokkos::View<float*, Memory> theta("theta", values.size());
    auto h = Kokkos::create_mirror_view(theta);
    for (std::size_t j = 0; j < values.size(); ++j) h(j) = float(values[j]);
    Kokkos::deep_copy(theta, h);
    return theta;
  };
  auto straight = make();
  const auto a = start();
  run(straight, a, 0, 8);

  const std::string path = temp_path("gpt.ckpt");
  auto first = make();
  const auto b = start();
  run(first, b, 0, 3);
  gradsum::save_checkpoint(path, first, b, {3, 0, 3, 9}, {}, {}, {},
                           vocabulary.characters());
  auto resumed = make();
  const auto c = start();
  gradsum::CheckpointData saved;
  const auto position = gradsum::load_checkpoint(path, resumed, c, &saved);
  CHECK(position.step == 3);
  CHECK(saved.vocabulary == vocabulary.characters());
  CHECK(saved.model == "gpt:" + gpt.describe());
  run(resumed, c, position.step, 8);
  const auto x = host_vector(a, std::size_t(gpt.num_parameters()));
  const auto y = host_vector(c, std::size_t(gpt.num_parameters()));
  CHECK(same_bits(x, y));
  std::remove(path.c_str());
}
TEST_CASE_TEMPLATE_APPLY(gpt_resume, Spaces);

// out = w ∘ in, column by column, with one planted defect on request: a
// wrong factor in the gradient of its input, or a backward that assigns
// its parameters' gradient instead of adding it.
struct Planted {
  enum Defect { none, factor, assigns };
  int width = 1;
  Defect defect = none;
  int num_parameters() const { return width; }
  int input_width() const { return width; }
  int output_width() const { return width; }
  std::size_t workspace_size(gradsum::Tokens) const { return 0; }
  std::string describe() const { return "planted(" + std::to_string(width) + ")"; }
  template <class Space, class Scalar, class Memory>
  void forward(const Space& space, const Scalar* w, gradsum::Tokens t,
               gradsum::LayerInput<Scalar, Memory> in, gradsum::LayerOutput<Scalar, Memory> out,
               Scalar*) const {
    const int n = width;
    Kokkos::parallel_for("test::planted::forward",
                         Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, t.rows()),
                         KOKKOS_LAMBDA(std::int64_t r) {
                           for (int j = 0; j < n; ++j) out(r, j) = w[j] * in(r, j);
                         });
  }
  template <class Space, class Scalar, class Memory>
  void backward(const Space& space, const Scalar* w, gradsum::Tokens t,
                gradsum::LayerInput<Scalar, Memory> in, gradsum::LayerInput<Scalar, Memory>,
                gradsum::LayerInput<Scalar, Memory> dout, Scalar* g,
                gradsum::LayerOutput<Scalar, Memory> din, Scalar*) const {
    const int n = width;
    const std::int64_t rows = t.rows();
    const bool add = defect != assigns;
    const Scalar scale = defect == factor ? Scalar(1.001) : Scalar(1);
    Kokkos::parallel_for("test::planted::weights", Kokkos::RangePolicy<Space>(space, 0, n),
                         KOKKOS_LAMBDA(int j) {
                           Scalar s = 0;
                           for (std::int64_t r = 0; r < rows; ++r) s += dout(r, j) * in(r, j);
                           g[j] = add ? g[j] + s : s;
                         });
    if (din.data() == nullptr) return;
    Kokkos::parallel_for("test::planted::input",
                         Kokkos::RangePolicy<Space, Kokkos::IndexType<std::int64_t>>(space, 0, rows),
                         KOKKOS_LAMBDA(std::int64_t r) {
                           for (int j = 0; j < n; ++j) din(r, j) = scale * w[j] * dout(r, j);
                         });
  }
};

TEST_CASE_TEMPLATE_DEFINE("network: check_model passes the GPT and catches a planted wrong "
                          "factor and a backward that assigns",
                          Space, network_check_model) {
  using Memory = typename Space::memory_space;
  const auto vocabulary = gradsum::CharVocabulary::of_text(text, "text");
  const gradsum::Gpt gpt({vocabulary.size(), 5, 2, 2, 8});
  const gradsum::TextWindows<Memory> windows(vocabulary.encode(text, "text"), 5, "text");
  const auto data = windows.template dataset<double>();
  gradsum::CheckModelOptions options;
  options.points = 2;
  options.sampled = 300;  // of the GPT's 2,600-odd parameters
  const auto report = gradsum::check_model(Space(), gpt, gradsum::SoftmaxCrossEntropy{}, data,
                                           options);
  INFO(report.summary());
  CHECK(report.passed);
  CHECK(report.samples == 4);
  CHECK(report.coordinates.size() == 300);
  // Generated windows of ids in [0, V) serve as well.
  CHECK(gradsum::check_model(Space(), gpt, gradsum::SoftmaxCrossEntropy{}).passed);

  using Body = gradsum::Sequential<gradsum::TokenEmbedding, Planted, gradsum::Dense>;
  const int V = vocabulary.size(), C = 6;
  auto network = [&](Planted::Defect defect) {
    return gradsum::Network<Body>(
        Body(gradsum::TokenEmbedding{V, C}, Planted{C, defect}, gradsum::Dense(C, V)), 5, V,
        gradsum::NetworkOutput::body);
  };
  const auto right = gradsum::check_model(Space(), network(Planted::none),
                                          gradsum::SoftmaxCrossEntropy{}, data, options);
  INFO(right.summary());
  CHECK(right.passed);
  const auto wrong = gradsum::check_model(Space(), network(Planted::factor),
                                          gradsum::SoftmaxCrossEntropy{}, data, options);
  CHECK_FALSE(wrong.passed);
  CHECK(wrong.accumulates);
  // The factor reaches the embedding's gradient, the first V x C parameters.
  REQUIRE(!wrong.worst.empty());
  CHECK(wrong.worst.front().index < V * C);
  const auto assigns = gradsum::check_model(Space(), network(Planted::assigns),
                                            gradsum::SoftmaxCrossEntropy{}, data, options);
  CHECK_FALSE(assigns.passed);
  CHECK_FALSE(assigns.accumulates);
  CHECK(assigns.diagnosis.find("a layer's backward does not add into g") != std::string::npos);
}
TEST_CASE_TEMPLATE_APPLY(network_check_model, Spaces);

}  // namespace network_test
