// Support.swift -- small building blocks shared by the devices: the error type that becomes an
// nm_status plus message at the ABI, autorelease pools, a mutex, environment and file helpers
// (Glibc/Darwin only).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(ObjectiveC)
import ObjectiveC
#else
import MetalSimulator
#endif
import CPUEngine

// MARK: - Errors

/// A failure that crosses the C ABI as a status code plus the calling thread's message.
struct RuntimeError: Error {
    /// One of the NM_ERR_* codes.
    let status: nm_status
    /// What was wrong, the limit when there is one, and what to do.
    let message: String

    /// A bad handle, size, offset, slot or option.
    static func invalid(_ message: String) -> RuntimeError { RuntimeError(status: NM_ERR_INVALID_ARGUMENT, message: message) }
    /// Over a device or pipeline limit.
    static func limit(_ message: String) -> RuntimeError { RuntimeError(status: NM_ERR_LIMIT, message: message) }
    /// The device or a feature is missing.
    static func unavailable(_ message: String) -> RuntimeError { RuntimeError(status: NM_ERR_UNAVAILABLE, message: message) }
    /// MSL did not compile; the message is the compiler's log.
    static func compile(_ message: String) -> RuntimeError { RuntimeError(status: NM_ERR_COMPILE, message: message) }
    /// Submitted work failed.
    static func execution(_ message: String) -> RuntimeError { RuntimeError(status: NM_ERR_EXECUTION, message: message) }
    /// The GPU refuses further work from this process; the message says to restart it.
    static func deviceLost(_ message: String) -> RuntimeError { RuntimeError(status: NM_ERR_DEVICE_LOST, message: message) }
    /// Allocation failed.
    static func outOfMemory(_ message: String) -> RuntimeError { RuntimeError(status: NM_ERR_OUT_OF_MEMORY, message: message) }
    /// A bug or an unexpected host failure.
    static func `internal`(_ message: String) -> RuntimeError { RuntimeError(status: NM_ERR_INTERNAL, message: message) }
}

// MARK: - Autorelease pools

/// Runs body inside an autorelease pool: Objective-C's on macOS; on Linux the simulated Metal API's, the
/// only code there that autoreleases.
@inline(__always)
func withAutoreleasePool<T>(_ body: () throws -> T) rethrows -> T {
    try autoreleasepool(invoking: body)
}

// MARK: - Locking

/// A non-recursive pthread mutex with scoped use.
final class Mutex {
    /// The pthread mutex (heap-allocated: it must not move).
    private let raw: UnsafeMutablePointer<pthread_mutex_t>

    /// Creates an unlocked mutex.
    init() {
        raw = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(raw, nil)
    }

    deinit {
        pthread_mutex_destroy(raw)
        raw.deallocate()
    }

    /// Runs body with the mutex held.
    @inline(__always)
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(raw)
        defer { pthread_mutex_unlock(raw) }
        return try body()
    }

    /// Runs body with the mutex held if it is free now; nil (body not run) if another thread holds it.
    @inline(__always)
    func lockedIfFree<T>(_ body: () throws -> T) rethrows -> T? {
        guard pthread_mutex_trylock(raw) == 0 else { return nil }
        defer { pthread_mutex_unlock(raw) }
        return try body()
    }
}

/// Lock-free 64-bit counters (relaxed), for device statistics.
final class Counters {
    /// The counters.
    private let raw: UnsafeMutablePointer<UInt64>
    /// How many counters.
    private let count: Int

    /// Creates `count` counters, all zero.
    init(count: Int) {
        self.count = count
        raw = UnsafeMutablePointer<UInt64>.allocate(capacity: count)
        raw.initialize(repeating: 0, count: count)
    }

    deinit { raw.deallocate() }

    /// Adds delta (which may be negative) to counter i.
    @inline(__always) func add(_ i: Int, _ delta: Int64) { _ = nm_atomic_add_u64(raw + i, delta) }

    /// The current value of counter i.
    @inline(__always) func get(_ i: Int) -> UInt64 { nm_atomic_load_u64(raw + i) }

    /// Sets counter i.
    @inline(__always) func set(_ i: Int, _ value: UInt64) { nm_atomic_store_u64(raw + i, value) }
}

// MARK: - Environment and files

/// The value of an environment variable, nil when unset or empty.
func environment(_ name: String) -> String? {
    guard let v = getenv(name) else { return nil }
    let s = String(cString: v)
    return s.isEmpty ? nil : s
}

/// The host's memory page size.
let hostPageSize: UInt64 = UInt64(sysconf(Int32(_SC_PAGESIZE)))

/// Reads a whole file, nil if it cannot be read.
func readFile(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    if fd < 0 { return nil }
    defer { close(fd) }
    var out = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 1 << 16)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if n < 0 {
            if errno == EINTR { continue }
            return nil
        }
        if n == 0 { break }
        out.append(contentsOf: chunk[0..<n])
    }
    return out
}

/// Writes bytes to path (created 0600, truncated). Returns false on failure (errno says why).
@discardableResult
func writeFile(_ path: String, _ bytes: [UInt8]) -> Bool {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    if fd < 0 { return false }
    let ok = writeAll(fd, bytes)
    let e = errno
    close(fd)
    errno = e
    return ok
}

/// Writes all of bytes to the open descriptor fd. Returns false on failure (errno says why).
func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
    var off = 0
    while off < bytes.count {
        let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + off, $0.count - off) }
        if n < 0 {
            if errno == EINTR { continue }
            return false
        }
        off += n
    }
    return true
}

/// True when path names an existing file or directory.
func fileExists(_ path: String) -> Bool {
    var st = stat()
    return stat(path, &st) == 0
}

/// The directory part of a path ("." when there is none).
func dirname(of path: String) -> String {
    guard let i = path.lastIndex(of: "/") else { return "." }
    return i == path.startIndex ? "/" : String(path[..<i])
}

/// Lowercase hex of bytes.
func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out = [UInt8]()
    out.reserveCapacity(bytes.count * 2)
    for b in bytes {
        out.append(digits[Int(b >> 4)])
        out.append(digits[Int(b & 15)])
    }
    return String(decoding: out, as: UTF8.self)
}

/// SHA-256 of bytes.
func sha256(_ bytes: [UInt8]) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: 32)
    bytes.withUnsafeBytes { src in out.withUnsafeMutableBytes { nm_sha256(src.baseAddress, src.count, $0.baseAddress!.assumingMemoryBound(to: UInt8.self)) } }
    return out
}

/// The C string in a fixed-size char tuple.
func string<T>(fromTuple tuple: T) -> String {
    withUnsafeBytes(of: tuple) { raw in
        let bytes = raw.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Copies s (truncated, NUL-terminated) into a fixed-size char tuple.
func copy<T>(_ s: String, intoTuple tuple: inout T) {
    withUnsafeMutableBytes(of: &tuple) { raw in
        let bytes = Array(s.utf8.prefix(raw.count - 1))
        for i in 0..<raw.count { raw[i] = i < bytes.count ? bytes[i] : 0 }
    }
}
