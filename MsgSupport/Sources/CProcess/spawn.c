#define _GNU_SOURCE
#include "cprocess.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/// posix_spawn(p) with a process group of its own, every signal default and none
/// blocked, the three standard descriptors given (stdout_fd -1: /dev/null), in
/// `dir` when not NULL, and no other descriptor open.
static int spawn(const char *file, int search_path, char *const argv[], char *const envp[], const char *dir,
                 int stdin_fd, int stdout_fd, int stderr_fd, pid_t *pid) {
    posix_spawnattr_t attr;
    posix_spawn_file_actions_t actions;
    int rc = posix_spawnattr_init(&attr);
    if (rc != 0) return rc;
    rc = posix_spawn_file_actions_init(&actions);
    if (rc != 0) { posix_spawnattr_destroy(&attr); return rc; }

    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    short flags = POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if ((rc = posix_spawnattr_setflags(&attr, flags)) == 0
        && (rc = posix_spawnattr_setpgroup(&attr, 0)) == 0
        && (rc = posix_spawnattr_setsigmask(&attr, &none)) == 0
        && (rc = posix_spawnattr_setsigdefault(&attr, &all)) == 0
        && (rc = posix_spawn_file_actions_adddup2(&actions, stdin_fd, 0)) == 0
        && (rc = stdout_fd < 0 ? posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
                               : posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1)) == 0
        && (rc = posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2)) == 0
        && (dir == NULL || (rc = posix_spawn_file_actions_addchdir_np(&actions, dir)) == 0)
        && (rc = posix_spawn_file_actions_addclosefrom_np(&actions, 3)) == 0) {
        rc = search_path ? posix_spawnp(pid, file, &actions, &attr, argv, envp)
                         : posix_spawn(pid, file, &actions, &attr, argv, envp);
    }
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
    return rc;
}

int msg_spawn(const char *file, char *const argv[], char *const envp[],
              int stdin_fd, int stderr_fd, pid_t *pid) {
    return spawn(file, 1, argv, envp, NULL, stdin_fd, -1, stderr_fd, pid);
}

int msg_spawn_io(const char *path, char *const argv[], char *const envp[], const char *dir,
                 int stdin_fd, int stdout_fd, int stderr_fd, pid_t *pid) {
    return spawn(path, 0, argv, envp, dir, stdin_fd, stdout_fd, stderr_fd, pid);
}

int msg_pidfd_open(pid_t pid) {
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int msg_pipe(int fds[2]) {
    return pipe2(fds, O_CLOEXEC);
}

int msg_become_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}
