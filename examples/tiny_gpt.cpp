// SPDX-License-Identifier: Apache-2.0
// A tiny GPT trained on a few kilobytes of text in seconds: characters as
// tokens, windows of 32 drawn at random offsets, AdamW; the validation
// loss (the last tenth of the text, every window at stride 32) before and
// after, and a sample of generated text.
//
//     tiny_gpt [TEXT_FILE] [STEPS]
//
// Without arguments it reads examples/data/genesis.txt (the first chapters
// of Genesis, King James Version). It exits with 1 unless the validation
// loss fell below that of guessing every character uniformly (log V).
#include <gradsum/gradsum.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#ifndef GRADSUM_EXAMPLE_TEXT
#define GRADSUM_EXAMPLE_TEXT "examples/data/genesis.txt"
#endif

int main(int argc, char* argv[]) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  using Space = Kokkos::DefaultExecutionSpace;
  using Memory = Space::memory_space;
  try {
    const std::string path = argc > 1 ? argv[1] : GRADSUM_EXAMPLE_TEXT;
    const int steps = argc > 2 ? std::atoi(argv[2]) : 300;
    const std::string text = gradsum::read_text_file(path, "tiny_gpt");

    // The vocabulary is the text's sorted distinct characters; the last
    // tenth is held out for validation.
    const auto vocabulary = gradsum::CharVocabulary::of_text(text, path);
    const auto split = gradsum::split_text(text, 0.1);
    const int context = 32;
    const gradsum::TextWindows<Memory> train(vocabulary.encode(split.train, path), context, path);
    const gradsum::TextWindows<Memory> held_out(vocabulary.encode(split.validation, path), context,
                                                path);
    const auto train_data = train.dataset<float>();
    const auto validation_data = held_out.dataset<float>();

    // Two pre-norm blocks of two heads, width 48; logits tied to the
    // token embedding.
    const gradsum::GptShape shape{vocabulary.size(), context, 2, 2, 48};
    const auto gpt = gradsum::make_gpt(shape);
    gradsum::AdamW adamw;
    adamw.lr = 3e-3;
    adamw.weight_decay = 0.01;
    auto step = gradsum::make_step<float>(Space(), gpt, gradsum::SoftmaxCrossEntropy{}, adamw);
    auto theta = step.make_parameters();
    const auto start = gradsum::gpt_initial_parameters(shape, 1);
    auto host = Kokkos::create_mirror_view(theta);
    for (std::size_t j = 0; j < start.size(); ++j) host(j) = float(start[j]);
    Kokkos::deep_copy(theta, host);

    const int batch = 16;
    Kokkos::View<std::int64_t*, Memory> batch_rows("batch_rows", batch);
    Kokkos::View<std::int64_t*, Memory> validation_rows("validation_rows",
                                                        std::size_t(held_out.num_windows()));
    const auto every_window =
        held_out.select(held_out.full_batch_offsets(0, held_out.num_windows()), validation_rows);
    auto validation_loss = [&] { return step.evaluate(theta, validation_data, every_window).loss; };

    std::printf("tiny_gpt: %zu characters, vocabulary %d, %d parameters, %s\n", text.size(),
                vocabulary.size(), gpt.num_parameters(), step.gradient_path() ==
                gradsum::GradientPath::network ? "network path" : "?");
    const double before = validation_loss();
    std::printf("validation loss before training %.4f (log V = %.4f)\n", before,
                std::log(double(vocabulary.size())));
    gradsum::StepResult result;
    for (int s = 0; s < steps; ++s) {
      result = step(theta, train_data, train.select(train.draw_offsets(7, s, batch), batch_rows));
      if ((s + 1) % 100 == 0) std::printf("step %d loss %.4f\n", s + 1, result.loss);
    }
    const double after = validation_loss();
    std::printf("validation loss after %d steps %.4f\n", steps, after);

    const auto prompt = vocabulary.encode("And God said", "prompt");
    const auto sample = gradsum::generate(Space(), gpt, theta, prompt, 120, 0.8, 42);
    std::printf("sample: %s\n", vocabulary.decode(sample).c_str());
    return after < std::log(double(vocabulary.size())) ? 0 : 1;
  } catch (const gradsum::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
