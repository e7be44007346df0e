#include <sqlite3.h>

/// Turns off SQLite's global memory statistics, which take a mutex on every
/// allocation. `sqlite3_config` is variadic, so Swift cannot call it directly.
/// Only effective before SQLite is first used in the process.
static inline int msg_sqlite_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
