// SPDX-License-Identifier: Apache-2.0
// HostThreads::per_rank's choice (core/host_threads.hpp): the user's
// variable or flag wins, else cores / local ranks and never 0, and an unset
// OMP_PROC_BIND is set to what the OpenMP runtime does; and Kokkos' thread
// flag in the spelling the Kokkos in use reads. And the load warning
// (core/host_load.hpp) at loads set by hand: silent for one thread, an idle
// machine or the job's own ranks, and naming the counts otherwise.

#include <doctest/doctest.h>

#include <gradsum/core/host_load.hpp>
#include <gradsum/core/host_threads.hpp>
#include <gradsum/core/kokkos_compat.hpp>

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace {

// Sets (or, for nullptr, unsets) the variables for the test and restores
// what the process had when it ends.
class ScopedVariables {
 public:
  explicit ScopedVariables(std::vector<std::pair<std::string, const char*>> values) {
    for (const auto& [name, value] : values) {
      const char* old = std::getenv(name.c_str());
      saved_.push_back({name, old != nullptr, old != nullptr ? old : ""});
      if (value != nullptr) ::setenv(name.c_str(), value, 1);
      else ::unsetenv(name.c_str());
    }
  }
  ~ScopedVariables() {
    for (const auto& s : saved_) {
      if (s.set) ::setenv(s.name.c_str(), s.value.c_str(), 1);
      else ::unsetenv(s.name.c_str());
    }
  }

 private:
  struct Saved {
    std::string name;
    bool set;
    std::string value;
  };
  std::vector<Saved> saved_;
};

std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "(unset)";
}

// The cores as the C library counts them for this process, independently of
// sched_getaffinity: online processors, the bound this process cannot exceed.
int online_cores() { return int(::sysconf(_SC_NPROCESSORS_ONLN)); }

}  // namespace

TEST_CASE("HostThreads::per_rank: cores / local ranks unless the user chose") {
  char program[] = "prog";
  char* argv[] = {program, nullptr};
  {
    ScopedVariables env({{"OMP_NUM_THREADS", nullptr}, {"KOKKOS_NUM_THREADS", nullptr},
                         {"OMP_PROC_BIND", nullptr}, {"OMP_PLACES", nullptr},
                         {"GOMP_CPU_AFFINITY", nullptr}});
    const auto one = gradsum::choose_host_threads(1, argv, 1);
    CHECK(one.cores >= 1);
    CHECK(one.cores <= online_cores());
    CHECK(one.threads == one.cores);
    CHECK(one.origin == "cores / local ranks");
    CHECK(variable("KOKKOS_NUM_THREADS") == std::to_string(one.cores));
    CHECK(variable("OMP_PROC_BIND") == "false");  // the runtime binds nothing
    // More ranks than cores: one thread each, never none (the variable
    // the first call set would now count as the user's).
    ::unsetenv("KOKKOS_NUM_THREADS");
    const auto many = gradsum::choose_host_threads(1, argv, one.cores + 1);
    CHECK(many.threads == 1);
    CHECK(many.local_ranks == one.cores + 1);
  }
  {
    ScopedVariables env({{"OMP_NUM_THREADS", nullptr}, {"KOKKOS_NUM_THREADS", nullptr},
                         {"OMP_PROC_BIND", nullptr}, {"OMP_PLACES", "cores"}});
    gradsum::choose_host_threads(1, argv, 1);
    CHECK(variable("OMP_PROC_BIND") == "true");  // places given: the runtime binds
  }
  {
    ScopedVariables env({{"OMP_NUM_THREADS", "3"}, {"KOKKOS_NUM_THREADS", nullptr},
                         {"OMP_PROC_BIND", "spread"}});
    const auto c = gradsum::choose_host_threads(1, argv, 1);
    CHECK(c.threads == 0);
    CHECK(c.origin == "OMP_NUM_THREADS");
    CHECK(variable("OMP_PROC_BIND") == "spread");
    CHECK(variable("KOKKOS_NUM_THREADS") == "(unset)");
  }
  {
    ScopedVariables env({{"OMP_NUM_THREADS", nullptr}, {"KOKKOS_NUM_THREADS", nullptr}});
    char flag[] = "--kokkos-num-threads=2";
    char* with_flag[] = {program, flag, nullptr};
    const auto c = gradsum::choose_host_threads(2, with_flag, 1);
    CHECK(c.threads == 0);
    CHECK(c.origin == "--kokkos-num-threads");
    CHECK(variable("KOKKOS_NUM_THREADS") == "(unset)");
  }
}

// Kokkos 3.4-3.6 read --kokkos-threads=N only, 3.7 deprecates it and 4.3
// drops it for --kokkos-num-threads=N (Kokkos pull requests 5111 and 6744).
TEST_CASE("translate_kokkos_thread_flag: the spelling this Kokkos reads") {
  const std::string known =
      KOKKOS_VERSION >= 30700 ? "--kokkos-num-threads=3" : "--kokkos-threads=3";
  for (std::string given : {"--kokkos-threads=3", "--kokkos-num-threads=3"}) {
    std::string program = "program", other = "--data", file = "x.csv", bare = "--kokkos-threads";
    std::vector<char*> argv = {&program[0], &other[0], &file[0], &given[0], &bare[0], nullptr};
    gradsum::translate_kokkos_thread_flag(int(argv.size()) - 1, argv.data());
    CAPTURE(given);
    CHECK(std::string(argv[3]) == known);
    // Everything else as it was: the program, other flags, a flag without '='.
    CHECK(argv[0] == program.data());
    CHECK(std::string(argv[1]) == "--data");
    CHECK(std::string(argv[2]) == "x.csv");
    CHECK(std::string(argv[4]) == "--kokkos-threads");
  }
}

TEST_CASE("check_thread_flags: a thread count Kokkos can take, or an error naming the flag") {
  auto check = [](std::string flag) {
    std::string program = "program", data = "--data", file = "x.csv";
    std::vector<char*> argv = {&program[0], &data[0], &file[0], &flag[0], nullptr};
    gradsum::check_thread_flags(int(argv.size()) - 1, argv.data());
  };
  for (const char* good : {"--kokkos-threads=1", "--kokkos-num-threads=4",
                           "--kokkos-threads=512", "--kokkos-threads-other=abc"}) {
    CAPTURE(good);
    CHECK_NOTHROW(check(good));
  }
  // Kokkos itself ends the program with an uncaught std::invalid_argument
  // for "abc", and Kokkos 3's OpenMP backend crashes with 513 threads or more.
  for (const char* bad : {"--kokkos-threads=abc", "--kokkos-threads=0", "--kokkos-threads=-2",
                          "--kokkos-num-threads=513", "--kokkos-threads=4x",
                          "--kokkos-threads=", "--kokkos-threads=99999999999999999999"}) {
    CAPTURE(bad);
    const std::string flag = std::string(bad).substr(0, std::string(bad).find('='));
    CHECK_THROWS_WITH_AS(check(bad),
                         (flag + ": expected " + flag + "=N with N an integer in [1, 512], got '" +
                          bad + "'")
                             .c_str(),
                         gradsum::Error);
  }
}

TEST_CASE("oversubscription_warning: more runnable threads than cores, and only then") {
  using gradsum::HostLoad;
  using gradsum::oversubscription_warning;
  const std::string advice =
      "; OpenMP threads that spin at barriers then wait for descheduled ones, which can make "
      "training many times slower: run fewer threads (OMP_NUM_THREADS or --kokkos-threads), "
      "or set OMP_WAIT_POLICY=passive (see 'Troubleshooting' in docs/user-guide.md)";
  // An idle 2-core machine (only the caller runnable): 2 threads fit.
  CHECK(oversubscription_warning(HostLoad{1, 2}, 2, 2) == "");
  // One thread has no barrier to spin at, however busy the machine.
  CHECK(oversubscription_warning(HostLoad{9, 2}, 1, 2) == "");
  // Two other programs' threads and 2 of ours on 2 cores (the case).
  CHECK(oversubscription_warning(HostLoad{3, 2}, 2, 2) ==
        "2 threads of other programs were running or waiting to run on this machine's 2 cores "
        "(/proc/loadavg), and this job adds 2" + advice);
  CHECK(oversubscription_warning(HostLoad{2, 4}, 4, 4) ==
        "1 thread of another program was running or waiting to run on this machine's 4 cores "
        "(/proc/loadavg), and this job adds 4" + advice);
  CHECK(oversubscription_warning(HostLoad{2, 4}, 3, 4) == "");  // 1 + 3 fit in 4
  // More threads than the cores this process may use, whatever the load.
  CHECK(oversubscription_warning(HostLoad{1, 8}, 4, 2) ==
        "4 threads on the 2 cores this process may run on" + advice);
  CHECK(oversubscription_warning(HostLoad{-1, 8}, 2, 1) ==
        "2 threads on the 1 core this process may run on" + advice);
  // Unknown load (not Linux): nothing to say when the threads fit the cores.
  CHECK(oversubscription_warning(HostLoad{-1, 2}, 2, 2) == "");
  // 2 ranks of 2 threads on 4 cores, both ranks running at start-up: ours, not others'.
  CHECK(oversubscription_warning(HostLoad{2, 4}, 2, 2, 2) == "");
  CHECK(oversubscription_warning(HostLoad{3, 4}, 2, 2, 2) ==
        "1 thread of another program was running or waiting to run on this machine's 4 cores "
        "(/proc/loadavg), and this job adds 4" + advice);
}

TEST_CASE("read_host_load: the caller is runnable, the cores are online") {
  const auto load = gradsum::read_host_load(0);
#if defined(__linux__)
  CHECK(load.runnable >= 1);  // this thread, reading
#endif
  CHECK(load.online_cores >= gradsum::detail::available_cores());
}
