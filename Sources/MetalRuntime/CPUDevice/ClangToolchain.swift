// ClangToolchain.swift -- which clang the CPU device compiles MSL with. Every candidate (NUMBA_METAL_CLANG
// alone when it is set; else the clang++ beside `swift`, clang++ and clang++-NN on PATH, clang++-NN in
// /usr/bin, the Swift toolchain's in /opt/swift) is probed before it is used: its `--version` (an LLVM clang
// older than `minimumMajor` is skipped without compiling anything), then one compile and link of a small
// translation unit with the very flags kernels get, using what the shim needs (_Float16, bool vectors).
// The first that passes is used; when none does, the error names each one tried and why it was refused.
// A probe's outcome is remembered in this process and in the disk cache (keyed by the compiler's resolved
// path, size and modification time and by the flags), so a process that only loads cached kernels runs no
// compiler to find one.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPUEngine

/// The clang the CPU device uses.
struct Clang {
    /// The path it is run by.
    let path: String
    /// Its resolved path, size and modification time (cache keys).
    let identity: String
    /// What its `--version` says, e.g. "clang 21.0.0".
    let version: String
    /// Where it was found.
    let origin: String
}

/// Finds and probes the clang the CPU device compiles with (one per process).
final class ClangToolchain {
    /// The process's toolchain.
    static let shared = ClangToolchain()

    /// The oldest LLVM clang whose outcome can be trusted: clang 16 introduced
    /// `-ffloat16-excess-precision=none`, which keeps each half operation rounded to half as in Metal
    /// (clang 15 refuses the flag; clang 14 has no _Float16 on x86-64 and no bool vectors, so the shim
    /// does not even parse). Apple's clang numbers its versions differently: it is judged by the compile probe.
    static let minimumMajor = 16

    /// The probe's translation unit: what the shim relies on beyond C++14 (half arithmetic, bool and half
    /// vectors), in a function the linker must keep.
    static let probeSource = """
        typedef bool nm_probe_bool2 __attribute__((ext_vector_type(2)));
        typedef _Float16 nm_probe_half2 __attribute__((ext_vector_type(2)));
        extern "C" __attribute__((visibility("default"))) float nm_probe(_Float16 a, _Float16 b, nm_probe_bool2 m) {
            nm_probe_half2 v = {a, b};
            return m[0] ? (float)(v.x * v.y) : (float)(v.x + v.y);
        }

        """

    /// What the compile probe passes to clang besides its files: the flags of a kernel compile.
    static var probeFlags: [String] {
        KernelCompiler.baseFlags + [KernelCompiler.languageStandard(KernelCompiler.defaultLanguageVersion)]
            + KernelCompiler.mathModeFlags[0]
    }

    /// How to get a clang, for messages.
    static let howToGetOne = "install clang \(minimumMajor) or newer (Debian and Ubuntu: `apt install clang-\(minimumMajor)` "
        + "or newer, which puts clang++-NN in /usr/bin; macOS: `xcode-select --install`) or a Swift toolchain "
        + "(its clang++ is used), or set NUMBA_METAL_CLANG to a clang++ \(minimumMajor) or newer"

    private enum Outcome {
        case works(version: String)
        case refused(String)
    }

    private let lock = Mutex()
    /// The clang in use, once found.
    private var found: Clang? = nil
    /// What the candidates before it were refused for: "path (origin): reason".
    private var skipped: [String] = []
    /// Probe outcomes in this process, by identity.
    private var outcomes: [String: Outcome] = [:]

    /// The clang to compile with (found on first use), or NM_ERR_UNAVAILABLE naming every candidate tried
    /// and why each was refused.
    func resolve(cache: ObjectCache?) throws -> Clang {
        try lock.locked {
            if let c = found { return c }
            let explicit = environment("NUMBA_METAL_CLANG")
            var refusals: [String] = []
            for (path, origin) in ClangToolchain.candidates() {
                switch try probe(path, cache: cache) {
                case let .works(version)?:
                    let c = Clang(path: path, identity: compilerIdentity(of: path)!, version: version, origin: origin)
                    found = c
                    skipped = refusals
                    return c
                case let .refused(reason)?:
                    refusals.append("\(path) (\(origin)): \(reason)")
                case nil:
                    if explicit != nil { refusals.append("\(path) (\(origin)): it does not exist") }
                }
            }
            let tried = refusals.isEmpty ? "" : ":\n  " + refusals.joined(separator: "\n  ")
            if let explicit {
                throw RuntimeError.unavailable("the CPU device cannot compile MSL with NUMBA_METAL_CLANG=\(explicit)\(tried)\n"
                    + "Point NUMBA_METAL_CLANG at a clang++ \(ClangToolchain.minimumMajor) or newer, or unset it to let "
                    + "numba-metal search PATH")
            }
            let looked = refusals.isEmpty
                ? " and found none (looked for clang++ beside swift and on PATH, clang++-NN on PATH and in /usr/bin, "
                    + "and /opt/swift/usr/bin/clang++)"
                : " and none of these works\(tried)"
            throw RuntimeError.unavailable("the CPU device needs clang to compile MSL (clang \(ClangToolchain.minimumMajor) or newer)"
                + "\(looked)\nTo fix it: \(ClangToolchain.howToGetOne)")
        }
    }

    /// For `numba-metal doctor` (nm_cpu_compiler_info): the clang in use and its version, then one line
    /// per candidate skipped before it and why.
    func describe(cache: ObjectCache?) throws -> String {
        let c = try resolve(cache: cache)
        let notes = lock.locked { skipped }
        return (["\(c.path) (\(c.version); \(c.origin))"] + notes.map { "skipped \($0)" }).joined(separator: "\n")
    }

    /// Every path that may be a clang, in order of preference, with where it was found; each resolved
    /// file only once. NUMBA_METAL_CLANG, when set, is the only one.
    static func candidates() -> [(String, String)] {
        if let env = environment("NUMBA_METAL_CLANG") { return [(env, "NUMBA_METAL_CLANG")] }
        let path = (environment("PATH") ?? "/usr/bin:/bin").split(separator: ":").map(String.init)
        var out: [(String, String)] = []
        if let d = path.first(where: { isExecutable("\($0)/swift") }) { out.append(("\(d)/clang++", "beside swift on PATH")) }
        for d in path where isExecutable("\(d)/clang++") { out.append(("\(d)/clang++", "clang++ on PATH")) }
        for d in path { out += versioned(in: d).map { ($0, "on PATH") } }
        out += versioned(in: "/usr/bin").map { ($0, "in /usr/bin") }
        out.append(("/opt/swift/usr/bin/clang++", "the Swift toolchain in /opt/swift"))
        var seen = Set<String>()
        return out.filter { candidate in
            guard let r = resolvedPath(candidate.0) else { return false }
            return seen.insert(r).inserted
        }
    }

    /// clang++-NN in dir, newest first.
    private static func versioned(in dir: String) -> [String] {
        guard let d = opendir(dir) else { return [] }
        defer { closedir(d) }
        var found: [(Int, String)] = []
        while let entry = readdir(d) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self))
            }
            guard name.hasPrefix("clang++-"), let n = Int(name.dropFirst("clang++-".count)) else { continue }
            if isExecutable("\(dir)/\(name)") { found.append((n, "\(dir)/\(name)")) }
        }
        return found.sorted { $0.0 > $1.0 }.map { $0.1 }
    }

    // MARK: probing

    /// The outcome for path (nil when it does not exist), from this process's memory, the disk cache, or a
    /// probe. Throws what says nothing about the compiler: a full or unusable TMPDIR, no descriptors or
    /// processes left (the error a kernel compile would give; nothing is remembered).
    private func probe(_ path: String, cache: ObjectCache?) throws -> Outcome? {
        guard let id = compilerIdentity(of: path) else { return nil }
        if let o = outcomes[id] { return o }
        let key = hex(sha256(Array(("numba-metal clang probe v1\u{0}\(id)\u{0}\(ClangToolchain.probeFlags.joined(separator: " "))\u{0}"
            + ClangToolchain.probeSource).utf8)))
        if let bytes = cache?.read(key: key, kind: .compilerProbe), let o = ClangToolchain.decode(bytes) {
            outcomes[id] = o
            return o
        }
        guard let (o, lasting) = try run(path) else { return nil }
        outcomes[id] = o
        if lasting { cache?.write(key: key, kind: .compilerProbe, bytes: ClangToolchain.encode(o)) }
        return o
    }

    /// Runs the probe: the outcome, and whether it is the compiler's own (false when it could not be started:
    /// that may pass). nil when path is not a file.
    private func run(_ path: String) throws -> (Outcome, Bool)? {
        guard access(path, X_OK) == 0 else {
            return fileExists(path) ? (.refused("it is not executable"), false) : nil
        }
        let (rc, text) = runProcess([path, "--version"], passing: -1)
        if rc < 0 { return try ClangToolchain.notStarted(path, -rc) }
        let first = text.split(separator: "\n").first.map(String.init) ?? ""
        guard rc == 0, let (major, version, apple) = ClangToolchain.parseVersion(text) else {
            return (.refused("`--version` does not say it is clang (exit status \(rc): \(first.isEmpty ? "nothing" : first))"), true)
        }
        if !apple && major < ClangToolchain.minimumMajor {
            return (.refused("\(version) is older than clang \(ClangToolchain.minimumMajor), the oldest the CPU device's Metal shim "
                + "works with (it needs -ffloat16-excess-precision=none)"), true)
        }
        // One compile and link with the kernels' flags, in a private directory removed afterwards.
        let tmp = temporaryDirectory()
        var template = Array("\(tmp)/numba-metal-build-\(getpid())-XXXXXX".utf8CString)
        guard let dirPtr = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            let code = errno
            throw descriptorExhaustion(code, doing: "probe \(path)") ?? temporaryDirectoryFailure(tmp, code, doing: "probe the C++ compiler")
        }
        let dir = String(cString: dirPtr)
        defer { nm_remove_directory(dir) }
        guard writeFile("\(dir)/probe.cpp", Array(ClangToolchain.probeSource.utf8)) else {
            let code = errno
            throw descriptorExhaustion(code, doing: "probe \(path)") ?? temporaryDirectoryFailure(tmp, code, doing: "probe the C++ compiler")
        }
        let argv = [path] + ClangToolchain.probeFlags + ["-o", "\(dir)/probe.so", "\(dir)/probe.cpp", "-lm"]
        let (crc, log) = runProcess(argv, passing: -1, temporaryDirectory: dir)
        if crc < 0 { return try ClangToolchain.notStarted(path, -crc) }
        if crc != 0 && (log.contains("No space left on device") || (log.isEmpty && freeBytes(tmp).map { $0 < 1 << 20 } == true)) {
            throw temporaryDirectoryFailure(tmp, ENOSPC, doing: "probe the C++ compiler", detail: log)
        }
        if crc != 0 {
            let lines = log.replacingAll("\(dir)/", with: "").split(separator: "\n").map { String($0).trimmingSpaces() }
            let error = lines.first { $0.contains("error") } ?? lines.first ?? "exit status \(crc)"
            return (.refused("\(version) cannot compile what the CPU device's Metal shim needs: \(error)"), true)
        }
        return (.works(version: version), true)
    }

    /// A compiler that could not be started (errno code): refused when the file cannot be run, thrown when the
    /// process is short of descriptors, processes or memory (clangStartFailure's NM_ERR_INTERNAL).
    private static func notStarted(_ path: String, _ code: Int32) throws -> (Outcome, Bool) {
        let e = clangStartFailure(path, code)
        if e.status != NM_ERR_UNAVAILABLE { throw e }
        return (.refused("it could not be run (\(String(cString: strerror(code))))"), false)
    }

    /// (major, "clang X.Y.Z" or "Apple clang X.Y.Z", Apple's) from `--version` output.
    static func parseVersion(_ text: String) -> (Int, String, Bool)? {
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard let i = words.firstIndex(of: "version"), i > 0, words[i - 1] == "clang", i + 1 < words.count else { continue }
            let number = words[i + 1]
            guard let major = Int(number.split(separator: ".").first ?? ""), major > 0 else { continue }
            let apple = words[..<i].contains("Apple")
            return (major, (apple ? "Apple clang " : "clang ") + number, apple)
        }
        return nil
    }

    private static func encode(_ o: Outcome) -> [UInt8] {
        switch o {
        case let .works(version): return Array("works\n\(version)".utf8)
        case let .refused(reason): return Array("refused\n\(reason)".utf8)
        }
    }

    private static func decode(_ bytes: [UInt8]) -> Outcome? {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let nl = text.firstIndex(of: "\n") else { return nil }
        let rest = String(text[text.index(after: nl)...])
        switch text[..<nl] {
        case "works": return .works(version: rest)
        case "refused": return .refused(rest)
        default: return nil
        }
    }
}

/// A compiler's identity for cache keys: its resolved path, size and modification time (nil when it does
/// not exist). A `--version` run per process would cost ~20 ms on every disk-cache hit.
func compilerIdentity(of path: String) -> String? {
    guard let resolved = resolvedPath(path) else { return nil }
    var st = stat()
    guard stat(resolved, &st) == 0 else { return nil }
    #if canImport(Darwin)
    let mtime = st.st_mtimespec.tv_sec
    #else
    let mtime = st.st_mtim.tv_sec
    #endif
    return "\(resolved)|\(st.st_size)|\(mtime)"
}

/// realpath(3), or nil.
private func resolvedPath(_ path: String) -> String? {
    guard let r = realpath(path, nil) else { return nil }
    defer { free(r) }
    return String(cString: r)
}

/// A regular file this process may execute.
private func isExecutable(_ path: String) -> Bool {
    var st = stat()
    return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
}
