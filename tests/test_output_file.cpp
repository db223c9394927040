// SPDX-License-Identifier: Apache-2.0
// OutputFile, the one writer of every output file: exactly where the user
// points, never through a planted link nor another user's link in a sticky
// folder, regular files replaced and FIFOs, devices and "-" written in
// place by their type whatever the path's spelling, and every failure (a
// folder or file that may not be written, a file-size limit) leaving the
// existing files byte for byte.

#include <gradsum/core/output_file.hpp>

#include "file_helpers.hpp"

#include <doctest/doctest.h>

#include <fcntl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace gradsum_test;

namespace {

std::string error_of(void (*write)(const std::string&), const std::string& path) {
  try {
    write(path);
  } catch (const gradsum::Error& e) {
    return e.what();
  }
  return "no error";
}

bool is_link(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0 && S_ISLNK(info.st_mode);
}

std::string link_target(const std::string& path) {
  char to[4096];
  const ssize_t n = ::readlink(path.c_str(), to, sizeof to);
  return n < 0 ? std::string() : std::string(to, std::size_t(n));
}

mode_t mode_of(const std::string& path) {
  struct stat info;
  REQUIRE(::stat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}

// Runs `work` in a child process (as the unprivileged user `nobody` when
// `unprivileged` and this process is root) and returns what it wrote to
// the pipe it is given, or a note on how the child ended.
template <class Work>
std::string in_child(bool unprivileged, Work work) {
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  std::fflush(stdout);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::close(pipe_fds[0]);
    if (unprivileged && ::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0))
      ::_exit(3);
    const std::string said = work();
    if (::write(pipe_fds[1], said.data(), said.size()) != ssize_t(said.size())) ::_exit(4);
    ::_exit(0);
  }
  ::close(pipe_fds[1]);
  std::string said;
  char chunk[512];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], chunk, sizeof chunk)) > 0) said.append(chunk, std::size_t(n));
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  if (!WIFEXITED(status)) return "the child was killed by signal " + std::to_string(WTERMSIG(status));
  if (WEXITSTATUS(status) != 0) return "the child exited with " + std::to_string(WEXITSTATUS(status));
  return said;
}

}  // namespace

TEST_CASE("OutputFile: a new file takes the umask's mode; a replaced one keeps its mode") {
  const std::string dir = temp_folder();
  const std::string path = dir + "/params.txt";
  const mode_t mask = ::umask(022);
  gradsum::write_output(path, "1\n2\n", "test");
  CHECK(read_bytes(path) == "1\n2\n");
  CHECK(mode_of(path) == 0644);
  REQUIRE(::chmod(path.c_str(), 0600) == 0);
  gradsum::write_output(path, "3\n", "test");
  CHECK(read_bytes(path) == "3\n");
  CHECK(mode_of(path) == 0600);
  ::umask(mask);
  CHECK(folder_entries(dir) == std::set<std::string>{"params.txt"});  // no temporary file left
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: links planted beside the target are never written through") {
  const std::string dir = temp_folder();
  const std::string victim = dir + "/victim.txt", out = dir + "/out.txt";
  write_bytes(victim, "precious data\n");
  // The names a writer might have used for its temporary file.
  const char* planted[] = {"out.txt.partial", "out.txt.tmp", ".out.txt.tmp", ".out.txt"};
  for (const char* name : planted) REQUIRE(::symlink(victim.c_str(), (dir + "/" + name).c_str()) == 0);
  gradsum::write_output(out, "the parameters\n", "--save-params");
  {
    gradsum::OutputOptions append;
    append.append = true;
    gradsum::OutputFile log(out, "--log", append);
    log.write("a row\n");
    log.commit();
  }
  CHECK(read_bytes(out) == "the parameters\na row\n");
  CHECK(!is_link(out));
  CHECK(read_bytes(victim) == "precious data\n");
  for (const char* name : planted) {
    CHECK(is_link(dir + "/" + name));
    CHECK(link_target(dir + "/" + name) == victim);
  }
  CHECK(folder_entries(dir).size() == 2 + std::size(planted));
  for (const auto& name : folder_entries(dir)) std::remove((dir + "/" + name).c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: a link the user names is kept, and its target is written") {
  const std::string dir = temp_folder();
  REQUIRE(::mkdir((dir + "/real").c_str(), 0755) == 0);
  REQUIRE(::mkdir((dir + "/links").c_str(), 0755) == 0);
  const std::string target = dir + "/real/params.txt";
  write_bytes(target, "old\n");
  REQUIRE(::chmod(target.c_str(), 0640) == 0);
  // A relative link, a chain through an absolute one, and a dangling link.
  REQUIRE(::symlink("../real/params.txt", (dir + "/links/relative").c_str()) == 0);
  REQUIRE(::symlink((dir + "/links/relative").c_str(), (dir + "/links/chain").c_str()) == 0);
  REQUIRE(::symlink("../real/new.txt", (dir + "/links/dangling").c_str()) == 0);

  gradsum::write_output(dir + "/links/relative", "first\n", "test");
  CHECK(read_bytes(target) == "first\n");
  gradsum::write_output(dir + "/links/chain", "second\n", "test");
  CHECK(read_bytes(target) == "second\n");
  CHECK(mode_of(target) == 0640);
  gradsum::write_output(dir + "/links/dangling", "created\n", "test");
  CHECK(read_bytes(dir + "/real/new.txt") == "created\n");
  for (const char* name : {"relative", "chain", "dangling"}) CHECK(is_link(dir + "/links/" + name));
  CHECK(folder_entries(dir + "/links") == std::set<std::string>{"chain", "dangling", "relative"});
  CHECK(folder_entries(dir + "/real") == std::set<std::string>{"new.txt", "params.txt"});

  // A link loop is an error that names the path.
  REQUIRE(::symlink("loop_b", (dir + "/links/loop_a").c_str()) == 0);
  REQUIRE(::symlink("loop_a", (dir + "/links/loop_b").c_str()) == 0);
  std::string message;
  try {
    gradsum::write_output(dir + "/links/loop_a", "x", "test");
  } catch (const gradsum::Error& e) {
    message = e.what();
  }
  CHECK(message.find("links/loop_a") != std::string::npos);
  CHECK(message.find(std::strerror(ELOOP)) != std::string::npos);
  for (const char* name : {"relative", "chain", "dangling", "loop_a", "loop_b"})
    std::remove((dir + "/links/" + name).c_str());
  std::remove(target.c_str());
  std::remove((dir + "/real/new.txt").c_str());
  ::rmdir((dir + "/links").c_str());
  ::rmdir((dir + "/real").c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: a FIFO is written in place and its reader gets the bytes") {
  const std::string dir = temp_folder();
  const std::string fifo = dir + "/pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string bytes;
  for (int i = 0; i < 20000; ++i) bytes += std::to_string(i) + "\n";  // more than a pipe holds
  std::string got;
  std::thread reader([&] {
    const int fd = ::open(fifo.c_str(), O_RDONLY);
    if (fd < 0) return;
    char chunk[4096];
    ssize_t n;
    while ((n = ::read(fd, chunk, sizeof chunk)) > 0) got.append(chunk, std::size_t(n));
    ::close(fd);
  });
  gradsum::OutputFile out(fifo, "--log");
  CHECK(out.kind() == gradsum::OutputFile::Kind::in_place);
  out.write(bytes);
  out.commit();
  reader.join();
  CHECK(got == bytes);
  struct stat info;
  REQUIRE(::lstat(fifo.c_str(), &info) == 0);
  CHECK(S_ISFIFO(info.st_mode));
  CHECK(folder_entries(dir) == std::set<std::string>{"pipe"});
  std::remove(fifo.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: '-' is standard output, where text outputs allow it") {
  const std::string dir = temp_folder();
  const std::string capture = dir + "/stdout.txt";
  std::fflush(stdout);
  const int saved = ::dup(STDOUT_FILENO);
  const int fd = ::open(capture.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(saved >= 0);
  REQUIRE(fd >= 0);
  ::dup2(fd, STDOUT_FILENO);
  ::close(fd);
  std::string error;
  try {
    std::printf("before\n");  // the program's own output keeps its place
    gradsum::write_output("-", "1\n2\n", "--save-params");
    std::printf("after\n");
    std::fflush(stdout);
  } catch (const gradsum::Error& e) {
    error = e.what();
  }
  std::fflush(stdout);
  ::dup2(saved, STDOUT_FILENO);
  ::close(saved);
  CHECK(error == "");
  CHECK(read_bytes(capture) == "before\n1\n2\nafter\n");

  gradsum::OutputOptions binary;
  binary.standard_output = false;
  std::string refused;
  try {
    gradsum::write_output("-", "bytes", "gradsum::save_checkpoint", binary);
  } catch (const gradsum::Error& e) {
    refused = e.what();
  }
  CHECK(refused ==
        "gradsum::save_checkpoint: '-' (standard output) cannot hold this file; name a file");
  std::remove(capture.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: a folder or a file that may not be written is refused, and left alone") {
  const std::string dir = temp_folder();
  REQUIRE(::chmod(dir.c_str(), 0755) == 0);
  const std::string locked = dir + "/locked", open = dir + "/open";
  REQUIRE(::mkdir(locked.c_str(), 0755) == 0);
  REQUIRE(::mkdir(open.c_str(), 0777) == 0);
  REQUIRE(::chmod(open.c_str(), 0777) == 0);  // whatever the umask
  write_bytes(locked + "/kept.txt", "kept\n");
  write_bytes(open + "/read_only.txt", "read only\n");
  REQUIRE(::chmod(locked.c_str(), 0555) == 0);
  REQUIRE(::chmod((open + "/read_only.txt").c_str(), 0444) == 0);
  // Root may write anything: the child gives up root first.
  const std::string said = in_child(true, [&] {
    std::string out;
    const std::string paths[] = {locked + "/new.txt", locked + "/kept.txt", open + "/read_only.txt"};
    for (const std::string& path : paths) {
      try {
        gradsum::write_output(path, "overwritten\n", "--save-params");
        out += "written|";
      } catch (const gradsum::Error& e) {
        out += std::string(e.what()) + "|";
      }
    }
    return out;
  });
  const std::string denied = std::strerror(EACCES);
  std::vector<std::string> messages;
  for (std::size_t at = 0, bar; (bar = said.find('|', at)) != std::string::npos; at = bar + 1)
    messages.push_back(said.substr(at, bar - at));
  REQUIRE_MESSAGE(messages.size() == 3, said);
  CHECK(messages[0] == "--save-params: cannot write '" + locked + "/new.txt': creating a "
                       "temporary file in '" + locked + "': " + denied);
  // Root's file is refused as not writable; one's own, by its folder.
  CHECK(messages[1].rfind("--save-params: cannot write '" + locked + "/kept.txt': ", 0) == 0);
  CHECK(messages[1].find(denied) != std::string::npos);
  CHECK(messages[2] == "--save-params: cannot write '" + open + "/read_only.txt': " + denied);
  CHECK(read_bytes(locked + "/kept.txt") == "kept\n");
  CHECK(read_bytes(open + "/read_only.txt") == "read only\n");
  CHECK(folder_entries(locked) == std::set<std::string>{"kept.txt"});
  CHECK(folder_entries(open) == std::set<std::string>{"read_only.txt"});
  ::chmod(locked.c_str(), 0755);
  std::remove((locked + "/kept.txt").c_str());
  std::remove((open + "/read_only.txt").c_str());
  ::rmdir(locked.c_str());
  ::rmdir(open.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: a write that runs out of room leaves the existing file byte for byte") {
  const std::string dir = temp_folder();
  const std::string path = dir + "/params.txt";
  const std::string existing = "an earlier run's parameters\n";
  write_bytes(path, existing);
  // The child may write files of at most 4 KiB; the signal is ignored, so
  // the write fails with EFBIG as on a full disk it fails with ENOSPC.
  const std::string said = in_child(false, [&] {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) return std::string("setrlimit failed");
    try {
      gradsum::OutputFile out(path, "--save-params");
      for (int i = 0; i < 100000; ++i) out.print("%.17g\n", 1.0 / (i + 1));
      out.commit();
    } catch (const gradsum::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  });
  CHECK(said.rfind("--save-params: writing '" + path + "' failed after ", 0) == 0);
  CHECK(said.find(std::string(" bytes: ") + std::strerror(EFBIG) + "; the file is as it was") !=
        std::string::npos);
  CHECK(read_bytes(path) == existing);
  CHECK(folder_entries(dir) == std::set<std::string>{"params.txt"});
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: errors name the path and the reason, and change nothing") {
  const std::string dir = temp_folder();
  auto save = +[](const std::string& path) { gradsum::write_output(path, "x\n", "--save-params"); };
  CHECK(error_of(save, dir + "/missing/p.txt") ==
        "--save-params: cannot write '" + dir + "/missing/p.txt': its folder '" + dir +
            "/missing': " + std::strerror(ENOENT));
  CHECK(error_of(save, dir) ==
        "--save-params: cannot write '" + dir + "': " + std::strerror(EISDIR));
  CHECK(error_of(save, dir + "/") ==
        "--save-params: cannot write '" + dir + "/': " + std::strerror(EISDIR));
  CHECK(error_of(save, "") == "--save-params: cannot write '': an empty file name");
  CHECK(folder_entries(dir).empty());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: without commit() the target stays as it was; set_aside keeps the rows") {
  const std::string dir = temp_folder();
  const std::string path = dir + "/run.log";
  write_bytes(path, "an earlier run's log\n");
  {
    gradsum::OutputFile out(path, "--log");
    out.write(std::string(100000, 'x'));  // past the buffer: bytes reach the temporary file
  }
  CHECK(read_bytes(path) == "an earlier run's log\n");
  CHECK(folder_entries(dir) == std::set<std::string>{"run.log"});
  REQUIRE(::symlink((dir + "/run.log").c_str(), (dir + "/run.log.partial").c_str()) == 0);
  {
    gradsum::OutputFile out(path, "--log");
    out.write("this run's rows\n");
    CHECK(out.set_aside(".partial"));
  }
  CHECK(read_bytes(path) == "an earlier run's log\n");
  CHECK(!is_link(dir + "/run.log.partial"));  // the link was replaced, not written through
  CHECK(read_bytes(dir + "/run.log.partial") == "this run's rows\n");
  CHECK(folder_entries(dir) == std::set<std::string>{"run.log", "run.log.partial"});
  std::remove(path.c_str());
  std::remove((dir + "/run.log.partial").c_str());
  ::rmdir(dir.c_str());
}

namespace {

ino_t inode_of(const std::string& path) {
  struct stat info;
  REQUIRE(::lstat(path.c_str(), &info) == 0);
  return info.st_ino;
}

// What an OutputFile of `path` does with "new\n" over a regular file that
// holds "old\n": its kind, what the file then holds, and whether it is a
// new file (another inode) rather than the old one written to.
struct Replaced {
  gradsum::OutputFile::Kind kind;
  std::string holds;
  bool new_inode;
};
Replaced replace_old(const std::string& path, const std::string& file) {
  write_bytes(file, "old\n");
  const ino_t before = inode_of(file);
  gradsum::OutputFile out(path, "--checkpoint");
  const auto kind = out.kind();
  out.write("new\n");
  out.commit();
  return {kind, read_bytes(file), inode_of(file) != before};
}

// Every byte a pipe holds now (its write end closed).
std::string drain(int fd) {
  std::string got;
  char chunk[4096];
  ssize_t n;
  while ((n = ::read(fd, chunk, sizeof chunk)) > 0) got.append(chunk, std::size_t(n));
  ::close(fd);
  return got;
}

}  // namespace

TEST_CASE("OutputFile: a regular file is replaced whatever its path is spelled like") {
  const std::string dir = temp_folder();
  // /dev/.. is /: the file is a regular file in a /tmp folder.
  const std::string file = dir + "/run.ckpt";
  const Replaced via_dev = replace_old("/dev/.." + file, file);
  CHECK(via_dev.kind == gradsum::OutputFile::Kind::replace);
  CHECK(via_dev.holds == "new\n");
  CHECK(via_dev.new_inode);
  CHECK(folder_entries(dir) == std::set<std::string>{"run.ckpt"});
  std::remove(file.c_str());
  ::rmdir(dir.c_str());

  // A regular file in /dev/shm (a tmpfs under /dev): a checkpoint written
  // over itself, as `--resume X --checkpoint X` does, holds one checkpoint.
  if (::access("/dev/shm", W_OK) != 0) {
    MESSAGE("skipped: /dev/shm is missing or may not be written");
    return;
  }
  std::string shm = "/dev/shm/gradsum_test_XXXXXX";
  REQUIRE(::mkdtemp(&shm[0]) != nullptr);
  const Replaced in_shm = replace_old(shm + "/run.ckpt", shm + "/run.ckpt");
  CHECK(in_shm.kind == gradsum::OutputFile::Kind::replace);
  CHECK(in_shm.holds == "new\n");
  CHECK(in_shm.new_inode);
  CHECK(folder_entries(shm) == std::set<std::string>{"run.ckpt"});
  std::remove((shm + "/run.ckpt").c_str());
  ::rmdir(shm.c_str());
}

TEST_CASE("OutputFile: devices, FIFOs and open files named through /proc are written in place") {
  gradsum::OutputFile null("/dev/null", "--log");
  REQUIRE(null.kind() == gradsum::OutputFile::Kind::in_place);  // else never commit over it
  null.write("discarded\n");
  null.commit();
  struct stat info;
  REQUIRE(::lstat("/dev/null", &info) == 0);
  CHECK(S_ISCHR(info.st_mode));

  // A pipe's write end, named as /proc/self/fd/N, /dev/fd/N and (as the
  // standard output) /dev/stdout: the reader gets the bytes.
  for (const std::string name : {"/proc/self/fd/", "/dev/fd/", "/dev/stdout"}) {
    int pipe_fds[2];
    REQUIRE(::pipe(pipe_fds) == 0);
    std::fflush(stdout);
    const int saved = ::dup(STDOUT_FILENO);
    if (name == "/dev/stdout") ::dup2(pipe_fds[1], STDOUT_FILENO);
    const std::string path = name == "/dev/stdout" ? name : name + std::to_string(pipe_fds[1]);
    std::string error;
    try {
      gradsum::write_output(path, "through " + path + "\n", "--log");
    } catch (const gradsum::Error& e) {
      error = e.what();
    }
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
    ::close(pipe_fds[1]);
    CHECK(error == "");
    CHECK(drain(pipe_fds[0]) == "through " + path + "\n");
  }

  // An open regular file named through /proc is a handle, not a name: it
  // is appended to (its name may be gone), and stays the same file.
  const std::string dir = temp_folder();
  const std::string file = dir + "/open.txt";
  write_bytes(file, "before\n");
  const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND);
  REQUIRE(fd >= 0);
  const ino_t before = inode_of(file);
  gradsum::write_output("/proc/self/fd/" + std::to_string(fd), "after\n", "--log");
  ::close(fd);
  CHECK(read_bytes(file) == "before\nafter\n");
  CHECK(inode_of(file) == before);

  // A FIFO reached through a link is still written in place.
  const std::string fifo = dir + "/pipe", link = dir + "/to_pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  REQUIRE(::symlink("pipe", link.c_str()) == 0);
  std::string got;
  std::thread reader([&] {
    const int in = ::open(fifo.c_str(), O_RDONLY);
    if (in >= 0) got = drain(in);
  });
  gradsum::write_output(link, "into the FIFO\n", "--log");
  reader.join();
  CHECK(got == "into the FIFO\n");
  CHECK(folder_entries(dir) == std::set<std::string>{"open.txt", "pipe", "to_pipe"});
  for (const auto& name : folder_entries(dir)) std::remove((dir + "/" + name).c_str());
  ::rmdir(dir.c_str());
}

TEST_CASE("OutputFile: a link in a sticky world-writable folder is followed as the kernel would") {
  if (::geteuid() != 0) {
    MESSAGE("skipped: only root can plant a link owned by another user");
    return;
  }
  const uid_t other = 65534;  // nobody
  const std::string dir = temp_folder();
  const std::string sticky = dir + "/sticky", victim = dir + "/victim.txt";
  REQUIRE(::mkdir(sticky.c_str(), 0700) == 0);
  REQUIRE(::chmod(sticky.c_str(), 01777) == 0);
  REQUIRE(::mkdir((dir + "/real").c_str(), 0755) == 0);
  write_bytes(victim, "precious data\n");
  // Planted by `nobody`: a link to the victim, and one to a folder on the way.
  REQUIRE(::symlink(victim.c_str(), (sticky + "/params.txt").c_str()) == 0);
  REQUIRE(::symlink((dir + "/real").c_str(), (sticky + "/folder").c_str()) == 0);
  for (const char* name : {"params.txt", "folder"})
    REQUIRE(::lchown((sticky + "/" + name).c_str(), other, other) == 0);

  const std::string why = ", neither you (uid 0) nor the owner of its sticky world-writable "
                          "folder (uid 0), and such a link is not followed (the rule of the "
                          "kernel's fs.protected_symlinks)";
  for (const std::string name : {"params.txt", "folder/params.txt"}) {
    const std::string path = sticky + "/" + name;
    const std::string link = sticky + "/" + name.substr(0, name.find('/'));
    const std::string expected = "--save-params: cannot write '" + path +
                                 "': the symbolic link '" + link + "' belongs to uid 65534" + why;
    auto save = +[](const std::string& p) { gradsum::write_output(p, "x\n", "--save-params"); };
    auto probe = +[](const std::string& p) { gradsum::OutputFile::check(p, "--save-params"); };
    CHECK(error_of(save, path) == expected);
    CHECK(error_of(probe, path) == expected);
  }
  CHECK(read_bytes(victim) == "precious data\n");
  CHECK(folder_entries(dir + "/real").empty());
  CHECK(folder_entries(sticky) == std::set<std::string>{"folder", "params.txt"});
  CHECK(link_target(sticky + "/params.txt") == victim);

  // The kernel's exceptions: one's own link, a link of the folder's owner,
  // and any link in a sticky folder that not everyone may write.
  REQUIRE(::lchown((sticky + "/params.txt").c_str(), 0, 0) == 0);
  gradsum::write_output(sticky + "/params.txt", "one's own link\n", "--save-params");
  CHECK(read_bytes(victim) == "one's own link\n");
  REQUIRE(::lchown((sticky + "/params.txt").c_str(), other, other) == 0);
  REQUIRE(::chown(sticky.c_str(), other, other) == 0);
  gradsum::write_output(sticky + "/params.txt", "the folder owner's link\n", "--save-params");
  CHECK(read_bytes(victim) == "the folder owner's link\n");
  REQUIRE(::chown(sticky.c_str(), 0, 0) == 0);
  REQUIRE(::chmod(sticky.c_str(), 01775) == 0);
  gradsum::write_output(sticky + "/folder/params.txt", "not world-writable\n", "--save-params");
  CHECK(read_bytes(dir + "/real/params.txt") == "not world-writable\n");
  for (const char* name : {"params.txt", "folder"}) std::remove((sticky + "/" + name).c_str());
  std::remove((dir + "/real/params.txt").c_str());
  std::remove(victim.c_str());
  ::rmdir((dir + "/real").c_str());
  ::rmdir(sticky.c_str());
  ::rmdir(dir.c_str());
}
