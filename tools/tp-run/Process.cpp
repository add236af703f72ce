//===- Process.cpp - tp-run's errors, files and child processes -----------===//
//
// See Process.h. The child is started with fork and execve rather than
// llvm::sys::ExecuteNoWait (posix_spawn), which has no hook between fork and
// exec for PR_SET_PDEATHSIG. After fork the child calls only
// async-signal-safe functions (the compiler may have threads): everything
// it needs is prepared before.
//
//===----------------------------------------------------------------------===//

#include "Process.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

extern char **environ;

using llvm::StringRef;

namespace tprun {

void die(const llvm::Twine &message, int code) {
  llvm::outs().flush(); // what was printed so far comes first
  llvm::errs() << "tp-run: error: " << message << "\n";
  std::exit(code);
}

void writeFile(StringRef path, StringRef text) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    die("cannot write '" + path + "': " + ec.message());
  os << text;
  os.close();
  if (os.has_error()) { // a full disk, a quota
    std::string message = os.error().message();
    os.clear_error(); // else its destructor aborts ("IO failure")
    die("cannot write '" + path + "': " + message);
  }
}

void makeFolder(StringRef path) {
  if (std::error_code ec = llvm::sys::fs::create_directories(path))
    die("cannot create the folder '" + path + "': " + ec.message());
  // create_directories takes anything existing of that name for success: a
  // file, or a symbolic link loop.
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    die("cannot create the folder '" + path + "': " + ec.message());
  if (status.type() != llvm::sys::fs::file_type::directory_file)
    die("cannot create the folder '" + path +
        "': a file of that name exists, which is not a folder");
}

namespace {

/// The program runProgram is waiting for (0: none), and whether tp-run was
/// interrupted (SIGINT, SIGTERM) meanwhile.
volatile sig_atomic_t runningChild = 0;
volatile sig_atomic_t interrupted = 0;

/// The folders removeAtExit removes, NUL-terminated, in static storage for
/// the signal handler.
char removedFolders[4][4096];
volatile sig_atomic_t removedCount = 0;

/// Removes the entry `name` of the folder `parent` (a file, or a folder and
/// everything in it) with async-signal-safe calls only (openat, getdents64,
/// unlinkat): a signal handler may run it while tp-run holds the heap's
/// lock. Symbolic links are removed, never followed. A folder is read again
/// until it is empty, since entries removed while reading may shift.
void removeEntry(int parent, const char *name) {
  if (::unlinkat(parent, name, 0) == 0 || errno != EISDIR)
    return;
  int fd = ::openat(parent, name,
                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    alignas(8) char buffer[4096];
    bool removed = true;
    for (int pass = 0; removed && pass < 64; ++pass) {
      removed = false;
      ::lseek(fd, 0, SEEK_SET);
      long n;
      while ((n = ::syscall(SYS_getdents64, fd, buffer, sizeof(buffer))) > 0) {
        for (long offset = 0; offset < n;) {
          // struct linux_dirent64: ino (8), off (8), reclen (2), type (1),
          // then the name.
          unsigned short length;
          std::memcpy(&length, buffer + offset + 16, sizeof(length));
          const char *entry = buffer + offset + 19;
          offset += length;
          if (std::strcmp(entry, ".") == 0 || std::strcmp(entry, "..") == 0)
            continue;
          removeEntry(fd, entry);
          removed = true;
        }
      }
    }
    ::close(fd);
  }
  ::unlinkat(parent, name, AT_REMOVEDIR);
}

/// Removes the temporary work folder, says `message` and exits 130, with
/// async-signal-safe calls only.
[[noreturn]] void exitInterrupted(const char *message, size_t length) {
  for (int i = 0; i < removedCount; ++i)
    removeEntry(AT_FDCWD, removedFolders[i]);
  ssize_t ignored = ::write(2, message, length);
  (void)ignored;
  _exit(130);
}

/// A second SIGINT or SIGTERM while the child stops: the user will not wait
/// for it. Kills it (mpirun's ranks die with it, each by its own
/// PR_SET_PDEATHSIG), removes the folder and exits.
void onSecondInterrupt(int) {
  if (runningChild > 0)
    ::kill(pid_t(runningChild), SIGKILL);
  static const char message[] =
      "tp-run: error: interrupted again; the run was killed\n";
  exitInterrupted(message, sizeof(message) - 1);
}

/// LLVM's interrupt hook (called from its SIGINT/SIGTERM handler, once; the
/// handler then restores the default dispositions): with a child running,
/// passes the signal on as SIGTERM, so that mpirun stops its ranks, lets
/// runProgram finish (and die), and catches a second signal with
/// onSecondInterrupt (by default it would end tp-run and leave the folder);
/// otherwise removes the temporary work folder and exits.
void onInterrupt() {
  interrupted = 1;
  if (runningChild > 0) {
    struct sigaction action = {};
    action.sa_handler = onSecondInterrupt;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
    ::kill(pid_t(runningChild), SIGTERM);
    return;
  }
  static const char message[] = "tp-run: error: interrupted\n";
  exitInterrupted(message, sizeof(message) - 1);
}

/// Forks and executes `argv` (argv[0] is the program's path) with `envp`,
/// stdout and stderr to `output` when it is not null. The child gets SIGTERM
/// when tp-run dies. Returns the child's pid, or -1 with `error` set.
pid_t spawn(const std::vector<char *> &argv, char *const *envp,
            const char *output, std::string &error) {
  // The exec's errno comes back through a pipe that a successful exec
  // closes (O_CLOEXEC).
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) {
    error = std::strerror(errno);
    return -1;
  }
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    error = std::strerror(errno);
    ::close(report[0]);
    ::close(report[1]);
    return -1;
  }
  if (pid == 0) {
    ::close(report[0]);
#if defined(__linux__)
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
    // tp-run may have died between fork and prctl.
    if (::getppid() != parent)
      _exit(127);
    // The default dispositions (LLVM's handlers are tp-run's).
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    int failed = 0;
    if (output) {
      int fd = ::open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
      if (fd < 0 || ::dup2(fd, 1) < 0 || ::dup2(fd, 2) < 0)
        failed = errno;
    }
    if (!failed) {
      ::execve(argv[0], argv.data(), envp);
      failed = errno;
    }
    ssize_t ignored = ::write(report[1], &failed, sizeof(failed));
    (void)ignored;
    _exit(127);
  }
  ::close(report[1]);
  int childErrno = 0;
  ssize_t n;
  do
    n = ::read(report[0], &childErrno, sizeof(childErrno));
  while (n < 0 && errno == EINTR);
  ::close(report[0]);
  if (n == ssize_t(sizeof(childErrno))) {
    ::waitpid(pid, nullptr, 0);
    error = std::strerror(childErrno);
    if (output)
      error += llvm::formatv(" (or cannot write '{0}')", output).str();
    return -1;
  }
  return pid;
}

} // namespace

void removeTree(StringRef path) {
  std::string text = path.str();
  removeEntry(AT_FDCWD, text.c_str());
}

void removeAtExit(StringRef path) {
  if (path.size() >= sizeof(removedFolders[0]))
    die("the temporary folder's path is too long: '" + path + "'");
  if (removedCount == int(std::size(removedFolders)))
    die("too many temporary folders to remove at exit");
  char *slot = removedFolders[removedCount];
  std::memcpy(slot, path.data(), path.size());
  slot[path.size()] = 0;
  if (removedCount++ == 0) {
    // removeEntry, not llvm::sys::fs::remove_directories, which leaves
    // FIFOs (mpirun's debugger_attach_fifo) and so their folders.
    std::atexit([] {
      for (int i = 0; i < removedCount; ++i)
        removeEntry(AT_FDCWD, removedFolders[i]);
    });
    llvm::sys::SetInterruptFunction(onInterrupt);
  }
}

int runProgram(StringRef program, llvm::ArrayRef<std::string> args,
               int timeoutSeconds,
               std::optional<llvm::ArrayRef<StringRef>> env,
               StringRef outputFile, StringRef what) {
  std::string name =
      what.empty() ? ("'" + program + " " + llvm::join(args, " ") + "'").str()
                   : what.str();
  // Everything the child needs, prepared before fork.
  std::vector<std::string> argStrings = {program.str()};
  argStrings.insert(argStrings.end(), args.begin(), args.end());
  std::vector<char *> argv;
  for (std::string &a : argStrings)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> envStrings;
  std::vector<char *> envp;
  if (env) {
    for (StringRef e : *env)
      envStrings.push_back(e.str());
    for (std::string &e : envStrings)
      envp.push_back(e.data());
    envp.push_back(nullptr);
  }
  std::string output = outputFile.str();
  // What tp-run said so far comes before what the program says.
  llvm::outs().flush();
  llvm::errs().flush();
  std::string error;
  pid_t child = spawn(argv, env ? envp.data() : environ,
                      outputFile.empty() ? nullptr : output.c_str(), error);
  if (child < 0)
    die("cannot start " + name + ": " + error);
  runningChild = child;
  llvm::sys::SetInterruptFunction(onInterrupt);

  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  int status = 0;
  auto poll = [&]() {
    pid_t done;
    do
      done = ::waitpid(child, &status, WNOHANG);
    while (done < 0 && errno == EINTR);
    return done;
  };
  bool timedOut = false, killed = false;
  pid_t done;
  while ((done = poll()) == 0) {
    if (!timedOut && !interrupted && timeoutSeconds > 0 &&
        Clock::now() - start >= std::chrono::seconds(timeoutSeconds)) {
      timedOut = true;
      ::kill(child, SIGTERM);
      start = Clock::now();
    }
    if ((timedOut || interrupted) && !killed &&
        Clock::now() - start >= std::chrono::seconds(10)) {
      killed = true;
      ::kill(child, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  runningChild = 0;
  if (done < 0)
    die("cannot wait for " + name + ": " + std::strerror(errno));
  if (interrupted)
    die(name + " was interrupted");
  if (timedOut)
    die(llvm::formatv("{0} did not finish within {1} s (--timeout){2}", name,
                      timeoutSeconds,
                      killed ? "; it ignored SIGTERM and was killed" : ""));
  if (WIFSIGNALED(status))
    die(name + " crashed: " + ::strsignal(WTERMSIG(status)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

} // namespace tprun
