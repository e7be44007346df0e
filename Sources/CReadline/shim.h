// The terminal side of `msg shell`: GNU readline (libreadline-dev; readline.h needs
// stdio.h first) and signalfd, through which the prompt sees Ctrl-C.
#include <stdio.h>
#include <sys/signalfd.h>
#include <readline/readline.h>
#include <readline/history.h>
