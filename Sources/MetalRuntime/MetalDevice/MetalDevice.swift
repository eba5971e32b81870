// MetalDevice.swift -- the Metal backend: devices, shared-storage buffers and compute pipelines, written
// to Apple's Swift Metal API. On Linux it compiles against Sources/MetalSimulator, which mirrors every Apple
// declaration used here, and MTLCopyAllDevices() returns no device. Nothing here has run on a Mac yet:
// docs/limitations.md lists each assumption.
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

/// One Metal GPU.
final class MetalDevice: Device {
    /// The Metal device object.
    let mtl: any MTLDevice
    /// Guards `pipelines`.
    private let lock = Mutex()
    /// Pipelines compiled in this process, by options, kernel name and source.
    private var pipelines: [String: MetalPipeline] = [:]

    /// How many Metal devices exist.
    static func deviceCount() -> Int { MTLCopyAllDevices().count }

    /// The description of Metal device index.
    static func info(index: Int) throws -> nm_device_info {
        let all = MTLCopyAllDevices()
        guard index >= 0 && index < all.count else { throw RuntimeError.unavailable("no Metal device \(index)") }
        return describe(all[index])
    }

    /// Metal's answers, with the ABI's fixed limits (31 buffer slots, 4096 argument bytes).
    static func describe(_ d: any MTLDevice) -> nm_device_info {
        var info = nm_device_info()
        copy(d.name, intoTuple: &info.name)
        info.kind = NM_DEVICE_METAL
        info.max_threads_per_threadgroup = UInt32(d.maxThreadsPerThreadgroup.width)
        info.max_threadgroup_memory = UInt64(d.maxThreadgroupMemoryLength)
        info.simd_width = 32  // every pipeline's threadExecutionWidth is the real value (measured 32 on Apple GPUs)
        info.unified_memory = d.hasUnifiedMemory ? 1 : 0
        info.recommended_working_set = d.recommendedMaxWorkingSetSize
        info.page_size = hostPageSize
        info.max_buffer_slots = UInt32(NM_MAX_BUFFER_SLOTS)
        info.max_argument_bytes = UInt32(NM_MAX_ARGUMENT_BYTES)
        return info
    }

    /// Opens Metal device index.
    init(index: Int) throws {
        let all = MTLCopyAllDevices()
        guard index >= 0 && index < all.count else { throw RuntimeError.unavailable("no Metal device \(index)") }
        mtl = all[index]
        super.init(info: MetalDevice.describe(mtl))
    }

    /// A shared-storage MTLBuffer.
    override func makeBuffer(length: UInt64) throws -> Buffer {
        // Metal refuses zero-length buffers: allocate a small one and report length 0.
        guard let b = mtl.makeBuffer(length: Int(max(length, 16)), options: .storageModeShared) else {
            throw RuntimeError.outOfMemory("Metal could not allocate a buffer of \(length) bytes (device working set "
                + "\(info.recommended_working_set) bytes)")
        }
        return MetalBuffer(device: self, mtl: b, length: length)
    }

    /// An MTLBuffer over caller memory (bytesNoCopy).
    override func wrapBuffer(host: UnsafeMutableRawPointer, length: UInt64) throws -> Buffer {
        try checkWrappable(host: host, length: length)
        // bytesNoCopy needs a page-aligned length too; the rest of the last page is mapped (same page).
        let mapped = (max(length, 1) + info.page_size - 1) / info.page_size * info.page_size
        guard let b = mtl.makeBuffer(bytesNoCopy: host, length: Int(mapped), options: .storageModeShared, deallocator: nil) else {
            throw RuntimeError.outOfMemory("Metal could not wrap \(length) bytes of host memory at \(host)")
        }
        return MetalBuffer(device: self, mtl: b, length: length)
    }

    /// makeLibrary + makeFunction + makeComputePipelineState, memoised per process.
    override func makePipeline(source: String, name: String, options: nm_compile_options, abi: KernelABI?) throws -> Pipeline {
        let t0 = nm_clock_ns()
        let key = "\(options.fast_math)/\(options.language_version)/\(name)/" + source
        if let p = lock.locked({ pipelines[key] }) {
            stats.add(Stat.pipelinesFromCache.rawValue, 1)
            return MetalPipeline(reusing: p, compileNs: nm_clock_ns() - t0)
        }
        let compileOptions = MTLCompileOptions()
        if #available(macOS 15.0, iOS 18.0, *) {
            compileOptions.mathMode = options.fast_math != 0 ? .fast : .safe
            compileOptions.mathFloatingPointFunctions = options.fast_math != 0 ? .fast : .precise
        } else {
            compileOptions.fastMathEnabled = options.fast_math != 0
        }
        if options.language_version != 0 {
            compileOptions.languageVersion = try MetalDevice.languageVersion(options.language_version)
        }
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
        stats.add(Stat.pipelinesCompiled.rawValue, 1)
        let p = MetalPipeline(device: self, name: name, state: state, fromCache: false, compileNs: nm_clock_ns() - t0)
        lock.locked { pipelines[key] = p }
        return p
    }

    /// A queue over a new MTLCommandQueue and MTLSharedEvent.
    override func makeQueue() throws -> Queue {
        guard let q = mtl.makeCommandQueue(), let event = mtl.makeSharedEvent() else {
            throw RuntimeError.outOfMemory("Metal could not create a command queue")
        }
        return MetalQueue(device: self, queue: q, event: event)
    }

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
            if #available(macOS 14.0, iOS 17.0, *) { return .version3_1 }
        case 320:
            if #available(macOS 15.0, iOS 18.0, *) { return .version3_2 }
        default: break
        }
        throw RuntimeError.invalid("language_version \(v) is not an MSL version this Metal backend can request on this OS "
            + "(200, 210, 220, 230, 240, 300, 310 on macOS 14+, 320 on macOS 15+, or 0 for the newest)")
    }
}

// MARK: - Buffers

/// A shared-storage MTLBuffer.
final class MetalBuffer: Buffer {
    /// The Metal buffer.
    let mtl: any MTLBuffer

    /// Wraps a Metal buffer whose contents() is the host pointer.
    init(device: Device, mtl: any MTLBuffer, length: UInt64) {
        self.mtl = mtl
        super.init(device: device, contents: mtl.contents(), length: length)
    }
}

// MARK: - Pipelines

/// A compute pipeline state.
final class MetalPipeline: Pipeline {
    /// The pipeline state.
    let state: any MTLComputePipelineState

    /// A freshly compiled pipeline.
    init(device: Device, name: String, state: any MTLComputePipelineState, fromCache: Bool, compileNs: UInt64) {
        self.state = state
        var info = nm_pipeline_info()
        info.max_total_threads_per_threadgroup = UInt32(state.maxTotalThreadsPerThreadgroup)
        info.thread_execution_width = UInt32(state.threadExecutionWidth)
        info.static_threadgroup_memory = UInt64(state.staticThreadgroupMemoryLength)
        info.from_cache = fromCache ? 1 : 0
        info.compile_ns = compileNs
        super.init(device: device, kernelName: name, info: info)
    }

    /// The same pipeline state answered from this process's table.
    convenience init(reusing p: MetalPipeline, compileNs: UInt64) {
        self.init(device: p.device, name: p.kernelName, state: p.state, fromCache: true, compileNs: compileNs)
    }
}
