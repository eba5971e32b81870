// CPUDevice.swift -- the CPU reference device: runs the same MSL Metal would get, compiled by clang
// against a strict Metal shim, with threadgroups in parallel on a worker pool and the work-items of a
// threadgroup as fibers (see Sources/CPUEngine/cpu_pool.c and cpu_fibers.c).
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPUEngine

// MARK: - Device

/// The CPU reference device (the last device index before the simulated one).
final class CPUDevice: Device {
    let info: nm_device_info
    let stats = Counters(count: DeviceStat.allCases.count)
    /// The kernel compiler and object cache.
    let compiler = KernelCompiler()
    /// Counter 0: the per-dispatch time limit in nanoseconds (0: none).
    private let limits = Counters(count: 1)
    /// Counter 0: the bytes mapped for the buffers this device allocated and has not yet freed.
    private let mapped = Counters(count: 1)

    /// Creates the device; its time limit starts as NUMBA_METAL_CPU_TIME_LIMIT_MS.
    init() {
        info = CPUDevice.describe()
        limits.set(0, nm_cpu_default_time_limit_ns())
    }

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
    func makeBuffer(length: UInt64) throws -> Buffer {
        let mapping = try HostMapping(length: length, counter: mapped)
        return Buffer(device: self, contents: mapping.base, length: length, storage: mapping)
    }

    /// Caller memory, page-aligned as on Metal.
    func wrapBuffer(host: UnsafeMutableRawPointer, length: UInt64) throws -> Buffer {
        try checkWrappable(host: host, length: length)
        return Buffer(device: self, contents: host, length: length, storage: nil, callerMemory: true)
    }

    func nativeHandle(of buffer: Buffer) throws -> UnsafeMutableRawPointer {
        throw RuntimeError.unavailable("the CPU reference device has no MTLBuffers: its buffers are host memory")
    }

    func wrapNative(_ handle: UnsafeMutableRawPointer) throws -> Buffer {
        throw RuntimeError.unavailable("the CPU reference device cannot use an MTLBuffer; copy the data to host memory")
    }

    /// Compiles with clang (or finds the object in a cache).
    func makePipeline(source: String, name: String, options: nm_compile_options, abi: KernelABI?) throws -> any Pipeline {
        let compiled = try compiler.compile(source: source, kernelName: name, options: options, abi: abi)
        stats.add(compiled.compiled ? DeviceStat.pipelinesCompiled.rawValue : DeviceStat.pipelinesFromCache.rawValue, 1)
        return CPUPipeline(device: self, kernel: compiled.kernel, fromCache: !compiled.compiled, compileNs: compiled.nanoseconds)
    }

    /// A queue with its own executor thread.
    func makeQueue() throws -> any Queue {
        let limits = self.limits
        return try CPUQueue(device: self, timeLimit: { limits.get(0) })
    }

    /// The watchdog stops a dispatch that runs longer than this.
    func setTimeLimit(_ nanoseconds: UInt64) throws { limits.set(0, nanoseconds) }

    /// The host's physical memory: the device shares it with the host, as an Apple GPU does.
    var memoryBudget: UInt64 { UInt64(max(0, sysconf(Int32(_SC_PHYS_PAGES)))) * hostPageSize }

    /// Whole pages of the buffers it allocated; wrapped memory is its owner's.
    var allocatedSize: UInt64 { mapped.get(0) }

    var timeLimit: UInt64 { limits.get(0) }
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

/// Zero-filled page-aligned host memory of the CPU device, unmapped when the last buffer using it goes.
final class HostMapping {
    /// The first byte.
    let base: UnsafeMutableRawPointer
    /// Bytes mapped (whole pages; one page for length 0).
    private let mappedLength: Int
    /// Counter 0 holds the bytes mapped by the live mappings it counts.
    private let counter: Counters

    /// Maps length bytes (at least one page), counted in counter 0 of `counter` while mapped.
    init(length: UInt64, counter: Counters) throws {
        let bytes = Int(max(length, 1))
        let mapped = (bytes + Int(hostPageSize) - 1) / Int(hostPageSize) * Int(hostPageSize)
        let p = mmap(nil, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0)
        guard let p, p != UnsafeMutableRawPointer(bitPattern: -1) else {  // MAP_FAILED
            throw RuntimeError.outOfMemory("could not allocate a buffer of \(length) bytes (mmap failed with errno \(errno))")
        }
        base = p
        mappedLength = mapped
        self.counter = counter
        counter.add(0, Int64(mapped))
    }

    deinit {
        munmap(base, mappedLength)
        counter.add(0, -Int64(mappedLength))
    }
}

// MARK: - Pipelines

/// A loaded kernel object and what its signature declares.
final class CPUPipeline: Pipeline {
    let device: any Device
    let kernelName: String
    let info: nm_pipeline_info
    let bindings: KernelBindings
    /// The loaded kernel (entry points, fiber flag).
    let kernel: LoadedKernel

    /// Creates the pipeline over a loaded kernel.
    init(device: any Device, kernel: LoadedKernel, fromCache: Bool, compileNs: UInt64) {
        self.device = device
        self.kernel = kernel
        kernelName = kernel.name
        bindings = KernelBindings(kernel.analysis.parameters)
        var info = nm_pipeline_info()
        info.max_total_threads_per_threadgroup = min(1024, kernel.analysis.maxTotalThreadsPerThreadgroup ?? 1024)
        info.thread_execution_width = 32
        info.static_threadgroup_memory = kernel.entry.pointee.static_threadgroup_bytes
        info.from_cache = fromCache ? 1 : 0
        info.compile_ns = compileNs
        self.info = info
    }
}
