// SimulatedDevice.swift -- MTLDevice, MTLBuffer, MTLLibrary, MTLFunction and MTLComputePipelineState with
// Metal's documented behaviour: shared-storage buffers (zero-filled; bytesNoCopy needs page-aligned memory
// and length), compiles through the registered compute engine, and Objective-C's ownership rules
// (`new...` methods return +1 objects, so nothing here is autoreleased).
// Built only where Metal does not exist: on a Mac the backend uses Apple's Metal itself.
#if !canImport(Metal)
#if canImport(Glibc)
import Glibc
#endif
import Locks

/// The simulated GPU.
final class SimDevice: SimObject, MTLDevice, @unchecked Sendable {
    /// What it reports.
    let profile: MetalSimulation.Profile
    /// Compiles and runs kernels.
    let engine: any MetalSimulation.ComputeEngine
    /// Guards faults, hold and counters.
    let lock = Monitor()
    /// Faults for the next committed command buffers, in order (guarded by lock).
    private var faults: [MetalSimulation.Fault] = []
    /// Whether the GPU starts no command buffer (guarded by lock).
    private var held = false
    /// Uncompleted command buffers over all queues, the peak of one queue, failures (guarded by lock).
    private var uncompleted = 0, peak = 0, failed = 0
    /// The last makeLibrary's options (guarded by lock).
    private var lastCompile: MetalSimulation.CompileRequest? = nil
    /// Bytes of the live buffers whose memory it allocated (guarded by lock).
    private var allocatedBytes = 0
    /// Whether bytesNoCopy accepts only file-backed mapped memory (guarded by lock).
    private var strictNoCopy = false
    /// bytesNoCopy calls answered nil (guarded by lock).
    private var refusedNoCopy = 0
    /// Command buffers holding encoded work, not committed: when their first command was encoded; and the
    /// longest time one held work uncommitted before its commit (guarded by lock).
    private var pendingWork: [ObjectIdentifier: Double] = [:]
    private var longestUncommitted = 0.0

    init(profile: MetalSimulation.Profile, engine: any MetalSimulation.ComputeEngine) {
        self.profile = profile
        self.engine = engine
    }

    var name: String { profile.name }
    var maxThreadsPerThreadgroup: MTLSize { MTLSize(width: profile.maxThreadsPerThreadgroup, height: profile.maxThreadsPerThreadgroup, depth: 64) }
    var maxThreadgroupMemoryLength: Int { profile.maxThreadgroupMemoryLength }
    var hasUnifiedMemory: Bool { true }
    var recommendedMaxWorkingSetSize: UInt64 { profile.recommendedMaxWorkingSetSize }
    /// The memory of the buffers it allocated. Apple does not say whether bytesNoCopy memory counts (it is
    /// the caller's), so it does not here; other objects' memory is not modelled.
    var currentAllocatedSize: Int { lock.locked { allocatedBytes } }
    func supportsFamily(_ gpuFamily: MTLGPUFamily) -> Bool { profile.families.contains(gpuFamily) }

    func makeBuffer(length: Int, options: MTLResourceOptions) -> (any MTLBuffer)? {
        if length <= 0 {
            validationFailure("makeBuffer(length:options:): length (\(length)) must be greater than 0")
            return nil
        }
        if lock.update({ () -> Bool in defer { failNextAllocation = false }; return failNextAllocation }) {
            return nil    // as Metal answers when it cannot allocate the memory
        }
        let untracked = options.contains(.hazardTrackingModeUntracked) || lock.update { () -> Bool in
            defer { untrackedNext = false }
            return untrackedNext
        }
        return SimBuffer(device: self, length: length,
                         storageMode: options.contains(.storageModePrivate) ? .private : .shared,
                         hazardTrackingMode: untracked ? .untracked : .tracked,
                         zeroReadPagesAfter: lock.locked { zeroOutOfBoundsReads })
    }

    func makeBuffer(bytesNoCopy pointer: UnsafeMutableRawPointer, length: Int, options: MTLResourceOptions,
                    deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?) -> (any MTLBuffer)? {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        if Int(bitPattern: pointer) % page != 0 || length <= 0 || length % page != 0 {
            validationFailure("makeBuffer(bytesNoCopy:length:options:deallocator:): the pointer (\(pointer)) must be "
                + "page-aligned and the length (\(length)) a non-zero multiple of the page size (\(page))")
            return nil
        }
        if lock.locked({ strictNoCopy }) && !fileMapped(UInt(bitPattern: pointer), length: UInt(length)) {
            lock.locked { refusedNoCopy += 1 }
            return nil
        }
        return SimBuffer(device: self, wrapping: pointer, length: length, deallocator: deallocator)
    }

    func makeLibrary(source: String, options: MTLCompileOptions?) throws -> any MTLLibrary {
        let request = SimDevice.request(options ?? MTLCompileOptions())
        lock.locked { lastCompile = request }
        let newest = MetalSimulation.newestLanguageVersion(os: MetalSimulation.osMajor)
        if request.languageVersion > newest {
            throw MetalSimulation.CompileFailure(log: "error: MSL \(request.languageVersion / 100).\(request.languageVersion % 100 / 10) is "
                + "not supported on macOS \(MetalSimulation.osMajor) (it compiles up to \(newest / 100).\(newest % 100 / 10)) [simulated OS]")
        }
        let names = try engine.compileLibrary(source: source, request: request)
        return SimLibrary(device: self, source: source, request: request, functionNames: names)
    }

    func makeComputePipelineState(function: any MTLFunction) throws -> any MTLComputePipelineState {
        guard let f = function as? SimFunction, f.library.device === self else {
            validationFailure("makeComputePipelineState(function:): the function belongs to another device")
            throw MetalSimulation.CompileFailure(log: "the function belongs to another device")
        }
        let kernel = try engine.makeKernel(source: f.library.source, name: f.name, request: f.library.request)
        return SimPipelineState(device: self, kernel: kernel)
    }

    func makeCommandQueue() -> (any MTLCommandQueue)? { makeCommandQueue(maxCommandBufferCount: 64) }

    func makeCommandQueue(maxCommandBufferCount: Int) -> (any MTLCommandQueue)? {
        SimCommandQueue(device: self, maxCommandBufferCount: maxCommandBufferCount)
    }

    func makeSharedEvent() -> (any MTLSharedEvent)? { SimSharedEvent() }

    /// The engine's view of compile options (mathMode and the language version as numbers).
    static func request(_ options: MTLCompileOptions) -> MetalSimulation.CompileRequest {
        let v = options.languageVersion.rawValue
        return MetalSimulation.CompileRequest(mathMode: MTLMathMode(rawValue: options.mathModeRaw)!,
                                              mathFloatingPointFunctions: MTLMathFloatingPointFunctions(rawValue: options.functionsRaw)!,
                                              languageVersion: Int(v >> 16) * 100 + Int(v & 0xffff) * 10,
                                              languageVersionSet: options.languageVersionSet != nil)
    }

    // MARK: simulation state

    func inject(_ fault: MetalSimulation.Fault) { lock.locked { faults.append(fault) } }

    /// The fault for a command buffer being committed, if one was injected.
    func takeFault() -> MetalSimulation.Fault? {
        lock.locked { faults.isEmpty ? nil : faults.removeFirst() }
    }

    func setHeld(_ value: Bool) { lock.update { held = value } }

    func setStrictNoCopy(_ value: Bool) { lock.locked { strictNoCopy = value } }

    /// A command buffer's first command was encoded.
    func workEncoded(_ cb: ObjectIdentifier) { lock.locked { pendingWork[cb] = monotonicSeconds() } }

    /// A command buffer holding work was committed (or released uncommitted: committed false).
    func workLeft(_ cb: ObjectIdentifier, committed: Bool) {
        lock.locked {
            if let since = pendingWork.removeValue(forKey: cb), committed {
                longestUncommitted = max(longestUncommitted, monotonicSeconds() - since)
            }
        }
    }

    /// Command buffers holding work uncommitted now, and the longest any held it (those still waiting
    /// measured now), in seconds.
    func uncommittedWork() -> (count: Int, longest: Double) {
        lock.locked {
            let now = monotonicSeconds()
            return (pendingWork.count, pendingWork.values.reduce(longestUncommitted) { max($0, now - $1) })
        }
    }

    func refusedNoCopyCount() -> Int { lock.locked { refusedNoCopy } }

    /// Blocks a GPU thread while the device is held.
    func waitWhileHeld() { _ = lock.wait(until: { !held }) }

    /// A queue's uncompleted count changed by delta (its count is now `now`).
    func countUncompleted(_ delta: Int, queueNow now: Int) {
        lock.locked {
            uncompleted += delta
            peak = max(peak, now)
        }
    }

    func countFailure() { lock.locked { failed += 1 } }

    /// Whether the next buffer allocated is untracked whatever its options ask (guarded by lock).
    private var untrackedNext = false

    func setUntrackedNext() { lock.locked { untrackedNext = true } }

    /// Whether queues made from now on share one completion thread, and that thread (guarded by lock).
    private var shareCompletions = false
    private var sharedCompletions: SharedCompletions? = nil

    func setShareCompletions(_ value: Bool) { lock.locked { shareCompletions = value } }

    /// The completion thread a new queue uses instead of its own, in the shared-completion mode.
    func completionsForNewQueue() -> SharedCompletions? {
        lock.locked { () -> SharedCompletions? in
            guard shareCompletions else { return nil }
            if sharedCompletions == nil { sharedCompletions = SharedCompletions() }
            return sharedCompletions
        }
    }

    /// Whether buffers allocated from now on are followed by read-only pages of zeros (guarded by lock).
    private var zeroOutOfBoundsReads = false

    func setZeroOutOfBoundsReads(_ value: Bool) { lock.locked { zeroOutOfBoundsReads = value } }

    /// Whether the next makeBuffer(length:options:) answers nil (guarded by lock).
    private var failNextAllocation = false

    func setFailNextAllocation() { lock.locked { failNextAllocation = true } }

    /// Failures at which the penalty box closes (nil: never; guarded by lock).
    private var penaltyBoxAt: Int? = nil

    func setPenaltyBox(after failures: Int) { lock.locked { penaltyBoxAt = failures > 0 ? failed + failures : nil } }

    /// Whether the device refuses every command buffer now (accessRevoked).
    func inPenaltyBox() -> Bool { lock.locked { penaltyBoxAt.map { failed >= $0 } ?? false } }

    /// A buffer's own memory was allocated (bytes > 0) or freed (bytes < 0).
    func countAllocation(_ bytes: Int) { lock.locked { allocatedBytes += bytes } }

    func counters() -> (uncompleted: Int, peak: Int, failed: Int, lastCompile: MetalSimulation.CompileRequest?) {
        lock.locked { (uncompleted, peak, failed, lastCompile) }
    }
}

// MARK: - Buffers

/// Whether [address, address+length) lies in file-backed mappings of this process (/proc/self/maps: a
/// mapping with an inode), the memory the strict no-copy mode accepts.
func fileMapped(_ address: UInt, length: UInt) -> Bool {
    guard let f = fopen("/proc/self/maps", "r") else { return false }
    defer { fclose(f) }
    var next = address
    let end = address + length
    var line = [CChar](repeating: 0, count: 4096)
    while next < end, fgets(&line, Int32(line.count), f) != nil {
        let fields = String(cString: line).split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 5 else { continue }
        let range = fields[0].split(separator: "-")
        guard range.count == 2, let lo = UInt(range[0], radix: 16), let hi = UInt(range[1], radix: 16) else { continue }
        if lo <= next && next < hi {
            if fields[4] == "0" { return false }  // anonymous: malloc's heap or mmap chunks, or other anonymous memory
            next = hi
        }
    }
    return next >= end
}

/// A shared-storage buffer: zero-filled page-aligned memory, or the caller's memory (bytesNoCopy).
final class SimBuffer: SimObject, MTLBuffer, @unchecked Sendable {
    let device: SimDevice
    let length: Int
    let storageMode: MTLStorageMode
    let hazardTrackingMode: MTLHazardTrackingMode
    /// The memory.
    private let base: UnsafeMutableRawPointer
    /// For wrapped memory: what to call when the buffer is released; nil for owned memory.
    private let deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?
    private let owned: Bool

    /// Pages of zeros mapped read-only after a buffer allocated in the mode that models out-of-bounds reads
    /// that do not fault (MetalSimulation.setOutOfBoundsReadsReturnZero).
    static let zeroReadPages = 16

    /// The bytes mapped for the buffer when it was allocated in the out-of-bounds-read mode (0: malloc'd).
    private let mapped: Int

    init?(device: SimDevice, length: Int, storageMode: MTLStorageMode, hazardTrackingMode: MTLHazardTrackingMode,
          zeroReadPagesAfter: Bool = false) {
        var p: UnsafeMutableRawPointer? = nil
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        if zeroReadPagesAfter {
            // The buffer's pages, then pages of zeros a read may touch and a write faults on, as an Apple GPU
            // reads out of bounds without faulting (only writes, or unmapped pages, fault).
            let body = (length + page - 1) / page * page
            let total = body + SimBuffer.zeroReadPages * page
            guard let m = mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
                  m != MAP_FAILED else { return nil }
            if mprotect(m + body, total - body, PROT_READ) != 0 { munmap(m, total); return nil }
            p = m
            mapped = total
        } else {
            if posix_memalign(&p, page, length) != 0 || p == nil { return nil }   // Metal answers nil
            memset(p!, 0, length)
            mapped = 0
        }
        self.device = device
        self.length = length
        self.storageMode = storageMode
        self.hazardTrackingMode = hazardTrackingMode
        base = p!
        deallocator = nil
        owned = true
        device.countAllocation(length)
    }

    init(device: SimDevice, wrapping pointer: UnsafeMutableRawPointer, length: Int,
         deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?) {
        self.device = device
        self.length = length
        storageMode = .shared
        hazardTrackingMode = .tracked
        base = pointer
        self.deallocator = deallocator
        owned = false
        mapped = 0
    }

    deinit {
        if owned {
            if mapped > 0 { munmap(base, mapped) } else { free(base) }
            device.countAllocation(-length)
        } else {
            deallocator?(base, length)
        }
    }

    func contents() -> UnsafeMutableRawPointer { base }
}

// MARK: - Libraries and pipelines

/// A compiled source and the kernel functions it defines.
final class SimLibrary: SimObject, MTLLibrary, @unchecked Sendable {
    let device: SimDevice
    let source: String
    let request: MetalSimulation.CompileRequest
    let functionNames: [String]

    init(device: SimDevice, source: String, request: MetalSimulation.CompileRequest, functionNames: [String]) {
        self.device = device
        self.source = source
        self.request = request
        self.functionNames = functionNames
    }

    func makeFunction(name: String) -> (any MTLFunction)? {
        functionNames.contains(name) ? SimFunction(library: self, name: name) : nil
    }
}

/// A kernel function of a library.
final class SimFunction: SimObject, MTLFunction, @unchecked Sendable {
    let library: SimLibrary
    let name: String

    init(library: SimLibrary, name: String) {
        self.library = library
        self.name = name
    }
}

/// A compute pipeline: the engine's kernel and what Metal reports about it.
final class SimPipelineState: SimObject, MTLComputePipelineState, @unchecked Sendable {
    let device: SimDevice
    let kernel: MetalSimulation.Kernel

    init(device: SimDevice, kernel: MetalSimulation.Kernel) {
        self.device = device
        self.kernel = kernel
    }

    var maxTotalThreadsPerThreadgroup: Int { min(kernel.maxTotalThreadsPerThreadgroup, device.profile.maxThreadsPerThreadgroup) }
    var threadExecutionWidth: Int { device.profile.threadExecutionWidth }
    var staticThreadgroupMemoryLength: Int { kernel.staticThreadgroupMemoryLength }
}
#endif
