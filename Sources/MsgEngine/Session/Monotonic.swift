#if canImport(Glibc)
@preconcurrency import Glibc
#endif

/// A clock that only moves forward, for measuring how long something took.
enum Monotonic {
    /// Milliseconds since an arbitrary fixed point.
    static func milliseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
