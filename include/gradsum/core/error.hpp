// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdio>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace gradsum {

/// The one exception type gradsum throws for bad input or failed resources.
///
/// Its message names what was wrong, the value seen and what was expected;
/// for inputs read from files it starts with `file:line:column:`.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

/// A gradsum::Error that every rank of a communicator throws alike: its
/// message was agreed on in a collective (Aggregation::agree, first_error,
/// on_every_rank) or follows from values every rank shares after
/// aggregation. A program may then end every rank normally; any other
/// exception may have been thrown on one rank alone while the others wait
/// in a collective, so under MPI it must end the job (Environment::run).
class AgreedError : public Error {
 public:
  explicit AgreedError(const std::string& what) : Error(what) {}
};

namespace detail {

/// Streams a value; a floating-point value with the fewest significant
/// digits (up to 17) that read back as the same number, so messages say
/// "got -0.1", not "got -0.10000000000000001".
template <class T>
void put(std::ostream& out, const T& value) {
  if constexpr (std::is_floating_point<std::decay_t<T>>::value) {
    for (int digits = 6; digits <= 17; ++digits) {
      std::ostringstream trial;
      trial.precision(digits);
      trial << value;
      std::istringstream back(trial.str());
      std::decay_t<T> read{};
      if ((back >> read && read == value) || digits == 17 || value != value) {
        out << trial.str();
        return;
      }
    }
  } else {
    out << value;
  }
}

}  // namespace detail

/// The parts streamed together into one string, numbers as short as they
/// read back exactly ("got -0.1"): how gradsum words its messages.
template <class... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (detail::put(out, parts), ...);
  return out.str();
}

/// Throws gradsum::Error with the parts of the message streamed together
/// (see concat), for code that reports errors the way gradsum does.
template <class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
  throw Error(concat(std::forward<Parts>(parts)...));
}

/// Throws gradsum::AgreedError like fail(), for code that raises an error
/// on every rank alike (from values the ranks agreed on).
template <class... Parts>
[[noreturn]] void fail_agreed(Parts&&... parts) {
  throw AgreedError(concat(std::forward<Parts>(parts)...));
}

/// The message of an exception that is not a gradsum::Error, with what it
/// is: "out of memory (std::bad_alloc)", or its what() and "std::exception".
inline std::string describe_exception(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e))
    return concat("out of memory (", e.what(), ")");
  if (dynamic_cast<const Error*>(&e)) return e.what();
  return concat(e.what(), " (a std::exception that is not a gradsum::Error)");
}

/// Runs `work` on every rank of `aggregation` (any aggregation policy: its
/// first_error agrees on a message); an exception it throws on any rank (a
/// gradsum::Error, or any std::exception such as std::bad_alloc) becomes
/// the same gradsum::AgreedError on every rank, so that no rank is left
/// waiting in a collective. For work only some ranks do (rank 0 writing a
/// file). Blocking; collective.
template <class Aggregation, class Work>
void on_every_rank(Aggregation& aggregation, Work&& work) {
  std::string error;
  try {
    work();
  } catch (const Error& e) {
    error = e.what();
  } catch (const std::exception& e) {
    error = describe_exception(e);
  }
  error = aggregation.first_error(error);
  if (!error.empty()) throw AgreedError(error);
}

namespace detail {

/// Environment::run's rule for a program's errors, with `abort_job` (which
/// ends every rank, e.g. MPI_Abort) for an error that is not agreed on:
/// see Environment::run.
template <class Body, class AbortJob>
int run_program(const char* program, int rank, int ranks, Body&& body, AbortJob&& abort_job) {
  std::string alone;
  try {
    return body();
  } catch (const AgreedError& e) {
    if (rank == 0) std::fprintf(stderr, "%s: error: %s\n", program, e.what());
    return 1;
  } catch (const std::exception& e) {
    alone = describe_exception(e);
  } catch (...) {
    alone = "an exception that is not a std::exception";
  }
  if (ranks == 1) {
    std::fprintf(stderr, "%s: error: %s\n", program, alone.c_str());
    return 1;
  }
  std::fprintf(stderr, "%s: error on rank %d of %d: %s (ending every rank)\n", program, rank,
               ranks, alone.c_str());
  std::fflush(stderr);
  abort_job();
  return 1;
}

using gradsum::concat;
}  // namespace detail

}  // namespace gradsum
