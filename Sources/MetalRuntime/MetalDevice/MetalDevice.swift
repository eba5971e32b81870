// MetalDevice.swift -- the Metal backend: devices, shared-storage buffers and compute pipelines, written
// to Apple's Swift Metal API. On Linux it compiles against Sources/MetalSimulator, which declares the same
// API with Metal's documented behaviour: there MTLCopyAllDevices() lists no GPU, and the simulated Metal
// device (SimulatedGPU.swift) runs this very code. docs/limitations.md lists what has never run on a Mac.
#if canImport(Metal)
import Metal
import Foundation
#else
import MetalSimulator
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPUEngine

/// A readable description of an error from Metal (the compiler log for a failed library build).
func describeMetalError(_ error: any Error) -> String {
    #if canImport(Metal)
    return (error as NSError).localizedDescription
    #else
    return String(describing: error)
    #endif
}

// MARK: - Device

/// One Metal GPU (or the simulated one).
final class MetalDevice: Device {
    let info: nm_device_info
    let stats = Counters(count: DeviceStat.allCases.count)
    /// The Metal device object.
    let mtl: any MTLDevice
    /// Guards `pipelines`.
    private let lock = Mutex()
    /// Pipelines compiled in this process, by options, kernel name and source.
    private var pipelines: [String: MetalPipeline] = [:]
    /// Set once the GPU refuses further work from this process (GPUErrors.swift): every later call fails
    /// with it (guarded by lock).
    private var lost: String? = nil

    /// Latches the device as lost; the first reason stays the one message.
    func markLost(_ message: String) { lock.locked { if lost == nil { lost = message } } }

    /// Throws the lost device's message once the GPU has refused this process.
    func checkUsable() throws {
        if let m = lock.locked({ lost }) { throw RuntimeError.deviceLost(m) }
    }

    /// The SIMD-group width numba-metal's generated code assumes (simd_* and shuffles, warp emulation).
    static let requiredSIMDWidth = 32

    /// Whether numba-metal can use a GPU: Apple family 7 or later (float atomics, SIMD-group reductions,
    /// SIMD-group matrices, 32-wide SIMD groups). The AMD and Intel GPUs of Intel Macs are not offered.
    static func isSupported(_ d: any MTLDevice) -> Bool { d.supportsFamily(.apple7) }

    /// The Metal devices numba-metal can use.
    static func usableDevices() -> [any MTLDevice] {
        #if canImport(Metal)
        nm_runtime_started()  // Metal's own state does not survive fork() either (nm_forked_child)
        #endif
        return MTLCopyAllDevices().filter(isSupported)
    }

    /// How many usable Metal devices exist.
    static func deviceCount() -> Int { usableDevices().count }

    /// The description of usable Metal device index.
    static func info(index: Int) throws -> nm_device_info {
        let all = usableDevices()
        guard index >= 0 && index < all.count else { throw RuntimeError.unavailable("no Metal device \(index)") }
        return describe(all[index], kind: NM_DEVICE_METAL)
    }

    /// Metal's answers, with the ABI's fixed limits (31 buffer slots, 4096 argument bytes).
    static func describe(_ d: any MTLDevice, kind: Int32) -> nm_device_info {
        var info = nm_device_info()
        copy(d.name, intoTuple: &info.name)
        info.kind = kind
        info.max_threads_per_threadgroup = UInt32(d.maxThreadsPerThreadgroup.width)
        info.max_threadgroup_memory = UInt64(d.maxThreadgroupMemoryLength)
        info.simd_width = UInt32(requiredSIMDWidth)  // every pipeline's threadExecutionWidth is checked against it
        info.unified_memory = d.hasUnifiedMemory ? 1 : 0
        info.recommended_working_set = d.recommendedMaxWorkingSetSize
        info.page_size = hostPageSize
        info.max_buffer_slots = UInt32(NM_MAX_BUFFER_SLOTS)
        info.max_argument_bytes = UInt32(NM_MAX_ARGUMENT_BYTES)
        return info
    }

    /// Opens usable Metal device index.
    init(index: Int) throws {
        let all = MetalDevice.usableDevices()
        guard index >= 0 && index < all.count else { throw RuntimeError.unavailable("no Metal device \(index)") }
        mtl = all[index]
        info = MetalDevice.describe(mtl, kind: NM_DEVICE_METAL)
    }

    /// Wraps a Metal device already checked by the caller (the simulated one).
    init(mtl: any MTLDevice, kind: Int32) {
        self.mtl = mtl
        info = MetalDevice.describe(mtl, kind: kind)
    }

    /// A GPU's own watchdog ends long work; the simulated GPU's engine takes a limit as the CPU device does.
    func setTimeLimit(_ nanoseconds: UInt64) throws { try setSimulatedTimeLimit(nanoseconds) }

    var timeLimit: UInt64 { simulatedTimeLimit }

    var memoryBudget: UInt64 { mtl.recommendedMaxWorkingSetSize }

    var allocatedSize: UInt64 { UInt64(max(0, mtl.currentAllocatedSize)) }

    /// A shared-storage MTLBuffer.
    func makeBuffer(length: UInt64) throws -> Buffer {
        try checkUsable()
        // Metal refuses zero-length buffers: allocate a small one and report length 0.
        guard let b = mtl.makeBuffer(length: Int(max(length, 16)), options: .storageModeShared) else {
            throw RuntimeError.outOfMemory("Metal could not allocate a buffer of \(length) bytes (device working set "
                + "\(info.recommended_working_set) bytes, \(allocatedSize) allocated): it is out of memory; free device arrays no "
                + "longer needed (del them) or allocate less")
        }
        return Buffer(device: self, contents: b.contents(), length: length, storage: b)
    }

    /// An MTLBuffer over caller memory (bytesNoCopy). Metal may refuse memory it does not consider its kind
    /// (malloc'd memory is reported refused; hosted runners have answered zero-length buffers): both are
    /// NM_ERR_UNAVAILABLE, which the caller answers with a copy.
    func wrapBuffer(host: UnsafeMutableRawPointer, length: UInt64) throws -> Buffer {
        try checkUsable()
        try checkWrappable(host: host, length: length)
        // bytesNoCopy needs a page-aligned length too; the rest of the last page is mapped (same page).
        let mapped = (max(length, 1) + info.page_size - 1) / info.page_size * info.page_size
        guard let b = mtl.makeBuffer(bytesNoCopy: host, length: Int(mapped), options: .storageModeShared, deallocator: nil),
              b.length >= Int(mapped), b.contents() == host else {
            throw RuntimeError.unavailable("Metal refused to use \(length) bytes of host memory at \(host) in place "
                + "(makeBuffer(bytesNoCopy:) answered nil or a buffer not over that memory); copy it instead")
        }
        return Buffer(device: self, contents: host, length: length, storage: b, callerMemory: true)
    }

    func nativeHandle(of buffer: Buffer) throws -> UnsafeMutableRawPointer {
        guard let b = buffer.storage as? any MTLBuffer, b.contents() == buffer.contents else {
            throw RuntimeError.internal("this Metal buffer has no MTLBuffer starting at its contents")
        }
        return Unmanaged.passUnretained(b as AnyObject).toOpaque()
    }

    /// Trusts `handle` to be an MTLBuffer (e.g. from PyTorch's MPS or MLX through DLPack): Metal offers no
    /// way to check an arbitrary pointer. Its storage mode is checked: only shared memory has contents.
    func wrapNative(_ handle: UnsafeMutableRawPointer) throws -> Buffer {
        guard let b = Unmanaged<AnyObject>.fromOpaque(handle).takeUnretainedValue() as? any MTLBuffer else {
            throw RuntimeError.invalid("nm_buffer_wrap_native: \(handle) is not an MTLBuffer")
        }
        if b.storageMode != .shared {
            throw RuntimeError.invalid("nm_buffer_wrap_native: the MTLBuffer's storage mode is \(b.storageMode.rawValue), "
                + "not shared (0): its memory is not the host's, so numba-metal cannot use it in place; copy it to "
                + "a shared buffer (e.g. tensor.cpu()) first")
        }
        // numba-metal orders its work on a buffer by Metal's hazard tracking (between its blit and compute
        // encoders and between command buffers); an untracked buffer would race.
        if b.hazardTrackingMode == .untracked {
            throw RuntimeError.invalid("nm_buffer_wrap_native: the MTLBuffer was allocated untracked (MTLHazardTrackingMode."
                + "untracked, MTLResourceOptions.hazardTrackingModeUntracked): Metal would not order numba-metal's work on it "
                + "against other work, which numba-metal relies on; allocate it with hazard tracking (Metal's default), or "
                + "pass a copy")
        }
        return Buffer(device: self, contents: b.contents(), length: UInt64(b.length), storage: b, callerMemory: true)
    }

    /// makeLibrary + makeFunction + makeComputePipelineState, memoised per process.
    func makePipeline(source: String, name: String, options: nm_compile_options, abi: KernelABI?) throws -> any Pipeline {
        try checkUsable()
        let t0 = nm_clock_ns()
        let key = "\(options.fast_math)/\(options.language_version)/\(name)/\(abi?.key ?? "")/" + source
        if let p = lock.locked({ pipelines[key] }) {
            stats.add(DeviceStat.pipelinesFromCache.rawValue, 1)
            return MetalPipeline(reusing: p, compileNs: nm_clock_ns() - t0)
        }
        // The slots the kernel declares: its compiler's ABI, which the MSL must match (as on the CPU device);
        // for hand-written kernels, what the MSL reader finds (a source it does not follow is still Metal's
        // to accept, unchecked here).
        let readAs = options.language_version == 0 ? MetalDevice.pinnedLanguageVersion : options.language_version
        let parameters: [KernelParameter]
        if let abi {
            try abi.check(against: try analyzeKernel(source: source, kernelName: name, languageVersion: readAs).parameters,
                          kernelName: name)
            parameters = abi.parameters
        } else {
            parameters = (try? analyzeKernel(source: source, kernelName: name, languageVersion: readAs))?.parameters ?? []
        }
        // 64-bit atomics (atomic_ulong's max and min, MSL 3.1 §6.15.4) exist on Apple9 GPUs and on Apple8 GPUs
        // that are also Mac2 (Metal feature set tables, footnote 11); elsewhere the kernel is refused by name.
        if source.contains("atomic_ulong") && !(mtl.supportsFamily(.apple9)
                                                 || (mtl.supportsFamily(.apple8) && mtl.supportsFamily(.mac2))) {
            throw RuntimeError.unavailable("kernel '\(name)' uses 64-bit atomics (atomic max/min of uint64), which "
                + "this GPU (\(mtl.name)) does not have: Metal has them on Apple9 GPUs (M3, A17 and later) and on "
                + "M2-class GPUs (Apple8 with Mac2); use a uint32 array here")
        }
        let compileOptions = MTLCompileOptions()
        MetalDevice.setMathMode(try requestedMathMode(options), on: compileOptions)
        // Always set: left alone it is the OS's newest MSL (4.0 on macOS 26), which nothing here compiles.
        compileOptions.languageVersion = try MetalDevice.languageVersion(readAs)
        let library: any MTLLibrary
        do {
            library = try mtl.makeLibrary(source: source, options: compileOptions)
        } catch {
            throw RuntimeError.compile(describeMetalError(error))
        }
        guard let function = library.makeFunction(name: name) else {
            throw RuntimeError.compile("error: no kernel function named '\(name)' in the MSL source (functionNames: "
                + library.functionNames.joined(separator: ", ") + ")")
        }
        let state: any MTLComputePipelineState
        do {
            state = try mtl.makeComputePipelineState(function: function)
        } catch {
            throw RuntimeError.compile("kernel '\(name)': " + describeMetalError(error))
        }
        if state.threadExecutionWidth != MetalDevice.requiredSIMDWidth {
            throw RuntimeError.unavailable("kernel '\(name)': this GPU (\(mtl.name)) runs SIMD groups of \(state.threadExecutionWidth) "
                + "threads, but numba-metal's generated code assumes \(MetalDevice.requiredSIMDWidth) (Apple GPUs of family 7 and "
                + "later); run on an Apple-silicon Mac, or choose the CPU reference device (NUMBA_METAL_DEVICE=cpu)")
        }
        stats.add(DeviceStat.pipelinesCompiled.rawValue, 1)
        let p = MetalPipeline(device: self, name: name, state: state, bindings: KernelBindings(parameters), fromCache: false,
                              compileNs: nm_clock_ns() - t0)
        lock.locked { pipelines[key] = p }
        return p
    }

    /// A queue over a new MTLCommandQueue and MTLSharedEvent.
    func makeQueue() throws -> any Queue {
        try checkUsable()
        guard let q = mtl.makeCommandQueue(maxCommandBufferCount: MetalQueue.maxCommandBuffers), let event = mtl.makeSharedEvent() else {
            throw RuntimeError.outOfMemory("Metal could not create a command queue")
        }
        return MetalQueue(device: self, queue: q, event: event)
    }

    /// Sets NM_MATH_* on compile options. mathMode and mathFloatingPointFunctions exist from the macOS 15 SDK
    /// and from macOS 15 at run time. The SDK is tested by the version of its Metal module: 366 is the Metal
    /// framework of macOS 15 (numba_metal/tools/build.py's METAL_MODULE_SDK owns that fact); the simulated
    /// Metal API (no Metal module) declares the macOS 15 API. Elsewhere fastMathEnabled is all there is:
    /// relaxed falls back to safe, the mode that keeps its promise of Inf and NaN.
    static func setMathMode(_ mode: Int32, on options: MTLCompileOptions) {
        #if canImport(Metal, _version: 366) || !canImport(Metal)
        if #available(macOS 15.0, *), os(atLeast: 15) {
            switch mode {
            case NM_MATH_FAST:
                options.mathMode = .fast
                options.mathFloatingPointFunctions = .fast
            case NM_MATH_RELAXED:
                options.mathMode = .relaxed
                options.mathFloatingPointFunctions = .fast
            default:
                options.mathMode = .safe
                options.mathFloatingPointFunctions = .precise
            }
            return
        }
        #endif
        options.fastMathEnabled = mode == NM_MATH_FAST
    }

    /// The MSL version (times 100) a kernel that needs nothing newer compiles as: MSL 3.0 (macOS 13,
    /// numba-metal's oldest), whatever the OS's default. The compiler asks for more where code needs it
    /// (ModuleBuilder.language_version, e.g. 320 for coherent(device) memory).
    static let pinnedLanguageVersion: UInt32 = 300

    /// MSL version times 100 to MTLLanguageVersion.
    static func languageVersion(_ v: UInt32) throws -> MTLLanguageVersion {
        switch v {
        case 200: return .version2_0
        case 210: return .version2_1
        case 220: return .version2_2
        case 230: return .version2_3
        case 240: return .version2_4
        case 300: return .version3_0
        case 310:
            if #available(macOS 14.0, *), os(atLeast: 14) { return .version3_1 }
        case 320:
            #if canImport(Metal, _version: 366) || !canImport(Metal)  // the macOS 15 SDK (see setMathMode)
            if #available(macOS 15.0, *), os(atLeast: 15) { return .version3_2 }
            #endif
        case 400:
            // By raw value (major << 16 | minor): SDKs before macOS 26's have no .version4_0 case.
            if #available(macOS 26.0, *), os(atLeast: 26), let v = MTLLanguageVersion(rawValue: 4 << 16) { return v }
        default: break
        }
        throw RuntimeError.invalid("language_version \(v) is not an MSL version this Metal backend can request on this OS "
            + "(200, 210, 220, 230, 240, 300, 310 on macOS 14+, 320 on macOS 15+, 400 on macOS 26+, or 0 for MSL 3.0)")
    }
}

// MARK: - Pipelines

/// A compute pipeline state.
final class MetalPipeline: Pipeline {
    let device: any Device
    let kernelName: String
    let info: nm_pipeline_info
    let bindings: KernelBindings
    /// The pipeline state.
    let state: any MTLComputePipelineState

    /// A freshly compiled pipeline.
    init(device: any Device, name: String, state: any MTLComputePipelineState, bindings: KernelBindings, fromCache: Bool,
         compileNs: UInt64) {
        self.device = device
        kernelName = name
        self.state = state
        self.bindings = bindings
        var info = nm_pipeline_info()
        info.max_total_threads_per_threadgroup = UInt32(state.maxTotalThreadsPerThreadgroup)
        info.thread_execution_width = UInt32(state.threadExecutionWidth)
        info.static_threadgroup_memory = UInt64(state.staticThreadgroupMemoryLength)
        info.from_cache = fromCache ? 1 : 0
        info.compile_ns = compileNs
        self.info = info
    }

    /// The same pipeline state answered from this process's table.
    convenience init(reusing p: MetalPipeline, compileNs: UInt64) {
        self.init(device: p.device, name: p.kernelName, state: p.state, bindings: p.bindings, fromCache: true, compileNs: compileNs)
    }
}
