// CPUDevice.swift -- the CPU reference device: runs the same MSL Metal would get, compiled by clang
// against a strict Metal shim, with threadgroups in parallel on a worker pool and the work-items of a
// threadgroup as fibers (see Sources/CPUEngine/cpu_engine.c).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPUEngine

// MARK: - Device

/// The CPU reference device (always the last device index).
final class CPUDevice: Device {
    /// The kernel compiler and object cache.
    let compiler = KernelCompiler()

    /// Creates the device.
    init() { super.init(info: CPUDevice.describe()) }

    /// The fixed description: Metal's limits, the host's page size and ~75% of RAM as working set.
    static func describe() -> nm_device_info {
        var info = nm_device_info()
        let threads = nm_cpu_thread_count()
        copy("CPU reference device (\(cpuModelName()), \(threads) threads)", intoTuple: &info.name)
        info.kind = NM_DEVICE_CPU
        info.max_threads_per_threadgroup = 1024
        info.max_threadgroup_memory = 32768
        info.simd_width = 32
        info.unified_memory = 1
        let pages = UInt64(max(0, sysconf(Int32(_SC_PHYS_PAGES))))
        info.recommended_working_set = pages * hostPageSize / 4 * 3
        info.page_size = hostPageSize
        info.max_buffer_slots = UInt32(NM_MAX_BUFFER_SLOTS)
        info.max_argument_bytes = UInt32(NM_MAX_ARGUMENT_BYTES)
        return info
    }

    /// Zero-filled page-aligned host memory.
    override func makeBuffer(length: UInt64) throws -> Buffer { try CPUBuffer(device: self, length: length) }

    /// Caller memory, page-aligned as on Metal.
    override func wrapBuffer(host: UnsafeMutableRawPointer, length: UInt64) throws -> Buffer {
        try checkWrappable(host: host, length: length)
        return CPUBuffer(device: self, wrapping: host, length: length)
    }

    /// Compiles with clang (or finds the object in a cache).
    override func makePipeline(source: String, name: String, options: nm_compile_options, abi: KernelABI?) throws -> Pipeline {
        let compiled = try compiler.compile(source: source, kernelName: name, options: options, abi: abi)
        stats.add(compiled.compiled ? Stat.pipelinesCompiled.rawValue : Stat.pipelinesFromCache.rawValue, 1)
        return CPUPipeline(device: self, kernel: compiled.kernel, fromCache: !compiled.compiled, compileNs: compiled.nanoseconds)
    }

    /// A queue with its own executor thread.
    override func makeQueue() throws -> Queue { try CPUQueue(cpuDevice: self) }
}

/// The host CPU's model name (Linux /proc/cpuinfo; sysctl on macOS), "unknown CPU" otherwise.
func cpuModelName() -> String {
    #if os(Linux)
    if let bytes = readFile("/proc/cpuinfo") {
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") where line.hasPrefix("model name") {
            if let colon = line.firstIndex(of: ":") { return String(line[line.index(after: colon)...]).trimmingSpaces() }
        }
    }
    #elseif canImport(Darwin)
    var size = 0
    if sysctlbyname("machdep.cpu.brand_string", nil, &size, nil, 0) == 0 && size > 0 {
        var buf = [CChar](repeating: 0, count: size)
        if sysctlbyname("machdep.cpu.brand_string", &buf, &size, nil, 0) == 0 { return String(cString: buf) }
    }
    #endif
    return "unknown CPU"
}

// MARK: - Buffers

/// Host memory owned (zero-filled, page-aligned) or wrapped (caller-owned).
final class CPUBuffer: Buffer {
    /// Whether the memory is ours to unmap.
    private let owned: Bool
    /// Bytes mapped (whole pages) when owned.
    private let mappedLength: Int

    /// A zero-filled buffer; length 0 gets one valid page.
    init(device: Device, length: UInt64) throws {
        let bytes = Int(max(length, 1))
        let mapped = (bytes + Int(hostPageSize) - 1) / Int(hostPageSize) * Int(hostPageSize)
        let p = mmap(nil, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0)
        guard let p, p != UnsafeMutableRawPointer(bitPattern: -1) else {  // MAP_FAILED
            throw RuntimeError.outOfMemory("could not allocate a buffer of \(length) bytes (mmap failed with errno \(errno))")
        }
        owned = true
        mappedLength = mapped
        super.init(device: device, contents: p, length: length)
    }

    /// Wraps caller memory without a copy.
    init(device: Device, wrapping host: UnsafeMutableRawPointer, length: UInt64) {
        owned = false
        mappedLength = 0
        super.init(device: device, contents: host, length: length)
    }

    deinit { if owned { munmap(contents, mappedLength) } }
}

// MARK: - Pipelines

/// A loaded kernel object and what its signature declares.
final class CPUPipeline: Pipeline {
    /// The loaded kernel (entry points, fiber flag).
    let kernel: LoadedKernel

    /// Creates the pipeline over a loaded kernel.
    init(device: Device, kernel: LoadedKernel, fromCache: Bool, compileNs: UInt64) {
        self.kernel = kernel
        var info = nm_pipeline_info()
        info.max_total_threads_per_threadgroup = min(1024, kernel.analysis.maxTotalThreadsPerThreadgroup ?? 1024)
        info.thread_execution_width = 32
        info.static_threadgroup_memory = kernel.entry.pointee.static_threadgroup_bytes
        info.from_cache = fromCache ? 1 : 0
        info.compile_ns = compileNs
        super.init(device: device, kernelName: kernel.name, info: info)
    }
}
