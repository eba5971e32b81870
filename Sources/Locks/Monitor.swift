// Monitor.swift -- a mutex with a condition variable (Glibc/Darwin only), shared by the runtime and the
// simulated Metal API, which must not depend on each other.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A mutex with a condition variable, for waiting on state other threads change.
public final class Monitor: @unchecked Sendable {
    /// The pthread mutex (heap-allocated: it must not move).
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    /// The condition variable.
    @usableFromInline let cond: UnsafeMutablePointer<pthread_cond_t>

    /// Creates an unlocked monitor.
    public init() {
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    /// Runs body with the mutex held.
    @inlinable
    public func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Changes state with the mutex held and wakes every waiter.
    @inlinable
    public func update<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer {
            pthread_cond_broadcast(cond)
            pthread_mutex_unlock(mutex)
        }
        return try body()
    }

    /// With the mutex held, waits until ready() is true, or until the deadline (seconds on the monotonic
    /// clock, monotonicSeconds()) passes; true when ready.
    @discardableResult
    public func wait(until ready: () -> Bool, deadline: Double? = nil) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !ready() {
            guard let deadline else {
                pthread_cond_wait(cond, mutex)
                continue
            }
            let now = monotonicSeconds()
            if now >= deadline { return false }
            // The condition variable's clock is the realtime one: wake up regularly and look again.
            var ts = timespec()
            clock_gettime(CLOCK_REALTIME, &ts)
            let ns = Int(ts.tv_nsec) + Int(min(deadline - now, 0.05) * 1e9)
            ts.tv_sec += ns / 1_000_000_000
            ts.tv_nsec = ns % 1_000_000_000
            pthread_cond_timedwait(cond, mutex, &ts)
        }
        return true
    }
}

/// Seconds on the monotonic clock.
public func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}
