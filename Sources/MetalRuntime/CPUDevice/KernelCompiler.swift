// KernelCompiler.swift -- MSL to a loaded shared object for the CPU device: clang with the Metal shim,
// an in-process table of loaded kernels, and the disk cache (ObjectCache.swift), whose objects are loaded
// from exactly the checked bytes. Builds happen in a temporary directory removed after each compile; a
// process leaves nothing behind in TMPDIR (on Linux; elsewhere its private copies are removed at exit).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPUEngine

// MARK: - Loaded kernels

/// A kernel object loaded into this process, unloaded (and its descriptor closed) when the last pipeline
/// using it is released. Work in flight retains its pipeline, so no thread runs its code by then.
final class LoadedKernel {
    /// The kernel function name.
    let name: String
    /// Entry points for the executor (allocated for the object's life).
    let entry: UnsafeMutablePointer<nm_cpu_kernel>
    /// What the signature declares.
    let analysis: KernelAnalysis
    /// The dlopen handle.
    private let handle: UnsafeMutableRawPointer
    /// The in-memory file the object was loaded from, or -1.
    private let objectFD: Int32

    /// Wraps a loaded object whose entry points are bound.
    init(name: String, entry: UnsafeMutablePointer<nm_cpu_kernel>, analysis: KernelAnalysis,
         handle: UnsafeMutableRawPointer, objectFD: Int32) {
        self.name = name
        self.entry = entry
        self.analysis = analysis
        self.handle = handle
        self.objectFD = objectFD
    }

    deinit {
        nm_dlclose_object(handle, objectFD)
        entry.deinitialize(count: 1)
        entry.deallocate()
    }
}

/// A table entry that does not keep its kernel loaded.
private struct WeakKernel {
    weak var kernel: LoadedKernel?
}

/// The outcome of a compile request.
struct CompileResult {
    /// The loaded kernel.
    let kernel: LoadedKernel
    /// True when clang ran.
    let compiled: Bool
    /// Wall time of the request.
    let nanoseconds: UInt64
}

// MARK: - Compiler

/// Compiles MSL for the CPU device and caches the results in-process and on disk.
final class KernelCompiler {
    /// Guards the tables below.
    private let lock = Mutex()
    /// Kernels loaded in this process, by (source, kernel, options) digest, while a pipeline uses them.
    private var loaded: [String: WeakKernel] = [:]
    /// The most recently loaded kernels, kept loaded a little longer: a library compiled then asked for its
    /// pipelines (the simulated Metal device) or a kernel dropped and compiled again is not loaded twice.
    private var recent: [LoadedKernel] = []
    /// How many of them.
    static let recentlyLoaded = 8
    /// clang's path and identity for cache keys, found on first use.
    private var toolchain: (clang: String, identity: String)? = nil
    /// Whether the build directories of dead processes were removed (once, before the first compile).
    private var swept = false
    /// The shim directory and a digest of its headers, found on first use.
    private var shim: (dir: String, digest: String)? = nil
    /// The disk cache: nil = not decided yet, .some(nil) = none usable.
    private var cache: ObjectCache?? = nil
    /// Checked precompiled shim headers, by key.
    private var headers: [String: PrecompiledHeader] = [:]

    /// Flags for every kernel: Metal's rules as far as clang can impose them (see docs/limitations.md).
    /// The C++ standard follows the MSL version (`languageStandard`).
    static let baseFlags: [String] = [
        "-x", "c++", "-O2", "-fPIC", "-shared", "-nostdinc", "-fno-exceptions", "-fno-rtti",
        // A crash of clang writes no reproducer (the kernel's whole source and a script, in TMPDIR).
        "-fno-crash-diagnostics",
        // Every page of a large stack frame (a big local array) is touched in order, so an overflow hits the
        // guard page below the stack, a fault the executor reports, instead of writing into other memory.
        "-fstack-clash-protection",
        "-fsigned-char", "-fwrapv", "-fno-strict-float-cast-overflow", "-fno-math-errno", "-fvisibility=hidden",
        "-Xclang", "-ffloat16-excess-precision=none", "-Xclang", "-cl-single-precision-constant",
        "-Wno-unknown-attributes", "-Wno-unused-function", "-Wno-unused-variable", "-Wno-ignored-attributes",
    ]

    /// The MSL versions (times 100) the CPU device compiles; 0 in nm_compile_options means `defaultLanguageVersion`.
    static let languageVersions: [UInt32] = [200, 210, 220, 230, 240, 300, 310, 320, 400, 410]
    /// The version a request without one gets: the newest the Metal backend requests by number (MSL 3.2,
    /// macOS 15), as Metal compiles with the newest version its OS has when none is set.
    static let defaultLanguageVersion: UInt32 = 320

    /// MSL before 4 is C++14-based, MSL 4 C++17-based (MSL specification §1.5).
    static func languageStandard(_ version: UInt32) -> String { version >= 400 ? "-std=c++17" : "-std=c++14" }

    /// The math modes of `nm_compile_options.fast_math`, as Apple's MTLMathMode and MTLMathFloatingPointFunctions
    /// define them (MSL specification §1.6.3):
    /// 0 safe: no value-changing transformation, precise functions. Contraction is off: the spec allows it within
    ///   an expression ("FP contract on") but Apple's runtime compiler was measured not to fuse in safe mode, and
    ///   the tests accept both.
    /// 1 relaxed: reassociation, contraction across statements, no signed zeros, reciprocals, fast functions;
    ///   NaN and infinity handled.
    /// 2 fast: relaxed, and NaN and infinity assumed absent.
    /// (-ffast-math itself is not used: it could link crtfastmath and change the host's floating-point mode.)
    static let mathModeFlags: [[String]] = [
        ["-ffp-contract=off", "-fno-fast-math"],
        ["-fno-signed-zeros", "-freciprocal-math", "-fno-trapping-math", "-fassociative-math", "-ffp-contract=fast",
         "-fapprox-func"],
        ["-fno-signed-zeros", "-freciprocal-math", "-fno-trapping-math", "-fassociative-math", "-ffp-contract=fast",
         "-fapprox-func", "-fno-honor-nans", "-fno-honor-infinities"],
    ]

    /// Compiles (or finds) kernel `kernelName` of `source`.
    func compile(source: String, kernelName: String, options: nm_compile_options, abi: KernelABI?) throws -> CompileResult {
        let t0 = nm_clock_ns()
        let version = options.language_version == 0 ? KernelCompiler.defaultLanguageVersion : options.language_version
        guard KernelCompiler.languageVersions.contains(version) else {
            throw RuntimeError.invalid("language_version \(options.language_version) is not an MSL version the CPU device knows: "
                + "use one of " + KernelCompiler.languageVersions.map(String.init).joined(separator: ", ")
                + " (the MSL version times 100), or 0 for the default (\(KernelCompiler.defaultLanguageVersion))")
        }
        guard Int(options.fast_math) < KernelCompiler.mathModeFlags.count else {
            throw RuntimeError.invalid("fast_math \(options.fast_math) is not a math mode: use 0 (safe), 1 (relaxed) or 2 (fast)")
        }
        let memoKey = hex(sha256(Array("\(kernelName)\u{0}\(options.fast_math)\u{0}\(version)\u{0}\(abi?.key ?? "")\u{0}".utf8)
            + Array(source.utf8)))
        if let k = lock.locked({ loaded[memoKey]?.kernel }) {
            return CompileResult(kernel: k, compiled: false, nanoseconds: nm_clock_ns() - t0)
        }
        let analysis = try analyzeKernel(source: source, kernelName: kernelName, languageVersion: version)
        try abi?.check(against: analysis.parameters, kernelName: kernelName)
        let (clang, identity) = try lock.locked { try toolchainLocked() }
        let (shimDir, shimDigest) = try lock.locked { try shimLocked() }
        let flags = KernelCompiler.baseFlags + [KernelCompiler.languageStandard(version)]
            + KernelCompiler.mathModeFlags[Int(options.fast_math)] + ["-D__METAL_VERSION__=\(version)"]
        let lines = source.utf8.reduce(1) { $0 + ($1 == 10 ? 1 : 0) }
        let unit = "#line 1 \"kernel.metal\"\n" + analysis.rewrittenSource
            + generateGlue(kernelName: kernelName, analysis: analysis, sourceLineCount: lines,
                           argumentBlockBytes: abi?.argumentBlockBytes ?? [:])
        let key = hex(sha256(Array("numba-metal cpu object v1\u{0}\(identity)\u{0}\(shimDigest)\u{0}\(flags.joined(separator: " "))\u{0}".utf8)
            + Array(unit.utf8)))

        var compiledNow = false
        var bytes: [UInt8]? = nil
        let cache = lock.locked { cacheLocked() }
        if let cache, let cached = cache.read(key: key, kind: .object) { bytes = cached }
        if bytes == nil {
            bytes = try runClang(clang: clang, shimDir: shimDir, flags: flags, unit: unit, kernelName: kernelName)
            compiledNow = true
            cache?.write(key: key, kind: .object, bytes: bytes!)
        }
        let kernel = try load(bytes: bytes!, name: kernelName, analysis: analysis)
        var evicted: LoadedKernel? = nil  // unloaded after the lock is released
        let result = lock.locked { () -> LoadedKernel in
            if let existing = loaded[memoKey]?.kernel { return existing }
            loaded = loaded.filter { $0.value.kernel != nil }
            loaded[memoKey] = WeakKernel(kernel: kernel)
            recent.append(kernel)
            if recent.count > KernelCompiler.recentlyLoaded { evicted = recent.removeFirst() }
            return kernel
        }
        evicted = nil
        return CompileResult(kernel: result, compiled: compiledNow, nanoseconds: nm_clock_ns() - t0)
    }

    // MARK: clang

    /// The clang to compile with and its identity for cache keys (ClangToolchain.swift), found on first use.
    private func toolchainLocked() throws -> (String, String) {
        if let t = toolchain { return t }
        let clang = try ClangToolchain.shared.resolve(cache: cacheLocked())
        toolchain = (clang.path, clang.identity)
        return toolchain!
    }

    /// Runs clang on the translation unit in a new temporary directory (clang's TMPDIR too; removed with
    /// everything in it afterwards); returns the object's bytes or throws NM_ERR_COMPILE with clang's
    /// messages (a summary of them when clang crashed).
    private func runClang(clang: String, shimDir: String, flags: [String], unit: String, kernelName: String) throws -> [UInt8] {
        let tmp = temporaryDirectory()
        if lock.locked({ () -> Bool in defer { swept = true }; return !swept }) { _ = nm_sweep_build_directories(tmp) }
        // The process id in the name lets a later process remove what a killed one left behind.
        var template = Array("\(tmp)/numba-metal-build-\(getpid())-XXXXXX".utf8CString)
        guard let dirPtr = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw temporaryDirectoryFailure(tmp, errno, doing: "create a build directory")
        }
        let dir = String(cString: dirPtr)
        defer { nm_remove_directory(dir) }
        guard writeFile("\(dir)/kernel.cpp", Array(unit.utf8)) else {
            let code = errno
            throw descriptorExhaustion(code, doing: "write the kernel's source for clang")
                ?? temporaryDirectoryFailure(tmp, code, doing: "write the kernel's source")
        }
        let argv = [clang] + flags + ["-isystem", shimDir, "-o", "\(dir)/kernel.so", "\(dir)/kernel.cpp", "-lm"]
        var rc: Int32 = -1
        var log = ""
        let pch = precompiledShim(clang: clang, shimDir: shimDir, flags: flags, buildDir: dir)
        if let pch {
            (rc, log) = runProcess(argv + ["-include-pch", pch.path, "-Xclang", "-fno-validate-pch"], passing: pch.descriptor,
                                   temporaryDirectory: dir)
        }
        if rc != 0 && (rc < 0 || KernelCompiler.refusedPrecompiledHeader(log)) {
            if let pch, rc > 0 { forgetPrecompiledShim(pch) }
            (rc, log) = runProcess(argv, passing: -1, temporaryDirectory: dir)  // without the precompiled header
        }
        log = log.replacingAll("\(dir)/", with: "")
        if rc < 0 { throw clangStartFailure(clang, -rc) }
        if rc != 0 {
            if log.contains("No space left on device") || (log.isEmpty && freeBytes(tmp).map { $0 < 1 << 20 } == true) {
                throw temporaryDirectoryFailure(tmp, ENOSPC, doing: "compile the kernel", detail: log)
            }
            if let crash = compilerCrash(status: rc, log: log, kernelName: kernelName) { throw crash }
            throw RuntimeError.compile(log.isEmpty ? "clang failed with exit status \(rc) and printed nothing" : log)
        }
        guard let bytes = readFile("\(dir)/kernel.so") else {
            let code = errno
            throw descriptorExhaustion(code, doing: "read the object clang compiled")
                ?? RuntimeError.internal("clang succeeded but \(dir)/kernel.so cannot be read (\(String(cString: strerror(code))))")
        }
        return bytes
    }

    /// Loads exactly these bytes and binds the entry points.
    private func load(bytes: [UInt8], name: String, analysis: KernelAnalysis) throws -> LoadedKernel {
        var err = [CChar](repeating: 0, count: 1024)
        let tmp = temporaryDirectory()
        var objectFD: Int32 = -1
        guard let handle = bytes.withUnsafeBytes({ nm_dlopen_bytes($0.baseAddress, $0.count, tmp, &objectFD, &err, err.count) }) else {
            throw RuntimeError.internal(String(cString: err))
        }
        let entry = UnsafeMutablePointer<nm_cpu_kernel>.allocate(capacity: 1)
        entry.initialize(to: nm_cpu_kernel())
        let kernel = LoadedKernel(name: name, entry: entry, analysis: analysis, handle: handle, objectFD: objectFD)
        if nm_cpu_kernel_bind(handle, entry, &err, err.count) != 0 { throw RuntimeError.internal(String(cString: err)) }
        entry.pointee.uses_fibers = analysis.usesFibers ? 1 : 0
        copy(name, intoTuple: &entry.pointee.name)
        return kernel
    }

    // MARK: precompiled shim

    /// A checked precompiled header clang reads: an in-memory file passed as descriptor 3 (`/dev/fd/3`), or
    /// where there is none, a private temporary file removed at exit.
    struct PrecompiledHeader {
        /// What clang is given after -include-pch.
        let path: String
        /// The descriptor the clang process gets as 3, or -1.
        let descriptor: Int32
        /// Its key in `headers` and the disk cache.
        var key: String = ""
    }

    /// Whether clang's messages say it could not use the precompiled header (whatever the version says:
    /// "input is not a PCH file", "malformed or corrupted AST file", "precompiled header ... built with").
    static func refusedPrecompiledHeader(_ log: String) -> Bool {
        log.isEmpty || log.contains("precompiled header") || log.contains(".pch") || log.contains("PCH file")
            || log.contains("AST file")
    }

    /// Forgets a precompiled header clang could not use: the next compile builds it again and replaces
    /// the disk-cache entry (an entry whose digest verifies but which clang refuses is a miss).
    private func forgetPrecompiledShim(_ header: PrecompiledHeader) {
        lock.locked {
            // Its descriptor stays open: another thread may be starting a clang that reads it (a rare leak of
            // one descriptor per refused header).
            if let known = headers[header.key], known.path == header.path, known.descriptor == header.descriptor {
                headers[header.key] = nil
            }
        }
        if let cache = lock.locked({ cacheLocked() }) { cache.remove(key: header.key, kind: .precompiledHeader) }
    }

    /// A precompiled `metal_stdlib` for these flags (halves the compile time: parsing the shim dominates),
    /// or nil to compile without one. Cached on disk like objects; clang reads exactly the checked bytes.
    private func precompiledShim(clang: String, shimDir: String, flags: [String], buildDir: String) -> PrecompiledHeader? {
        if environment("NUMBA_METAL_NO_PCH") != nil { return nil }
        guard let (identity, digest, cache) = try? lock.locked({ () -> (String, String, ObjectCache?) in
            (try toolchainLocked().1, try shimLocked().1, cacheLocked())
        }) else { return nil }
        // The header file's identity and modification time too: clang (with -fno-validate-pch) matches
        // `#pragma once` against the file the header was built from, so a header built from an earlier file at the same path (a reinstall) would let a
        // source's own `#include <metal_stdlib>` include the shim a second time.
        var st = stat()
        guard stat("\(shimDir)/metal_stdlib", &st) == 0 else { return nil }
        #if os(Linux)
        let modified = "\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec)"
        #else
        let modified = "\(st.st_mtimespec.tv_sec).\(st.st_mtimespec.tv_nsec)"
        #endif
        let fileIdentity = "\(st.st_dev):\(st.st_ino):\(st.st_size):\(modified)"
        let key = hex(sha256(Array("numba-metal pch v2\u{0}\(identity)\u{0}\(digest)\u{0}\(shimDir)\u{0}\(fileIdentity)\u{0}\(flags.joined(separator: " "))".utf8)))
        if let known = lock.locked({ headers[key] }) { return known }
        var bytes = cache?.read(key: key, kind: .precompiledHeader)
        if bytes == nil {
            // -x c++ and -shared do not apply to a header; the rest must match the compiles exactly.
            var headerFlags: [String] = []
            var skip = false
            for f in flags {
                if skip { skip = false; continue }
                if f == "-x" { skip = true; continue }
                if f == "-shared" { continue }
                headerFlags.append(f)
            }
            let out = "\(buildDir)/shim.pch"
            let (rc, _) = runProcess([clang] + headerFlags + ["-isystem", shimDir, "-x", "c++-header", "\(shimDir)/metal_stdlib", "-o", out],
                                     passing: -1, temporaryDirectory: buildDir)
            defer { unlink(out) }
            guard rc == 0, let built = readFile(out) else { return nil }
            bytes = built
            cache?.write(key: key, kind: .precompiledHeader, bytes: built)
        }
        guard let b = bytes, var header = privateHeader(b) else { return nil }
        header.key = key
        return lock.locked {
            if let known = headers[key] {  // another thread got there first
                if header.descriptor >= 0 { close(header.descriptor) } else { unlink(header.path) }
                return known
            }
            headers[key] = header
            return header
        }
    }

    /// The header's bytes where only this process can change them.
    private func privateHeader(_ bytes: [UInt8]) -> PrecompiledHeader? {
        let fd = bytes.withUnsafeBytes { nm_memory_file($0.baseAddress, $0.count, "numba-metal-shim.pch") }
        if fd >= 0 { return PrecompiledHeader(path: "/dev/fd/3", descriptor: fd) }
        var template = Array("\(temporaryDirectory())/numba-metal-shim-XXXXXX".utf8CString)
        let tfd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard tfd >= 0 else { return nil }
        let ok = writeAll(tfd, bytes)
        close(tfd)
        let path = String(cString: template)
        guard ok else {
            unlink(path)
            return nil
        }
        removeAtExit(path)
        return PrecompiledHeader(path: path, descriptor: -1)
    }

    // MARK: shim

    /// The shim directory (NUMBA_METAL_SHIM_DIR, else beside the library, else the source tree) and a
    /// digest of its contents for cache keys.
    private func shimLocked() throws -> (String, String) {
        if let s = shim { return s }
        let lib = String(cString: nm_library_path())
        var candidates: [String] = []
        if let env = environment("NUMBA_METAL_SHIM_DIR") { candidates.append(env) }
        let libDir = dirname(of: lib)
        let source = "Sources/MetalRuntime/CPUDevice/shim"  // the source tree's, from a library in .build/
        candidates += ["\(libDir)/shim", "\(libDir)/../../../\(source)", "\(libDir)/../../\(source)", "\(libDir)/../\(source)"]
        guard let dir = candidates.first(where: { fileExists("\($0)/metal_stdlib") }) else {
            throw RuntimeError.unavailable("the Metal shim headers (metal_stdlib) were not found next to \(lib); reinstall "
                + "numba-metal or set NUMBA_METAL_SHIM_DIR to its shim/ directory")
        }
        var digestInput = [UInt8]()
        for f in ["metal_stdlib", "metal_simdgroup_matrix", "simd/simd.h"] {
            let contents = readFile("\(dir)/\(f)")
            if contents == nil, let e = descriptorExhaustion(errno, doing: "read the Metal shim \(dir)/\(f)") { throw e }
            digestInput += Array("\(f)\u{0}".utf8) + (contents ?? [])
        }
        shim = (dir, hex(sha256(digestInput)))
        return shim!
    }

    // MARK: directories

    /// The disk cache, opened and checked on first use (cache held). A process out of descriptors decides
    /// later: the cache is not given up for good because of it.
    private func cacheLocked() -> ObjectCache? {
        if let c = cache { return c }
        let opened = ObjectCache.open()
        if opened == nil && (errno == EMFILE || errno == ENFILE) { return nil }
        cache = .some(opened)
        return cache!
    }
}

/// Where builds happen: TMPDIR, else /tmp.
func temporaryDirectory() -> String { environment("TMPDIR") ?? "/tmp" }

/// Free bytes in the file system holding path, if it can be told.
func freeBytes(_ path: String) -> UInt64? {
    var fs = statvfs()
    guard statvfs(path, &fs) == 0 else { return nil }
    return UInt64(fs.f_bavail) * UInt64(fs.f_frsize)
}

/// The error for a temporary directory that could not be used (a full one says so).
func temporaryDirectoryFailure(_ dir: String, _ code: Int32, doing what: String, detail: String = "") -> RuntimeError {
    let reason = String(cString: strerror(code))
    let said = detail.isEmpty ? "" : " (clang: " + (detail.split(separator: "\n").first { $0.contains("No space") }.map(String.init) ?? detail) + ")"
    if code == ENOSPC || code == EDQUOT {
        return RuntimeError.internal("could not \(what): the temporary directory \(dir) is full (\(reason))\(said); free space "
            + "there or set TMPDIR to a directory with room")
    }
    return RuntimeError.internal("could not \(what) in the temporary directory \(dir) (\(reason))\(said); set TMPDIR to a "
        + "writable directory with free space")
}

/// The error for a descriptor limit met while doing `what` (EMFILE, ENFILE), or nil for another errno.
func descriptorExhaustion(_ code: Int32, doing what: String) -> RuntimeError? {
    guard code == EMFILE || code == ENFILE else { return nil }
    var message = [CChar](repeating: 0, count: 512)
    nm_describe_descriptor_exhaustion(code, what, &message, message.count)
    return RuntimeError.internal(String(cString: message))
}

/// The error for clang that could not be started (errno `code`): a missing or unusable clang is the
/// platform's; no descriptors, processes or memory to start it is the process's state, said as such.
func clangStartFailure(_ clang: String, _ code: Int32) -> RuntimeError {
    if let e = descriptorExhaustion(code, doing: "run \(clang)") { return e }
    let reason = String(cString: strerror(code))
    switch code {
    case ENOENT, EACCES, ENOEXEC, ENOTDIR, ELOOP, EPERM:
        return RuntimeError.unavailable("could not run \(clang) (\(reason)); set NUMBA_METAL_CLANG to a working clang++")
    default:
        return RuntimeError.internal("could not start \(clang) (\(reason), errno \(code)): the system is short of processes "
            + "or memory; try again when it has more")
    }
}

/// What clang prints when it crashes, whatever the version: its request for a bug report, its stack dump,
/// and the driver's note that the compiler process died.
private let crashMarkers = ["PLEASE submit a bug report", "Stack dump:", "frontend command failed due to signal",
                            "crash backtrace"]

/// NM_ERR_COMPILE saying that clang crashed compiling kernelName, with the first lines of what it printed
/// that are not its stack dump (those name the MSL line it was at); nil when clang did not crash.
func compilerCrash(status: Int32, log: String, kernelName: String) -> RuntimeError? {
    let signalled = status > 128 && status < 128 + 65
    guard signalled || crashMarkers.contains(where: { log.contains($0) }) else { return nil }
    var kept: [String] = []
    for line in log.split(separator: "\n", omittingEmptySubsequences: true) {
        let text = String(line).trimmingSpaces()
        if crashMarkers.contains(where: { text.contains($0) }) || text.contains("Program arguments:")
            || text.hasPrefix("#") || text.hasPrefix("0x") || text.contains(" 0x") { continue }
        kept.append(text.utf8.count > 240 ? String(decoding: Array(text.utf8)[..<240], as: UTF8.self) + " ..." : text)
        if kept.count == 6 { break }
    }
    let how = signalled ? "it was killed by signal \(status - 128)" : "exit status \(status)"
    return RuntimeError.compile("the C++ compiler crashed compiling kernel \(kernelName)() (\(how)): the CPU device's clang "
        + "could not compile this kernel, which says nothing about Metal's compiler; make the kernel smaller (a very large "
        + "expression, tuple or unrolled loop is the usual cause). The first lines of its output:"
        + (kept.isEmpty ? " (none)" : "\n" + kept.map { "  " + $0 }.joined(separator: "\n")))
}

/// Paths removed when the process exits normally.
nonisolated(unsafe) private var pathsToRemove: [String] = []
private let pathsToRemoveLock = Mutex()

/// Removes path when the process exits (atexit).
func removeAtExit(_ path: String) {
    pathsToRemoveLock.locked {
        if pathsToRemove.isEmpty {
            atexit { pathsToRemoveLock.locked { for p in pathsToRemove { unlink(p) } } }
        }
        pathsToRemove.append(path)
    }
}

/// Runs argv (descriptor passFd, if >= 0, becomes the child's 3; TMPDIR is temporaryDirectory when given);
/// its exit status (or -errno when it could not start) and what it printed.
func runProcess(_ argv: [String], passing passFd: Int32, temporaryDirectory: String? = nil) -> (Int32, String) {
    var cArgs: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) }
    cArgs.append(nil)
    defer { for p in cArgs { free(p) } }
    var output: UnsafeMutablePointer<CChar>? = nil
    let rc = cArgs.withUnsafeBufferPointer { buf in
        buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buf.count) { argv in
            if let tmp = temporaryDirectory { return nm_run_process(argv, passFd, tmp, &output) }
            return nm_run_process(argv, passFd, nil, &output)
        }
    }
    defer { free(output) }
    return (rc, output.map { String(cString: $0) } ?? "")
}
