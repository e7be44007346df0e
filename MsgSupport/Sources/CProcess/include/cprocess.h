// What msg's process runner (ProcessPool: exec: and the event hook) needs from the C
// library that Swift cannot call or spell well: posix_spawn with a process group of
// its own, signals reset and every other descriptor closed; and pidfd_open, which
// glibc 2.36 does not wrap.
#ifndef MSG_CPROCESS_H
#define MSG_CPROCESS_H
#include <sys/types.h>

/// Starts `file` with `argv` and `envp` in a new process group of its own (its
/// pgid is its pid), with every signal's disposition set to default and none
/// blocked; standard input is `stdin_fd`, standard output /dev/null, standard
/// error `stderr_fd`, and no other descriptor is open. A `file` without a slash
/// is looked up in this process's PATH, as execvp does.
/// Returns 0 and the child's pid in `*pid`, or an errno value.
int msg_spawn(const char *file, char *const argv[], char *const envp[],
              int stdin_fd, int stderr_fd, pid_t *pid);

/// Starts `path` (no PATH look-up) with `argv` and `envp` in a new process group
/// of its own, every signal's disposition default and none blocked, in directory
/// `dir` (NULL: this process's), with standard input, output and error the
/// descriptors given and no other open. For runners that wait with a deadline
/// and end the whole group (the tests' TestProcess).
/// Returns 0 and the child's pid in `*pid`, or an errno value.
int msg_spawn_io(const char *path, char *const argv[], char *const envp[], const char *dir,
                 int stdin_fd, int stdout_fd, int stderr_fd, pid_t *pid);

/// Makes this process the reaper of its orphaned descendants
/// (PR_SET_CHILD_SUBREAPER), so what a killed command started is reparented to
/// msg and reaped by it, not left to an init that may never reap it.
int msg_become_subreaper(void);

/// pipe2(fds, O_CLOEXEC), which Swift's Glibc does not declare.
int msg_pipe(int fds[2]);

/// A descriptor that polls readable when process `pid` ends, or -1 with errno.
int msg_pidfd_open(pid_t pid);

#endif
