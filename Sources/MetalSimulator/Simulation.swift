// Simulation.swift -- the part of this module that is not Apple's: how a host makes a simulated GPU,
// gives it a compute engine (the simulator does not compile or run MSL itself; numba-metal's runtime
// registers its CPU engine, so that dispatches produce real results without this module depending on the
// runtime), injects faults, and reads the simulation's counters.
// Built only where Metal does not exist: on a Mac the backend uses Apple's Metal itself.
#if !canImport(Metal)
#if canImport(Glibc)
import Glibc
#endif

extension MetalSimulation.ComputeEngine {
    /// An engine that does not tell time limits apart: every failure is a fault.
    public func runReporting(_ kernel: MetalSimulation.Kernel, _ dispatch: MetalSimulation.Dispatch) -> MetalSimulation.RunFailure? {
        run(kernel, dispatch).map { MetalSimulation.RunFailure(timedOut: false, message: $0) }
    }
}

/// The simulation's own API (everything else in this module is Apple's Metal API).
public enum MetalSimulation {
    // MARK: compute engine

    /// What makeLibrary asks the engine to compile with.
    public struct CompileRequest {
        /// The math mode (MTLCompileOptions.mathMode).
        public let mathMode: MTLMathMode
        /// The FP32 function implementations.
        public let mathFloatingPointFunctions: MTLMathFloatingPointFunctions
        /// The MSL version times 100 (e.g. 320).
        public let languageVersion: Int
        /// Whether the host set MTLCompileOptions.languageVersion (false: the OS default was compiled).
        public let languageVersionSet: Bool
    }

    // MARK: OS profiles

    /// The macOS major version the simulation behaves as (NUMBA_METAL_SIM_OS: 13, 14, 15 or 26; default
    /// 15): the hosts' `#available` checks (MetalDevice.os(atLeast:)) answer for it, the compiler's default
    /// MSL version is that OS's, and it refuses MSL versions newer than that OS compiles.
    public static let osMajor: Int = {
        guard let p = getenv("NUMBA_METAL_SIM_OS") else { return 15 }
        return Int(String(cString: p)) ?? 0
    }()

    /// The simulated OSes.
    public static let osProfiles = [13, 14, 15, 26]

    /// The newest MSL version (times 100) each simulated OS compiles, which is also its default.
    public static func newestLanguageVersion(os: Int) -> Int {
        switch os {
        case ..<14: return 300
        case 14: return 310
        case 15: return 320
        default: return 400
        }
    }

    /// MTLCompileOptions.languageVersion's default on the simulated OS.
    static var defaultLanguageVersion: MTLLanguageVersion {
        let v = newestLanguageVersion(os: osMajor)
        return MTLLanguageVersion(rawValue: UInt(v / 100) << 16 | UInt(v % 100 / 10))!
    }

    /// A compiled kernel function, as the engine describes it (the reflection Metal has of a pipeline).
    public struct Kernel {
        /// The engine's object.
        public let handle: AnyObject
        /// Threads per threadgroup the kernel allows.
        public let maxTotalThreadsPerThreadgroup: Int
        /// Bytes of threadgroup variables declared in the kernel.
        public let staticThreadgroupMemoryLength: Int
        /// The [[buffer(i)]] indices the kernel declares.
        public let bufferIndices: [Int]
        /// The [[threadgroup(i)]] indices the kernel declares.
        public let threadgroupIndices: [Int]

        /// Describes a kernel.
        public init(handle: AnyObject, maxTotalThreadsPerThreadgroup: Int, staticThreadgroupMemoryLength: Int,
                    bufferIndices: [Int], threadgroupIndices: [Int]) {
            self.handle = handle
            self.maxTotalThreadsPerThreadgroup = maxTotalThreadsPerThreadgroup
            self.staticThreadgroupMemoryLength = staticThreadgroupMemoryLength
            self.bufferIndices = bufferIndices
            self.threadgroupIndices = threadgroupIndices
        }
    }

    /// One dispatch for the engine to run: the bound address of every [[buffer(i)]] and the length of
    /// every [[threadgroup(i)]] (31 entries each), and the grid.
    public struct Dispatch {
        /// Address bound to [[buffer(i)]] (buffer contents plus offset, or the setBytes copy).
        public let buffers: [UnsafeMutableRawPointer?]
        /// Length of [[threadgroup(i)]] in bytes (0: not set).
        public let threadgroupMemoryLengths: [Int]
        /// Threadgroups per grid.
        public let threadgroupsPerGrid: MTLSize
        /// Threads per threadgroup.
        public let threadsPerThreadgroup: MTLSize
    }

    /// A compile failure: its log is what Metal's compiler would report.
    public struct CompileFailure: Error, CustomStringConvertible {
        /// The compiler's log.
        public let log: String
        /// A failure with its log.
        public init(log: String) { self.log = log }
        /// The log.
        public var description: String { log }
    }

    /// Compiles MSL and runs compute dispatches for a simulated GPU.
    public protocol ComputeEngine: AnyObject {
        /// Compiles source; returns the names of its kernel functions. Throws CompileFailure.
        func compileLibrary(source: String, request: CompileRequest) throws -> [String]
        /// The kernel function `name` of a source compileLibrary accepted. Throws CompileFailure.
        func makeKernel(source: String, name: String, request: CompileRequest) throws -> Kernel
        /// Runs one dispatch to completion; nil, or what went wrong (a fault), in words.
        func run(_ kernel: Kernel, _ dispatch: Dispatch) -> String?
        /// As run, and whether the failure was the engine's time limit (the GPU watchdog ending a running
        /// dispatch: MTLCommandBufferError.timeout) rather than a fault (default: run's, as a fault).
        func runReporting(_ kernel: Kernel, _ dispatch: Dispatch) -> RunFailure?
    }

    /// How a dispatch failed.
    public struct RunFailure {
        /// Stopped for running too long (a watchdog), not a fault.
        public let timedOut: Bool
        /// What went wrong, in words.
        public let message: String
        /// A failure.
        public init(timedOut: Bool, message: String) {
            self.timedOut = timedOut
            self.message = message
        }
    }

    // MARK: devices

    /// What the simulated GPU reports about itself.
    public struct Profile {
        /// MTLDevice.name.
        public var name: String
        /// The families supportsFamily(_:) answers true for.
        public var families: [MTLGPUFamily]
        /// Every pipeline's threadExecutionWidth.
        public var threadExecutionWidth: Int
        /// MTLDevice.maxThreadsPerThreadgroup.width (and a pipeline's ceiling).
        public var maxThreadsPerThreadgroup: Int
        /// MTLDevice.maxThreadgroupMemoryLength.
        public var maxThreadgroupMemoryLength: Int
        /// MTLDevice.recommendedMaxWorkingSetSize.
        public var recommendedMaxWorkingSetSize: UInt64
        /// How long a command buffer may wait for a shared event before the watchdog ends it with
        /// MTLCommandBufferError.timeout (Apple documents the timeout, not its length).
        public var eventWaitTimeout: Double

        /// A GPU of Apple family 9 (an M3-class Mac).
        public static let apple9 = Profile(name: "Simulated Apple GPU (family Apple9)", families: [.apple7, .apple8, .apple9, .metal3],
                                           threadExecutionWidth: 32, maxThreadsPerThreadgroup: 1024,
                                           maxThreadgroupMemoryLength: 32768, recommendedMaxWorkingSetSize: 8 << 30,
                                           eventWaitTimeout: 10)
        /// An AMD GPU of an Intel Mac: Mac2 family only, SIMD groups of 64.
        public static let mac2 = Profile(name: "Simulated AMD Radeon Pro (family Mac2)", families: [.mac2, .metal3],
                                         threadExecutionWidth: 64, maxThreadsPerThreadgroup: 1024,
                                         maxThreadgroupMemoryLength: 65536, recommendedMaxWorkingSetSize: 8 << 30,
                                         eventWaitTimeout: 10)
    }

    /// A simulated GPU running compute through engine. It is never listed by MTLCopyAllDevices().
    public static func makeDevice(profile: Profile, engine: any ComputeEngine) -> any MTLDevice {
        SimDevice(profile: profile, engine: engine)
    }

    // MARK: faults

    /// A fault to inject into a device's next committed command buffer.
    public enum Fault {
        /// The command buffer fails with MTLCommandBufferError.pageFault before any command runs.
        case pageFault
        /// The GPU watchdog ends it with MTLCommandBufferError.timeout before any command runs.
        case watchdog
        /// The system refuses it with accessRevoked (4): "too many timeouts or hangs" (the penalty box).
        case accessRevoked
        /// It fails with code 14 (kIOGPUCommandBufferCallbackErrorImpactingInteractivity), which
        /// MTLCommandBufferError.Code has no case for.
        case impactingInteractivity
        /// Its commands run in order until its Nth dispatch (1-based), which faults with pageFault: what the
        /// earlier commands wrote stays written, the rest (encoded signals included) never runs. A command
        /// buffer with fewer dispatches completes.
        case pageFaultAtDispatch(Int)
    }

    /// Makes the next command buffer committed on any queue of device fail with fault. Its encoded event
    /// signals never run, as on a GPU.
    public static func inject(_ fault: Fault, into device: any MTLDevice) {
        (device as! SimDevice).inject(fault)
    }

    /// The penalty box: once `failures` more command buffers of device have failed (0: never), every
    /// command buffer committed after that fails with accessRevoked, as macOS answers a process it
    /// blames for too many GPU errors; for the rest of the process, as on a Mac.
    public static func setPenaltyBox(after failures: Int, device: any MTLDevice) {
        (device as! SimDevice).setPenaltyBox(after: failures)
    }

    /// The next buffer device allocates is untracked (MTLHazardTrackingMode.untracked) whatever its options
    /// ask, as a library that orders its own work allocates buffers it then exports (DLPack kDLMetal).
    public static func allocateNextUntracked(device: any MTLDevice) {
        (device as! SimDevice).setUntrackedNext()
    }

    /// The next makeBuffer(length:options:) of device answers nil, as Metal does when it cannot allocate.
    public static func failNextAllocation(device: any MTLDevice) {
        (device as! SimDevice).setFailNextAllocation()
    }

    /// While on, buffers device allocates are followed by SimBuffer.zeroReadPages read-only pages of zeros: a
    /// kernel's read up to that far past a buffer's end answers 0 without a fault and a write there faults, as an
    /// Apple GPU reads out of bounds without reporting it (only writes or unmapped pages fault).
    public static func setOutOfBoundsReadsReturnZero(_ on: Bool, device: any MTLDevice) {
        (device as! SimDevice).setZeroOutOfBoundsReads(on)
    }

    /// While on, queues device makes from then on share one completion thread, which calls their completed
    /// handlers in the order the GPU finished their command buffers, across queues (as Metal's completion
    /// threads may be shared); off: each queue has its own (the default).
    public static func shareCompletionThread(_ on: Bool, device: any MTLDevice) {
        (device as! SimDevice).setShareCompletions(on)
    }

    /// While held, the device's GPU starts no command buffer (committed ones wait).
    public static func setHeld(_ held: Bool, device: any MTLDevice) {
        (device as! SimDevice).setHeld(held)
    }

    /// Strict no-copy mode: makeBuffer(bytesNoCopy:) answers nil unless the memory lies in file-backed
    /// mappings of the process (/proc/self/maps), modelling the reports that Metal refuses malloc'd memory
    /// (anonymous mappings, the kind malloc uses, are refused too: this model cannot tell them apart).
    public static func setStrictNoCopy(_ strict: Bool, device: any MTLDevice) {
        (device as! SimDevice).setStrictNoCopy(strict)
    }

    // MARK: statistics

    /// Counters of the simulation.
    public struct Statistics {
        /// Simulated Metal objects alive in the process.
        public let liveObjects: Int
        /// Objects autoreleased where no pool was in place, in the process (each one leaked until its thread exits).
        public let autoreleasedWithoutPool: Int
        /// Command buffers of device created and not yet completed.
        public let uncompletedCommandBuffers: Int
        /// The most uncompleted command buffers one queue of device had at once.
        public let peakUncompletedCommandBuffers: Int
        /// Command buffers of device that ended with an error.
        public let failedCommandBuffers: Int
        /// The compile options of device's last makeLibrary, as the compiler received them.
        public let lastCompile: CompileRequest?
        /// Command buffers of device holding encoded work, not committed.
        public let uncommittedWorkCommandBuffers: Int
        /// The longest a command buffer of device held encoded work uncommitted, in seconds (the ones still
        /// uncommitted measured now): time the GPU could have worked and did not.
        public let longestUncommittedSeconds: Double
        /// makeBuffer(bytesNoCopy:) calls on device answered nil.
        public let refusedNoCopyWraps: Int
    }

    /// The counters, for device.
    public static func statistics(of device: any MTLDevice) -> Statistics {
        let (live, leaked) = SimulationCounters.lock.locked {
            (SimulationCounters.liveObjects, SimulationCounters.autoreleasedWithoutPool)
        }
        let sim = device as! SimDevice
        let d = sim.counters(), pending = sim.uncommittedWork()
        return Statistics(liveObjects: live, autoreleasedWithoutPool: leaked, uncompletedCommandBuffers: d.uncompleted,
                          peakUncompletedCommandBuffers: d.peak, failedCommandBuffers: d.failed, lastCompile: d.lastCompile,
                          uncommittedWorkCommandBuffers: pending.count, longestUncommittedSeconds: pending.longest,
                          refusedNoCopyWraps: sim.refusedNoCopyCount())
    }

    /// Whether device is a simulated one.
    public static func isSimulated(_ device: any MTLDevice) -> Bool { device is SimDevice }

    /// Receives validation failures instead of stopping the process (tests of the simulator itself).
    nonisolated(unsafe) public static var validationHandler: ((String) -> Void)? = nil
}
#endif
