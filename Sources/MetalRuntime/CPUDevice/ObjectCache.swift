// ObjectCache.swift -- the CPU device's disk cache of compiled kernel objects, precompiled shim headers and
// what probing a clang found (ClangToolchain.swift), `<cache>/cpu-objects`. Its objects are native code this process will run, so an entry is used only when
// nobody but the user can have written it and it is the entry of the key asked for:
//  - `<cache>` and `<cache>/cpu-objects` are opened with O_NOFOLLOW (a symlink in their place is refused) and
//    checked on the open descriptor: directories owned by the effective user, not writable by group or
//    others. Otherwise there is no disk cache: kernels are compiled and nothing is stored;
//  - entries are opened relative to that descriptor (renaming a directory above it changes nothing) with
//    O_NOFOLLOW and O_NONBLOCK (a FIFO cannot block the open), and checked on the open descriptor: a regular
//    file owned by the user, not writable by group or others, at most `maxEntryBytes`;
//  - an entry is `NMOBJ2 <key> <digest>\n<bytes>` where digest = SHA-256 of (the format, the kind of entry,
//    the key, the bytes); it is used only if the key it names is the one asked for and the digest matches,
//    so neither a damaged entry nor another key's entry (renamed or copied) is ever loaded;
//  - an entry that fails any check is treated as missing: the compile that follows writes a new one in its
//    place (a private temporary file renamed over it), so nothing is loaded from it and it does not stay.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPUEngine

/// The cache directory of compiled CPU objects, open and checked.
final class ObjectCache {
    /// What an entry holds (its file suffix).
    enum Kind: String {
        /// A compiled kernel's shared object.
        case object = "nmo"
        /// A precompiled shim header for one flag set.
        case precompiledHeader = "pch"
        /// What probing a clang found (ClangToolchain.swift).
        case compilerProbe = "probe"
    }

    /// Larger entries are not read.
    static let maxEntryBytes: UInt64 = 256 << 20
    /// The header's first bytes.
    private static let magic = "NMOBJ2 "

    /// `<cache>/cpu-objects`.
    let path: String
    /// Its open descriptor: every entry is opened relative to it.
    private let fd: Int32

    private init(path: String, fd: Int32) {
        self.path = path
        self.fd = fd
    }

    deinit { close(fd) }

    /// `<cache>` by the documented rule: NUMBA_METAL_CACHE_DIR, else $NUMBA_CACHE_DIR/numba-metal, else
    /// $XDG_CACHE_HOME/numba-metal, else ~/.cache/numba-metal; nil without a home.
    static func root() -> String? {
        if let d = environment("NUMBA_METAL_CACHE_DIR") { return d }
        if let d = environment("NUMBA_CACHE_DIR") { return d + "/numba-metal" }
        if let d = environment("XDG_CACHE_HOME") { return d + "/numba-metal" }
        if let h = environment("HOME") { return h + "/.cache/numba-metal" }
        return nil
    }

    /// The cache, created 0700 where missing; nil when it cannot be used safely (then nothing is cached).
    static func open() -> ObjectCache? {
        guard let root = root(), makeDirectories(root) else { return nil }
        let rootFD = openPath(root, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard rootFD >= 0 else { return nil }
        defer { close(rootFD) }
        guard isPrivateDirectory(rootFD) else { return nil }
        if mkdirat(rootFD, "cpu-objects", 0o700) != 0 && errno != EEXIST { return nil }
        let dirFD = openat(rootFD, "cpu-objects", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard dirFD >= 0 else { return nil }
        guard isPrivateDirectory(dirFD) else {
            close(dirFD)
            return nil
        }
        return ObjectCache(path: root + "/cpu-objects", fd: dirFD)
    }

    /// The bytes of key's entry, or nil when it is missing or fails a check (see the file's header).
    func read(key: String, kind: Kind) -> [UInt8]? {
        let entry = openat(fd, "\(key).\(kind.rawValue)", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard entry >= 0 else { return nil }
        defer { close(entry) }
        var st = stat()
        guard fstat(entry, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_uid == geteuid(), (st.st_mode & 0o022) == 0
        else { return nil }
        var raw: UnsafeMutableRawPointer? = nil
        let n = nm_read_fd(entry, &raw, ObjectCache.maxEntryBytes)
        guard n >= 0, let raw else { return nil }
        defer { free(raw) }
        let data = UnsafeRawBufferPointer(start: raw, count: Int(n))
        let header = ObjectCache.magic.utf8.count + 64 + 1 + 64 + 1
        guard data.count > header, Array(data[0..<ObjectCache.magic.utf8.count]) == Array(ObjectCache.magic.utf8),
              data[header - 1] == 10 else { return nil }
        let start = ObjectCache.magic.utf8.count
        let recordedKey = String(decoding: data[start..<(start + 64)], as: UTF8.self)
        let recordedDigest = String(decoding: data[(start + 65)..<(start + 129)], as: UTF8.self)
        guard recordedKey == key else { return nil }
        let bytes = Array(data[header...])
        guard ObjectCache.digest(key: key, kind: kind, bytes: bytes) == recordedDigest else { return nil }
        return bytes
    }

    /// Writes key's entry: a new 0600 file renamed over whatever is there (concurrent writers are safe).
    func write(key: String, kind: Kind, bytes: [UInt8]) {
        let name = "\(key).\(kind.rawValue)"
        let tmp = ".\(key).\(getpid()).\(nm_clock_ns()).tmp"
        let entry = Array("\(ObjectCache.magic)\(key) \(ObjectCache.digest(key: key, kind: kind, bytes: bytes))\n".utf8) + bytes
        let out = openat(fd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard out >= 0 else { return }
        let written = writeAll(out, entry)
        close(out)
        guard written else {
            unlinkat(fd, tmp, 0)
            return
        }
        if renameat(fd, tmp, fd, name) != 0 {
            // Something that is not a file is in the way: an empty directory can go, then try once more.
            if unlinkat(fd, name, AT_REMOVEDIR) != 0 || renameat(fd, tmp, fd, name) != 0 { unlinkat(fd, tmp, 0) }
        }
    }

    /// Removes key's entry (one that verified but could not be used).
    func remove(key: String, kind: Kind) {
        unlinkat(fd, "\(key).\(kind.rawValue)", 0)
    }

    /// What an entry's header records: SHA-256 of the format, kind, key and bytes.
    static func digest(key: String, kind: Kind, bytes: [UInt8]) -> String {
        hex(sha256(Array("numba-metal cache entry 2\u{0}\(kind.rawValue)\u{0}\(key)\u{0}".utf8) + bytes))
    }

    /// A directory descriptor the cache may use: a directory owned by the effective user, not writable by
    /// group or others (its objects will run in this process).
    private static func isPrivateDirectory(_ fd: Int32) -> Bool {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return false }
        return (st.st_mode & S_IFMT) == S_IFDIR && st.st_uid == geteuid() && (st.st_mode & 0o022) == 0
    }

    /// mkdir -p with mode 0700 for the directories it creates.
    private static func makeDirectories(_ path: String) -> Bool {
        if fileExists(path) { return true }
        let parent = dirname(of: path)
        if parent != path && !fileExists(parent) && !makeDirectories(parent) { return false }
        return mkdir(path, 0o700) == 0 || errno == EEXIST
    }
}

/// open(2) (the name `open` inside ObjectCache is its own factory).
private func openPath(_ path: String, _ flags: Int32) -> Int32 { open(path, flags) }
