// SimulatedGPU.swift -- the simulated Metal device: the Metal backend (MetalDevice, MetalQueue) over
// MetalSimulator's model of Apple's Metal API, whose compute dispatches run on the CPU device's engine
// (this file registers it), so that the backend's own code runs, with real results, where Metal does not
// exist. It is never listed as a GPU: nm_device_count() leaves it out and only its own index opens it.
//
// NUMBA_METAL_SIM_GPU chooses what the simulated GPU reports: `apple8` (an A15/A16: family Apple8 without
// Mac2, so no 64-bit atomics), `apple9` (default; Apple family 9, SIMD
// width 32), `mac2` (an Intel Mac's AMD GPU: family Mac2 only, SIMD width 64: numba-metal must refuse it),
// `apple7-simd64` (family Apple7 but pipelines 64 wide, which no Apple GPU is: the pipeline check must
// refuse it).
import CPUEngine
#if canImport(Metal)

extension MetalDevice {
    /// The simulated device exists only where Metal does not.
    static func describeSimulated() throws -> nm_device_info { throw MetalDevice.noSimulation }

    /// The simulated device exists only where Metal does not.
    convenience init(simulated: ()) throws { throw MetalDevice.noSimulation }

    /// The simulated device exists only where Metal does not.
    func control(_ action: UInt32, _ value: UInt64) throws { throw MetalDevice.noSimulation }

    /// The simulated device exists only where Metal does not.
    func simulationStatistics() -> nm_sim_stats { nm_sim_stats() }

    /// A Metal GPU's watchdog is the OS's.
    func setSimulatedTimeLimit(_ nanoseconds: UInt64) throws {
        throw RuntimeError.unavailable("a Metal GPU has no per-dispatch time limit to set: macOS's GPU watchdog ends command "
            + "buffers that run too long")
    }

    /// None on a Metal GPU.
    var simulatedTimeLimit: UInt64 { 0 }

    /// On a Mac the `#available` check beside each call decides alone.
    static func os(atLeast major: Int) -> Bool { true }

    private static var noSimulation: RuntimeError {
        RuntimeError.unavailable("the simulated Metal device exists only in builds where Metal does not (Linux); use the Metal GPU")
    }
}

#else
#if canImport(Glibc)
import Glibc
#endif
import MetalSimulator

extension MetalDevice {
    /// Whether the OS is macOS `major` or later, beside an `#available` check of the same version (which
    /// the compiler needs): the simulated OS profile's answer (NUMBA_METAL_SIM_OS), so that the fallbacks for
    /// older macOS versions run on Linux.
    static func os(atLeast major: Int) -> Bool { MetalSimulation.osMajor >= major }

    /// The profile NUMBA_METAL_SIM_GPU asks for.
    static func simulatedProfile() throws -> MetalSimulation.Profile {
        guard MetalSimulation.osProfiles.contains(MetalSimulation.osMajor) else {
            throw RuntimeError.invalid("NUMBA_METAL_SIM_OS=\(environment("NUMBA_METAL_SIM_OS") ?? "") is not a simulated macOS "
                + "version; use one of " + MetalSimulation.osProfiles.map(String.init).joined(separator: ", "))
        }
        var profile: MetalSimulation.Profile
        switch environment("NUMBA_METAL_SIM_GPU") ?? "apple9" {
        case "apple9": profile = .apple9
        case "mac2": profile = .mac2
        case "apple8":
            // An A15/A16-class GPU (family Apple8 without Mac2): no 64-bit atomics (Metal feature set tables,
            // footnote 11: only Apple9, and Apple8 GPUs that are also Mac2, have ulong atomic max/min).
            profile = .apple9
            profile.name = "Simulated Apple GPU (family Apple8)"
            profile.families = [.apple7, .apple8, .metal3]
        case "apple7-simd64":
            profile = .apple9
            profile.name = "Simulated Apple GPU (family Apple7, 64-wide SIMD groups)"
            profile.families = [.apple7, .metal3]
            profile.threadExecutionWidth = 64
        case let other:
            throw RuntimeError.invalid("NUMBA_METAL_SIM_GPU=\(other) is not a simulated GPU; use apple9, apple8, mac2 or apple7-simd64")
        }
        // How long a command buffer may wait on an event before the simulated watchdog ends it (Apple documents
        // the timeout, not its length): NUMBA_METAL_SIM_EVENT_WAIT_TIMEOUT_MS, 1..600000, default 10 s.
        if let text = environment("NUMBA_METAL_SIM_EVENT_WAIT_TIMEOUT_MS"), !text.isEmpty {
            guard let ms = Int(text), (1...600_000).contains(ms) else {
                throw RuntimeError.invalid("NUMBA_METAL_SIM_EVENT_WAIT_TIMEOUT_MS=\(text) is not an integer from 1 to 600000")
            }
            profile.eventWaitTimeout = Double(ms) / 1000
        }
        return profile
    }

    /// The engine the simulated GPU computes with.
    private static let simulatedEngine = CPUComputeEngine()

    /// The simulated GPU of this process (made on first use, with the CPU engine registered).
    private static let simulatedGPU: Result<any MTLDevice, RuntimeError> = {
        do {
            let profile = try simulatedProfile()
            return .success(MetalSimulation.makeDevice(profile: profile, engine: simulatedEngine))
        } catch let e as RuntimeError {
            return .failure(e)
        } catch {
            return .failure(RuntimeError.internal("\(error)"))
        }
    }()

    /// The simulated GPU, refused as a real one would be when numba-metal cannot use it.
    private static func usableSimulatedGPU() throws -> any MTLDevice {
        let gpu = try simulatedGPU.get()
        guard isSupported(gpu) else {
            throw RuntimeError.unavailable("the simulated Metal device '\(gpu.name)' is not an Apple GPU of family 7 or later, which "
                + "numba-metal's generated code needs (32-wide SIMD groups, float atomics, SIMD-group matrices); numba-metal does "
                + "not offer such GPUs")
        }
        return gpu
    }

    /// The simulated device's description.
    static func describeSimulated() throws -> nm_device_info {
        describe(try usableSimulatedGPU(), kind: NM_DEVICE_METAL_SIM)
    }

    /// Opens the simulated device.
    convenience init(simulated: ()) throws {
        self.init(mtl: try MetalDevice.usableSimulatedGPU(), kind: NM_DEVICE_METAL_SIM)
    }

    /// nm_sim_control.
    func control(_ action: UInt32, _ value: UInt64) throws {
        switch Int32(action) {
        case NM_SIM_FAIL_NEXT_COMMAND_BUFFER: MetalSimulation.inject(.pageFault, into: mtl)
        case NM_SIM_WATCHDOG_NEXT_COMMAND_BUFFER: MetalSimulation.inject(.watchdog, into: mtl)
        case NM_SIM_HOLD_GPU: MetalSimulation.setHeld(value != 0, device: mtl)
        case NM_SIM_STRICT_NO_COPY: MetalSimulation.setStrictNoCopy(value != 0, device: mtl)
        case NM_SIM_PENALTY_BOX_AFTER: MetalSimulation.setPenaltyBox(after: Int(min(value, 1 << 30)), device: mtl)
        case NM_SIM_INTERACTIVITY_NEXT_COMMAND_BUFFER: MetalSimulation.inject(.impactingInteractivity, into: mtl)
        case NM_SIM_UNTRACKED_NEXT_BUFFER: MetalSimulation.allocateNextUntracked(device: mtl)
        case NM_SIM_FAIL_NEXT_ALLOCATION: MetalSimulation.failNextAllocation(device: mtl)
        case NM_SIM_FAIL_AT_DISPATCH_OF_NEXT_COMMAND_BUFFER:
            guard value >= 1 else {
                throw RuntimeError.invalid("nm_sim_control: NM_SIM_FAIL_AT_DISPATCH_OF_NEXT_COMMAND_BUFFER needs a dispatch number from 1")
            }
            MetalSimulation.inject(.pageFaultAtDispatch(Int(min(value, 1 << 30))), into: mtl)
        case NM_SIM_SHARED_COMPLETION_THREAD: MetalSimulation.shareCompletionThread(value != 0, device: mtl)
        case NM_SIM_OUT_OF_BOUNDS_READS_RETURN_ZERO: MetalSimulation.setOutOfBoundsReadsReturnZero(value != 0, device: mtl)
        default: throw RuntimeError.invalid("nm_sim_control: unknown action \(action)")
        }
    }

    /// The simulated GPU stops a dispatch running longer than this, as the CPU device does, and its command
    /// buffer fails as after a GPU watchdog timeout.
    func setSimulatedTimeLimit(_ nanoseconds: UInt64) throws { MetalDevice.simulatedEngine.limits.set(0, nanoseconds) }

    /// The simulated GPU's per-dispatch time limit (NUMBA_METAL_CPU_TIME_LIMIT_MS to begin with).
    var simulatedTimeLimit: UInt64 { MetalDevice.simulatedEngine.limits.get(0) }

    /// nm_sim_get_stats.
    func simulationStatistics() -> nm_sim_stats {
        let s = MetalSimulation.statistics(of: mtl)
        return nm_sim_stats(live_objects: UInt64(s.liveObjects), autoreleased_without_pool: UInt64(s.autoreleasedWithoutPool),
                            uncompleted_command_buffers: UInt64(s.uncompletedCommandBuffers),
                            peak_uncompleted_command_buffers: UInt64(s.peakUncompletedCommandBuffers),
                            failed_command_buffers: UInt64(s.failedCommandBuffers),
                            last_math_mode: UInt32(s.lastCompile?.mathMode.rawValue ?? 0),
                            last_math_functions: UInt32(s.lastCompile?.mathFloatingPointFunctions.rawValue ?? 0),
                            last_language_version: s.lastCompile.map { $0.languageVersionSet ? UInt32($0.languageVersion) : 0 } ?? 0,
                            uncommitted_work_command_buffers: UInt64(s.uncommittedWorkCommandBuffers),
                            longest_uncommitted_ns: UInt64(s.longestUncommittedSeconds * 1e9),
                            refused_no_copy_wraps: UInt64(s.refusedNoCopyWraps))
    }
}

/// The simulated GPU's compiler and executor: the CPU device's (clang with the Metal shim; threadgroups on
/// the worker pool, work-items as fibers).
final class CPUComputeEngine: MetalSimulation.ComputeEngine {
    /// Compiles and caches kernel objects (the same disk cache as the CPU device).
    private let compiler = KernelCompiler()
    /// Counter 0: the per-dispatch time limit in nanoseconds (0: none).
    let limits = Counters(count: 1)

    init() { limits.set(0, nm_cpu_default_time_limit_ns()) }

    /// Compiles every kernel function of the source, so that compile errors surface here, as from Metal's
    /// makeLibrary.
    func compileLibrary(source: String, request: MetalSimulation.CompileRequest) throws -> [String] {
        let names = kernelFunctionNames(source)
        for name in names { _ = try load(source: source, name: name, request: request) }
        return names
    }

    func makeKernel(source: String, name: String, request: MetalSimulation.CompileRequest) throws -> MetalSimulation.Kernel {
        let kernel = try load(source: source, name: name, request: request)
        let bindings = KernelBindings(kernel.analysis.parameters)
        let limit = try Self.pipelineLimit(source: source, declared: kernel.analysis.maxTotalThreadsPerThreadgroup)
        return MetalSimulation.Kernel(handle: kernel,
                                      maxTotalThreadsPerThreadgroup: limit,
                                      staticThreadgroupMemoryLength: Int(kernel.entry.pointee.static_threadgroup_bytes),
                                      bufferIndices: (0..<31).filter { bindings.bufferSlots & (1 << UInt32($0)) != 0 },
                                      threadgroupIndices: (0..<31).filter { bindings.threadgroupSlots & (1 << UInt32($0)) != 0 })
    }

    /// A simulated pipeline's maxTotalThreadsPerThreadgroup. Metal's depends on the pipeline's register use and
    /// can be below 1024 (SPIRV-Cross#837, wgpu#9176); a kernel declaring
    /// `[[max_total_threads_per_threadgroup(N)]]` gets N, or NUMBA_METAL_SIM_DECLARED_MAX_THREADS when that is
    /// lower (a kernel too heavy even when asked). Otherwise NUMBA_METAL_SIM_PIPELINE_MAX_THREADS when set, else
    /// a heuristic for heavy kernels: 512 for a kernel whose source carries emulated float64 (`struct nm_f64`),
    /// 1024 for the rest. Both variables are integers from 32 to 1024, read at each compile. None of these
    /// numbers was measured on a Mac.
    static func pipelineLimit(source: String, declared: UInt32?) throws -> Int {
        if let n = declared { return min(Int(n), try limitVariable("NUMBA_METAL_SIM_DECLARED_MAX_THREADS") ?? 1024) }
        if let n = try limitVariable("NUMBA_METAL_SIM_PIPELINE_MAX_THREADS") { return n }
        return source.contains("struct nm_f64") ? 512 : 1024
    }

    private static func limitVariable(_ name: String) throws -> Int? {
        guard let text = environment(name), !text.isEmpty else { return nil }
        guard let n = Int(text), (32...1024).contains(n) else {
            throw RuntimeError.invalid("\(name)=\(text) is not an integer from 32 to 1024; unset it or give a simulated "
                + "pipeline's maxTotalThreadsPerThreadgroup")
        }
        return n
    }

    func run(_ kernel: MetalSimulation.Kernel, _ dispatch: MetalSimulation.Dispatch) -> String? {
        runReporting(kernel, dispatch)?.message
    }

    /// The words of cpu_pool.c's message for a dispatch stopped at its time limit.
    static let timeLimitWords = "ran longer than its time limit"

    /// A dispatch stopped at the engine's time limit is the simulated GPU watchdog's (timeout), not a fault.
    func runReporting(_ kernel: MetalSimulation.Kernel, _ dispatch: MetalSimulation.Dispatch) -> MetalSimulation.RunFailure? {
        let loaded = kernel.handle as! LoadedKernel
        var launch = nm_launch()
        for (slot, address) in dispatch.buffers.enumerated() where address != nil {
            nm_launch_bind_buffer(&launch, UInt32(slot), address)
        }
        let g = dispatch.threadgroupsPerGrid, t = dispatch.threadsPerThreadgroup
        launch.groups = (UInt32(g.width), UInt32(g.height), UInt32(g.depth))
        launch.threads = (UInt32(t.width), UInt32(t.height), UInt32(t.depth))
        let lengths = dispatch.threadgroupMemoryLengths.map { UInt32($0) }
        var err = [CChar](repeating: 0, count: 1024)
        var control = nm_dispatch_control(tag: nil, id: 0, cancel_through: nil, time_limit_ns: limits.get(0))
        let failed = lengths.withUnsafeBufferPointer {
            nm_cpu_run_dispatch(loaded.entry, &launch, $0.baseAddress, UInt32($0.count), &control, &err, err.count)
        }
        if failed == NM_DISPATCH_OK { return nil }
        let message = String(cString: err)
        return MetalSimulation.RunFailure(timedOut: message.contains(CPUComputeEngine.timeLimitWords),
                                          message: "Execution of the command buffer was aborted due to an error during execution: "
                                              + message + " [simulated GPU]")
    }

    /// The kernel `name` compiled for the request's math mode and MSL version.
    private func load(source: String, name: String, request: MetalSimulation.CompileRequest) throws -> LoadedKernel {
        let mode: Int32
        switch request.mathMode {
        case .fast: mode = NM_MATH_FAST
        case .relaxed: mode = NM_MATH_RELAXED
        case .safe: mode = NM_MATH_SAFE
        }
        let options = nm_compile_options(fast_math: UInt32(mode), language_version: UInt32(request.languageVersion))
        do {
            return try compiler.compile(source: source, kernelName: name, options: options, abi: nil).kernel
        } catch let e as RuntimeError {
            throw MetalSimulation.CompileFailure(log: e.message)
        }
    }
}

/// The names of the kernel functions a source defines (`kernel void name(` or `[[kernel]] void name(`).
func kernelFunctionNames(_ source: String) -> [String] {
    let s = Array(source.utf8)
    let tokens = tokenize(s)
    func text(_ i: Int) -> String { String(decoding: s[tokens[i].start..<tokens[i].end], as: UTF8.self) }
    var names: [String] = []
    var i = 0
    while i < tokens.count {
        if tokens[i].kind == .identifier && text(i) == "kernel" {
            var j = i + 1
            while j < tokens.count && text(j) == "]" { j += 1 }  // [[kernel]]
            if j + 2 < tokens.count && text(j) == "void" && tokens[j + 1].kind == .identifier && text(j + 2) == "(" {
                names.append(text(j + 1))
            }
        }
        i += 1
    }
    return names
}
#endif
