// SPDX-License-Identifier: Apache-2.0
#pragma once

/// @file
/// What fit() tells its callbacks, and the callbacks gradsum ships:
/// progress, a CSV log, early stopping, the best parameters, checkpoints.

#include <gradsum/core/error.hpp>
#include <gradsum/core/kokkos_compat.hpp>
#include <gradsum/core/output_file.hpp>
#include <gradsum/core/restored.hpp>
#include <gradsum/core/signature.hpp>
#include <gradsum/data/scaling.hpp>
#include <gradsum/train/checkpoint.hpp>
#include <gradsum/train/step.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <typeinfo>
#include <vector>

namespace gradsum {

/// Where fit() stands, as its callbacks see it. Every value is the same on
/// every rank (aggregated results, counters), so decisions taken from it
/// are the same everywhere.
struct FitState {
  TrainingPosition position;        ///< updates, epochs completed, micro-batches done in the epoch
  std::int64_t epochs = 0;          ///< total epochs asked for (counting any before a resume)
  std::int64_t steps_per_epoch = 0; ///< updates per epoch
  std::int64_t first_step = 0;      ///< position.step when this fit() call began
  StepResult result;                ///< the last update's result (at the parameters before it)
  /// Moving average of the mini-batch losses (FitOptions::average_decay),
  /// which falls while single mini-batch losses jump around.
  double loss_average = std::nan("");
  /// The gradient noise scale averaged over the updates so far
  /// (NoiseScale); NaN unless the step measures its workers
  /// (Step::measure_workers).
  double noise_scale = std::nan("");
  double learning_rate = std::nan("");  ///< the rate the last update used (NaN: none)
  StepResult epoch_result;          ///< the training objective after the last epoch
  bool has_validation = false;      ///< whether `validation` holds a value
  StepResult validation;            ///< the validation objective after the last epoch
  double elapsed_seconds = 0;       ///< since this fit() call began
  int rank = 0;                     ///< this process's rank
  int ranks = 1;                    ///< number of processes
  /// Set by a callback to end training after the current call; the
  /// reason is reported by fit(). Must be decided from the values above
  /// so that every rank stops at the same update.
  bool stop = false;
  std::string stop_reason;
  /// True while on_end and the last on_checkpoint run.
  bool finished = false;
  /// The state of the loop itself - the stopping rules' and every
  /// callback's (Callback::save_state) - for a checkpoint, so that a run
  /// resumed from it (FitOptions::loop) stops where the uninterrupted run
  /// stops. Set by fit().
  std::function<std::vector<double>()> loop_state;

  /// The loss that early stopping and the best-parameter store watch: the
  /// validation objective when there is one, else the training objective.
  double monitored_loss() const { return has_validation ? validation.loss : epoch_result.loss; }
};

/// A fit() callback: override what you need. on_begin, on_epoch, on_end
/// and on_checkpoint may throw gradsum::Error (fit() makes every rank
/// throw it); on_step, called after every update, must not throw.
class Callback {
 public:
  virtual ~Callback() = default;
  /// Before the first update of this fit() call.
  virtual void on_begin(FitState&) {}
  /// After every update.
  virtual void on_step(FitState&) {}
  /// After every epoch, once the training (and validation) objective is known.
  virtual void on_epoch(FitState&) {}
  /// When training ends, for whatever reason.
  virtual void on_end(FitState&) {}
  /// After every callback's on_epoch, and after every callback's on_end
  /// (state.finished is then set): the state of every callback is final
  /// for this epoch, so this is where checkpoints are written.
  virtual void on_checkpoint(FitState&) {}

  /// Appends what this callback needs to continue exactly after a resume
  /// (stored in a checkpoint's loop state); the default has nothing.
  virtual void save_state(std::vector<double>&) const {}
  /// Reads back, from in[at …], what save_state wrote, advancing `at`.
  /// Throws gradsum::Error when the values were not written by this kind
  /// of callback.
  virtual void restore_state(const std::vector<double>&, std::size_t&) {}

  /// Adds to `s` what this callback must share with its counterparts on
  /// the other ranks so that they stay in step: its kind, and settings that
  /// decide when it stops training or writes a checkpoint (collectives).
  /// fit() compares them across ranks before the first update.
  virtual void sign(Signature& s) const { s.add_hash("callback", typeid(*this).name()); }
};

namespace detail {

/// Checks that a loop state holds, at `at`, a record of `tag` (written by
/// `owner`) with at least `values` more values, and steps over the tag.
inline void expect_loop_record(const std::vector<double>& in, std::size_t& at, double tag,
                               std::size_t values, const char* owner) {
  if (at >= in.size() || in[at] != tag || in.size() - at - 1 < values)
    fail("gradsum::fit: the checkpoint's loop state does not match this run's stopping rules and "
         "callbacks (no ", owner, " state at value ", at, " of ", in.size(),
         "): resume with the callbacks the checkpoint was written with (e.g. the same "
         "early-stopping setting)");
  ++at;
}

}  // namespace detail

/// Callbacks chosen at run time (a program's flags), called in the order
/// they were added. The list does not own them.
class CallbackList : public Callback {
 public:
  /// Appends `c`, which must outlive the list's use.
  void add(Callback& c) { list_.push_back(&c); }
  void on_begin(FitState& s) override {
    for (auto* c : list_) c->on_begin(s);
  }
  void on_step(FitState& s) override {
    for (auto* c : list_) c->on_step(s);
  }
  void on_epoch(FitState& s) override {
    for (auto* c : list_) c->on_epoch(s);
  }
  void on_end(FitState& s) override {
    for (auto* c : list_) c->on_end(s);
  }
  void on_checkpoint(FitState& s) override {
    for (auto* c : list_) c->on_checkpoint(s);
  }
  void save_state(std::vector<double>& out) const override {
    for (auto* c : list_) c->save_state(out);
  }
  void restore_state(const std::vector<double>& in, std::size_t& at) override {
    for (auto* c : list_) c->restore_state(in, at);
  }
  void sign(Signature& s) const override {
    for (auto* c : list_) c->sign(s);
  }

 private:
  std::vector<Callback*> list_;
};

/// How Progress shows itself.
enum class ProgressMode {
  automatic,  ///< a bar on a terminal, plain lines otherwise
  bar,        ///< always the bar (carriage returns)
  lines,      ///< always plain lines, one per epoch
  off         ///< nothing
};

/// Progress on rank 0: steps/s, loss and the estimated time left, as a bar
/// redrawn on a terminal or as one plain line per epoch otherwise.
class Progress : public Callback {
 public:
  explicit Progress(ProgressMode mode = ProgressMode::automatic, std::FILE* out = stdout)
      : mode_(mode), out_(out) {}

  void on_begin(FitState&) override {
    bar_ = mode_ == ProgressMode::bar ||
           (mode_ == ProgressMode::automatic && ::isatty(::fileno(out_)) == 1);
    last_draw_ = -1;
  }
  void on_step(FitState& s) override {
    if (!bar_ || s.rank != 0 || mode_ == ProgressMode::off) return;
    if (s.elapsed_seconds - last_draw_ < 0.1 && s.position.batch != 0) return;  // ~10 redraws/s
    last_draw_ = s.elapsed_seconds;
    const std::int64_t total = s.steps_per_epoch * s.epochs;
    const double done = total > 0 ? double(s.position.step) / double(total) : 1.0;
    constexpr int width = 24;
    const int filled = int(done * width + 0.5);
    std::string bar(std::size_t(filled < width ? filled : width), '=');
    bar.resize(width, ' ');
    std::fprintf(out_, "\r[%s] epoch %lld/%lld step %lld loss %.6g %.1f steps/s ETA %s ",
                 bar.c_str(), static_cast<long long>(s.position.epoch + 1),
                 static_cast<long long>(s.epochs), static_cast<long long>(s.position.step),
                 s.result.loss, rate(s), eta(s).c_str());
    std::fflush(out_);
  }
  void on_epoch(FitState& s) override {
    if (s.rank != 0 || mode_ == ProgressMode::off) return;
    if (bar_) std::fputc('\n', out_);
    std::fprintf(out_, "epoch %lld/%lld step %lld loss=%.6g grad_norm=%.6g",
                 static_cast<long long>(s.position.epoch), static_cast<long long>(s.epochs),
                 static_cast<long long>(s.position.step), s.epoch_result.loss,
                 s.epoch_result.gradient_norm);
    if (s.has_validation) std::fprintf(out_, " val_loss=%.6g", s.validation.loss);
    std::fprintf(out_, " steps/s=%.3g eta=%s\n", rate(s), eta(s).c_str());
    std::fflush(out_);
  }

 private:
  static double rate(const FitState& s) {
    const double steps = double(s.position.step - s.first_step);
    return s.elapsed_seconds > 0 ? steps / s.elapsed_seconds : 0.0;
  }
  static std::string eta(const FitState& s) {
    const double r = rate(s);
    const double left = double(s.steps_per_epoch * s.epochs - s.position.step);
    if (!(r > 0) || left <= 0) return "0s";
    char text[32];
    std::snprintf(text, sizeof text, "%.0fs", left / r);
    return text;
  }

  ProgressMode mode_;
  std::FILE* out_;
  bool bar_ = false;
  double last_draw_ = -1;
};

/// A CSV log written by rank 0: a header `step,epoch,loss,gradient_norm,
/// learning_rate,loss_average,worker_loss_spread,noise_scale`, then one row
/// per update (the mini-batch loss and gradient norm at the parameters the
/// update started from, and the FitState and StepResult values of the same
/// names, "nan" where not measured; 17 significant digits). The log is an
/// OutputFile: it takes the place of `path` when training ends (a
/// continuation of the existing log when `append` is set, for resuming;
/// "-" is standard output). A run that fails leaves an existing log intact
/// and its own rows in `path.partial` beside the log's real file. A failed
/// write is reported at the end of the epoch.
class CsvLog : public Callback {
 public:
  explicit CsvLog(std::string path, bool append = false)
      : path_(std::move(path)), append_(append) {}
  ~CsvLog() override {
    if (file_ && !failed_) file_->set_aside(".partial");
  }
  CsvLog(const CsvLog&) = delete;
  CsvLog& operator=(const CsvLog&) = delete;

  void on_begin(FitState& s) override {
    if (s.rank != 0) return;
    OutputOptions options;
    options.append = append_;
    file_ = std::make_unique<OutputFile>(path_, "gradsum::CsvLog", options);
    failed_ = false;
    error_.clear();
    struct stat info;
    const bool header = !append_ || file_->kind() != OutputFile::Kind::replace ||
                        ::stat(path_.c_str(), &info) != 0 || info.st_size == 0;
    if (header)
      write("step,epoch,loss,gradient_norm,learning_rate,loss_average,worker_loss_spread,"
            "noise_scale\n");
  }
  void on_step(FitState& s) override {
    if (!file_ || failed_) return;
    char row[256];
    const int n = std::snprintf(row, sizeof row, "%lld,%lld,%.17g,%.17g,%.17g,%.17g,%.17g,%.17g\n",
                                static_cast<long long>(s.position.step),
                                static_cast<long long>(s.position.epoch), s.result.loss,
                                s.result.gradient_norm, s.learning_rate, s.loss_average,
                                s.result.worker_loss_spread, s.noise_scale);
    write(std::string(row, std::size_t(n)));  // 8 numbers of at most 24 characters fit
  }
  void on_epoch(FitState&) override { report(); }
  void on_end(FitState&) override {
    if (!file_) return;
    report();
    try {
      file_->commit();
    } catch (const Error&) {
      failed_ = true;
      throw;
    }
    file_.reset();
  }

 private:
  // on_step must not throw: a failure waits for the epoch's end.
  void write(const std::string& text) {
    try {
      file_->write(text);
    } catch (const Error& e) {
      failed_ = true;
      error_ = e.what();
    }
  }
  void report() {
    if (failed_) fail(error_);
  }
  std::string path_;
  bool append_;
  std::unique_ptr<OutputFile> file_;
  bool failed_ = false;
  std::string error_;
};

/// Stops training when the monitored loss (validation objective, else the
/// training objective; see FitState::monitored_loss) has not improved by
/// more than `min_delta` for `patience` epochs in a row.
class EarlyStopping : public Callback {
 public:
  explicit EarlyStopping(std::int64_t patience, double min_delta = 0)
      : patience_(patience), min_delta_(min_delta) {
    if (patience < 1)
      fail("gradsum::EarlyStopping: patience must be >= 1 epoch, got ", patience);
    if (!(min_delta >= 0) || !std::isfinite(min_delta))
      fail("gradsum::EarlyStopping: min_delta must be non-negative and finite, got ",
                   min_delta);
  }
  void on_epoch(FitState& s) override {
    const double loss = s.monitored_loss();
    if (loss < best_ - min_delta_) {
      best_ = loss;
      best_epoch_ = s.position.epoch;
      waited_ = 0;
      return;
    }
    if (++waited_ >= patience_) {
      s.stop = true;
      s.stop_reason = detail::concat("early stopping: the ",
                                     s.has_validation ? "validation" : "training",
                                     " loss has not improved for ", waited_,
                                     " epochs (best ", best_, " after epoch ", best_epoch_, ")");
    }
  }
  void sign(Signature& s) const override {
    Callback::sign(s);
    s.add("early stopping patience", patience_);
    s.add_bits("early stopping min_delta", min_delta_);
  }
  /// The best monitored loss so far and the epoch (1-based count) it followed.
  double best() const { return best_; }
  std::int64_t best_epoch() const { return best_epoch_; }

  void save_state(std::vector<double>& out) const override {
    out.insert(out.end(), {tag, best_, double(best_epoch_), double(waited_)});
  }
  void restore_state(const std::vector<double>& in, std::size_t& at) override {
    detail::expect_loop_record(in, at, tag, 3, "early-stopping");
    const double best = detail::restored_number(
        in[at], "gradsum::fit: the saved early-stopping best loss", -HUGE_VAL, HUGE_VAL);
    const std::int64_t best_epoch =
        detail::restored_count(in[at + 1], "gradsum::fit: the saved early-stopping best epoch");
    const std::int64_t waited =
        detail::restored_count(in[at + 2], "gradsum::fit: the saved early-stopping count of "
                               "epochs without improvement");
    best_ = best;
    best_epoch_ = best_epoch;
    waited_ = waited;
    at += 3;
  }

 private:
  static constexpr double tag = 2;  // a loop-state record's kind (Stopper: 1)
  std::int64_t patience_;
  double min_delta_;
  double best_ = std::numeric_limits<double>::infinity();
  std::int64_t best_epoch_ = 0;
  std::int64_t waited_ = 0;
};

/// Keeps a copy of the parameters at the best monitored loss (see
/// FitState::monitored_loss), taken at the end of an epoch, in a View of
/// the parameters' memory space allocated once.
template <class Theta>
class BestParameters : public Callback {
 public:
  explicit BestParameters(const Theta& theta)
      : theta_(theta),
        best_(Kokkos::view_alloc(Kokkos::WithoutInitializing, "gradsum::fit::best_parameters"),
              theta.extent(0)) {}
  void on_epoch(FitState& s) override {
    const double loss = s.monitored_loss();
    if (loss < best_loss_) {
      best_loss_ = loss;
      best_epoch_ = s.position.epoch;
      Kokkos::deep_copy(best_, theta_);
    }
  }
  /// Whether a best copy exists (after at least one epoch).
  bool has_best() const { return best_epoch_ > 0; }
  double best_loss() const { return best_loss_; }
  std::int64_t best_epoch() const { return best_epoch_; }

  /// The best loss, its epoch, and the best parameters (as doubles, exact
  /// for float and double parameters) once there are some.
  void save_state(std::vector<double>& out) const override {
    out.insert(out.end(), {tag, best_loss_, double(best_epoch_)});
    if (!has_best()) return;
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), best_);
    for (std::size_t i = 0; i < host.extent(0); ++i) out.push_back(double(host(i)));
  }
  void restore_state(const std::vector<double>& in, std::size_t& at) override {
    detail::expect_loop_record(in, at, tag, 2, "best-parameters");
    const double loss = detail::restored_number(
        in[at], "gradsum::fit: the saved best-parameters loss", -HUGE_VAL, HUGE_VAL);
    const std::int64_t epoch =
        detail::restored_count(in[at + 1], "gradsum::fit: the saved best-parameters epoch");
    at += 2;
    if (epoch > 0) {
      const std::size_t n = best_.extent(0);
      if (in.size() - at < n)
        fail("gradsum::fit: the checkpoint's best-parameters state holds ", in.size() - at,
                     " values, this model has ", n, " parameters");
      auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), best_);
      for (std::size_t i = 0; i < n; ++i)
        host(i) = typename Theta::non_const_value_type(in[at + i]);
      Kokkos::deep_copy(best_, host);
      at += n;
    }
    best_loss_ = loss;
    best_epoch_ = epoch;
  }
  /// Copies the best parameters into `theta`. Blocking.
  template <class Target>
  void restore(const Target& theta) const {
    if (!has_best()) fail("gradsum::BestParameters::restore: no epoch has finished yet");
    Kokkos::deep_copy(theta, best_);
    Kokkos::fence();
  }

 private:
  static constexpr double tag = 3;  // a loop-state record's kind
  Theta theta_;
  Kokkos::View<typename Theta::non_const_value_type*, typename Theta::memory_space> best_;
  double best_loss_ = std::numeric_limits<double>::infinity();
  std::int64_t best_epoch_ = 0;
};

/// Saves a checkpoint (see save_checkpoint) every `every` epochs (0:
/// never) and when training ends, with the feature scaling `scaler` and
/// the loop's state (FitState::loop_state: stopping rules, early stopping,
/// best parameters), so that a run resumed from it continues the
/// uninterrupted run exactly. Collective like save_checkpoint.
template <class StepType, class Theta>
class Checkpointer : public Callback {
 public:
  Checkpointer(std::string path, std::int64_t every, StepType& step, const Theta& theta,
               StandardScaler scaler = {})
      : path_(std::move(path)), every_(every), step_(step), theta_(theta),
        scaler_(std::move(scaler)) {
    if (every < 0) fail("gradsum::Checkpointer: every must be >= 0 epochs, got ", every);
  }
  /// Checks on rank 0 that the checkpoint could be written (its folder
  /// exists and may be written), so a run fails before it trains, not
  /// after.
  void on_begin(FitState& s) override {
    if (s.rank == 0) OutputFile::check(path_, "gradsum::save_checkpoint", binary_output());
  }
  void on_checkpoint(FitState& s) override {
    const bool due = s.finished ? s.position.step != saved_step_ || s.position.epoch != saved_epoch_
                                : every_ > 0 && s.position.epoch % every_ == 0;
    if (due) save(s);
  }
  void sign(Signature& s) const override {
    Callback::sign(s);
    s.add("checkpoint every (epochs)", every_);
  }
  /// Checkpoints written so far.
  std::int64_t saves() const { return saves_; }
  /// Names of the classes 0 … C-1 to store with every checkpoint (labels
  /// read as names, see CsvOptions::class_names).
  void set_class_names(std::vector<std::string> names) { class_names_ = std::move(names); }

 private:
  void save(const FitState& s) {
    save_checkpoint(path_, step_, theta_, s.position, scaler_,
                    s.loop_state ? s.loop_state() : std::vector<double>{}, class_names_);
    saved_step_ = s.position.step;
    saved_epoch_ = s.position.epoch;
    ++saves_;
  }
  std::string path_;
  std::int64_t every_;
  StepType& step_;
  Theta theta_;
  StandardScaler scaler_;
  std::vector<std::string> class_names_;
  std::int64_t saved_step_ = -1, saved_epoch_ = -1, saves_ = 0;
};

}  // namespace gradsum
