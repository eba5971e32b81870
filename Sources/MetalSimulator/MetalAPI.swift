// MetalAPI.swift -- Apple's Metal declarations as the numba-metal Metal backend uses them: Apple's Swift
// names, argument labels, types and `@available` annotations (developer.apple.com/documentation/metal), so
// that the backend type-checks here as on a Mac, and numba_metal/tools/build.py's availability check can read
// the macOS version each symbol appeared in. The behaviour behind the protocols is in the other files of
// this module. Keep it to what the backend uses; add a declaration only after checking it against Apple's
// documentation.
//
// Known differences from Apple's SDK: Apple's protocols refine NSObjectProtocol (and some Sendable), these
// refine AnyObject; MTLCommandBufferError is a plain Error, not a bridged NSError; iOS and other platforms'
// annotations are omitted.
// Built only where Metal does not exist: on a Mac the backend uses Apple's Metal itself.
#if !canImport(Metal)
// MARK: - Basic types

/// Seconds on the host clock (CoreFoundation's CFTimeInterval).
public typealias CFTimeInterval = Double

/// The dimensions of a grid, threadgroup or region.
@available(macOS 10.11, *)
public struct MTLSize {
    /// The width (x).
    public var width: Int
    /// The height (y).
    public var height: Int
    /// The depth (z).
    public var depth: Int

    /// A size from its three dimensions.
    public init(width: Int, height: Int, depth: Int) {
        self.width = width
        self.height = height
        self.depth = depth
    }
}

/// Options for creating resources (storage mode, cache mode, hazard tracking).
@available(macOS 10.11, *)
public struct MTLResourceOptions: OptionSet, Sendable {
    /// The raw bits.
    public let rawValue: UInt
    /// Creates options from raw bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// CPU and GPU share the memory (the default on Apple silicon).
    public static let storageModeShared = MTLResourceOptions([])
    /// GPU-only memory.
    public static let storageModePrivate = MTLResourceOptions(rawValue: 2 << 4)
    /// Metal ignores memory hazards for the resource: its user orders access with fences or events.
    @available(macOS 10.13, *)
    public static let hazardTrackingModeUntracked = MTLResourceOptions(rawValue: 1 << 8)
    /// Metal orders access to the resource (the default of buffers).
    @available(macOS 10.15, *)
    public static let hazardTrackingModeTracked = MTLResourceOptions(rawValue: 2 << 8)
}

/// Whether Metal tracks and orders access to a resource (MTLResource.hazardTrackingMode).
@available(macOS 10.15, *)
public enum MTLHazardTrackingMode: UInt, Sendable {
    /// The default (tracked, for buffers).
    case `default` = 0
    /// Not tracked: the user orders access.
    case untracked = 1
    /// Tracked.
    case tracked = 2
}

/// Where a resource's memory lives and who may access it (MTLResource.storageMode).
@available(macOS 10.11, *)
public enum MTLStorageMode: UInt, Sendable {
    /// CPU and GPU share the memory.
    case shared = 0
    /// Separate CPU and GPU copies kept in sync explicitly (Intel Macs).
    case managed = 1
    /// GPU-only memory: contents() has no meaning.
    case `private` = 2
    /// Tile memory of render passes.
    case memoryless = 3
}

/// Families of GPU features (supportsFamily(_:)).
@available(macOS 10.15, *)
public enum MTLGPUFamily: Int, Sendable {
    /// Apple family 7: A14 and M1 GPUs.
    case apple7 = 1007
    /// Apple family 8: A15, A16 and M2 GPUs.
    case apple8 = 1008
    /// Apple family 9: A17, M3 and M4 GPUs.
    case apple9 = 1009
    /// Mac family 2 (the Intel and AMD GPUs of Intel Macs among them).
    case mac2 = 2002
    /// Metal 3 features.
    case metal3 = 5001
}

/// Floating-point optimisation modes of the Metal compiler.
@available(macOS 15.0, *)
public enum MTLMathMode: Int, Sendable {
    /// No unsafe floating-point optimisations.
    case safe = 0
    /// Aggressive optimisations that keep Inf/NaN (Apple silicon default).
    case relaxed = 1
    /// Aggressive optimisations (Intel/AMD default).
    case fast = 2
}

/// Which FP32 math function implementations Metal uses.
@available(macOS 15.0, *)
public enum MTLMathFloatingPointFunctions: Int, Sendable {
    /// The fast versions (default).
    case fast = 0
    /// The precise versions.
    case precise = 1
}

/// Metal Shading Language versions (raw value: major << 16 | minor).
@available(macOS 10.11, *)
public enum MTLLanguageVersion: UInt, Sendable {
    /// MSL 1.1.
    case version1_1 = 65537
    /// MSL 1.2.
    @available(macOS 10.12, *)
    case version1_2 = 65538
    /// MSL 2.0.
    @available(macOS 10.13, *)
    case version2_0 = 131072
    /// MSL 2.1.
    @available(macOS 10.14, *)
    case version2_1 = 131073
    /// MSL 2.2.
    @available(macOS 10.15, *)
    case version2_2 = 131074
    /// MSL 2.3.
    @available(macOS 11.0, *)
    case version2_3 = 131075
    /// MSL 2.4.
    @available(macOS 12.0, *)
    case version2_4 = 131076
    /// MSL 3.0.
    @available(macOS 13.0, *)
    case version3_0 = 196608
    /// MSL 3.1.
    @available(macOS 14.0, *)
    case version3_1 = 196609
    /// MSL 3.2.
    @available(macOS 15.0, *)
    case version3_2 = 196610
    /// MSL 4.0.
    @available(macOS 26.0, *)
    case version4_0 = 262144
}

/// The states a command buffer passes through.
@available(macOS 10.11, *)
public enum MTLCommandBufferStatus: UInt, Sendable {
    /// Not yet enqueued.
    case notEnqueued = 0
    /// Enqueued.
    case enqueued = 1
    /// Committed.
    case committed = 2
    /// Scheduled on the GPU.
    case scheduled = 3
    /// Finished successfully.
    case completed = 4
    /// Finished with an error (see `error`).
    case error = 5
}

/// Why the GPU did not finish a command buffer.
@available(macOS 10.11, *)
public struct MTLCommandBufferError: Error, CustomStringConvertible {
    /// The error codes (Apple's NS_ERROR_ENUM; `blacklisted` is the former name of 4). Metal also reports
    /// codes this enum has no case for (14, kIOGPUCommandBufferCallbackErrorImpactingInteractivity):
    /// read `errorCode`, as on a Mac `(error as NSError).code`.
    public enum Code: UInt, Sendable {
        /// No error.
        case none = 0
        /// An internal error.
        case `internal` = 1
        /// The system interrupted and ended the command buffer: it ran too long, or timed out waiting for an event.
        case timeout = 2
        /// A page fault the GPU cannot service (out-of-bounds access).
        case pageFault = 3
        /// The process lost access to the GPU after too many timeouts or hangs.
        case accessRevoked = 4
        /// The process may not use the GPU.
        case notPermitted = 7
        /// Not enough memory.
        case outOfMemory = 8
        /// A resource was invalid (released early).
        case invalidResource = 9
        /// Memoryless render target limits.
        case memoryless = 10
        /// The GPU was removed.
        @available(macOS 10.13, *)
        case deviceRemoved = 11
        /// A stack overflow in a function called through a function pointer.
        @available(macOS 12.0, *)
        case stackOverflow = 12
    }
    /// The raw code, which may be one Code has no case for (NSError.code on a Mac).
    public let errorCode: Int
    /// This error's code (.internal for a raw code Code has no case for; read errorCode).
    public var code: Code { Code(rawValue: UInt(max(0, errorCode))) ?? .internal }
    /// What happened, in words.
    public let description: String
    /// NSError.userInfo: MTLCommandBufferEncoderInfoErrorKey holds the encoders' execution status when
    /// the command buffer was made with errorOptions .encoderExecutionStatus.
    public let userInfo: [String: Any]
    /// The object behind the error (Apple's NSError; here a counted, autoreleased simulator object).
    let storage: AnyObject?

    /// An error with a raw code and description (simulator).
    init(errorCode: Int, description: String, userInfo: [String: Any] = [:], storage: AnyObject?) {
        self.errorCode = errorCode
        self.description = description
        self.userInfo = userInfo
        self.storage = storage
    }

    /// The command buffer timed out.
    public static var timeout: Code { .timeout }
    /// The command buffer caused a page fault.
    public static var pageFault: Code { .pageFault }
    /// An internal error.
    public static var `internal`: Code { .internal }
    /// The process lost access to the GPU.
    public static var accessRevoked: Code { .accessRevoked }
}

/// The key of a command buffer error's userInfo that holds [MTLCommandBufferEncoderInfo].
@available(macOS 11.0, *)
public let MTLCommandBufferEncoderInfoErrorKey = "MTLCommandBufferEncoderInfoErrorKey"

/// What extra error information a command buffer records.
@available(macOS 11.0, *)
public struct MTLCommandBufferErrorOption: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// Record each encoder's execution status (MTLCommandBufferEncoderInfo in the error's userInfo).
    public static let encoderExecutionStatus = MTLCommandBufferErrorOption(rawValue: 1)
}

/// How a command buffer is made (makeCommandBuffer(descriptor:)).
@available(macOS 11.0, *)
open class MTLCommandBufferDescriptor {
    /// Default options.
    public init() {}
    /// Extra error information to record ("useful during development").
    open var errorOptions: MTLCommandBufferErrorOption = []
}

/// An encoder's state when its command buffer failed.
@available(macOS 11.0, *)
public enum MTLCommandEncoderErrorState: Int, Sendable {
    /// Unknown.
    case unknown = 0
    /// Its commands completed.
    case completed = 1
    /// Its commands were affected by another encoder's error.
    case affected = 2
    /// Its commands did not run.
    case pending = 3
    /// Its commands caused the error.
    case faulted = 4
}

/// One encoder's execution status in a failed command buffer.
@available(macOS 11.0, *)
public protocol MTLCommandBufferEncoderInfo: AnyObject {
    /// The encoder's label.
    var label: String { get }
    /// The debug signposts (debug groups) Metal recorded as the GPU ran the encoder's commands.
    var debugSignposts: [String] { get }
    /// The encoder's state.
    var errorState: MTLCommandEncoderErrorState { get }
}

/// Compiler options for makeLibrary(source:options:).
@available(macOS 10.11, *)
open class MTLCompileOptions {
    /// Default options.
    public init() {}
    /// Floating-point optimisation mode (default on Apple silicon: relaxed).
    @available(macOS 15.0, *)
    open var mathMode: MTLMathMode {
        get { MTLMathMode(rawValue: mathModeRaw)! }
        set { mathModeRaw = newValue.rawValue }
    }
    /// FP32 math function implementations (default: fast).
    @available(macOS 15.0, *)
    open var mathFloatingPointFunctions: MTLMathFloatingPointFunctions {
        get { MTLMathFloatingPointFunctions(rawValue: functionsRaw)! }
        set { functionsRaw = newValue.rawValue }
    }
    /// Switch between fast and safe/precise math: true sets .fast and .fast, false .safe and .precise.
    @available(macOS, introduced: 10.11, deprecated: 15.0, message: "Use mathMode instead")
    open var fastMathEnabled: Bool {
        get { mathModeRaw != 0 }
        set {
            mathModeRaw = newValue ? 2 : 0
            functionsRaw = newValue ? 0 : 1
        }
    }
    /// The MSL version to compile as (default: "the most recent language version", the simulated OS's:
    /// MetalSimulation.osMajor).
    open var languageVersion: MTLLanguageVersion {
        get { languageVersionSet ?? MetalSimulation.defaultLanguageVersion }
        set { languageVersionSet = newValue }
    }

    /// The version set, or nil: the OS default (the simulator records which).
    var languageVersionSet: MTLLanguageVersion? = nil

    /// MTLMathMode's raw value, readable at any availability (the simulator reads it).
    var mathModeRaw = 1
    /// MTLMathFloatingPointFunctions' raw value.
    var functionsRaw = 0
}

/// The block a command buffer calls when it completes.
public typealias MTLCommandBufferHandler = @Sendable (any MTLCommandBuffer) -> Void

// MARK: - Protocols

/// A GPU.
@available(macOS 10.11, *)
public protocol MTLDevice: AnyObject {
    /// The device's name.
    var name: String { get }
    /// Maximum threads per threadgroup for a trivial kernel.
    var maxThreadsPerThreadgroup: MTLSize { get }
    /// Maximum threadgroup memory in bytes.
    @available(macOS 10.13, *)
    var maxThreadgroupMemoryLength: Int { get }
    /// Whether CPU and GPU share memory.
    @available(macOS 10.15, *)
    var hasUnifiedMemory: Bool { get }
    /// The working-set size Metal recommends.
    @available(macOS 10.12, *)
    var recommendedMaxWorkingSetSize: UInt64 { get }
    /// The bytes of all the resources this device has allocated.
    @available(macOS 10.13, *)
    var currentAllocatedSize: Int { get }
    /// Whether the GPU supports a family's features.
    @available(macOS 10.15, *)
    func supportsFamily(_ gpuFamily: MTLGPUFamily) -> Bool
    /// A new zero-filled buffer.
    func makeBuffer(length: Int, options: MTLResourceOptions) -> (any MTLBuffer)?
    /// A buffer over existing page-aligned memory, without a copy.
    func makeBuffer(bytesNoCopy pointer: UnsafeMutableRawPointer, length: Int, options: MTLResourceOptions,
                    deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?) -> (any MTLBuffer)?
    /// Compiles MSL source.
    func makeLibrary(source: String, options: MTLCompileOptions?) throws -> any MTLLibrary
    /// A compute pipeline state for a kernel function.
    func makeComputePipelineState(function: any MTLFunction) throws -> any MTLComputePipelineState
    /// A new command queue allowing 64 uncompleted command buffers.
    func makeCommandQueue() -> (any MTLCommandQueue)?
    /// A new command queue allowing maxCommandBufferCount uncompleted command buffers.
    func makeCommandQueue(maxCommandBufferCount: Int) -> (any MTLCommandQueue)?
    /// A new shared event.
    @available(macOS 10.14, *)
    func makeSharedEvent() -> (any MTLSharedEvent)?
}

/// A GPU memory allocation.
@available(macOS 10.11, *)
public protocol MTLBuffer: AnyObject {
    /// The length in bytes.
    var length: Int { get }
    /// The CPU address of the contents (shared storage).
    func contents() -> UnsafeMutableRawPointer
    /// Where the memory lives (declared by MTLResource, which MTLBuffer refines).
    @available(macOS 10.11, *)
    var storageMode: MTLStorageMode { get }
    /// Whether Metal tracks hazards on it (declared by MTLResource).
    @available(macOS 10.15, *)
    var hazardTrackingMode: MTLHazardTrackingMode { get }
}

/// Compiled MSL.
@available(macOS 10.11, *)
public protocol MTLLibrary: AnyObject {
    /// The functions in the library.
    var functionNames: [String] { get }
    /// The function with this name, if any.
    func makeFunction(name: String) -> (any MTLFunction)?
}

/// One function of a library.
@available(macOS 10.11, *)
public protocol MTLFunction: AnyObject {
    /// Its name.
    var name: String { get }
}

/// A compiled compute pipeline.
@available(macOS 10.11, *)
public protocol MTLComputePipelineState: AnyObject {
    /// Maximum threads per threadgroup for this pipeline.
    var maxTotalThreadsPerThreadgroup: Int { get }
    /// The SIMD-group width.
    var threadExecutionWidth: Int { get }
    /// Bytes of threadgroup memory declared in the kernel.
    @available(macOS 10.13, *)
    var staticThreadgroupMemoryLength: Int { get }
}

/// A queue of command buffers.
@available(macOS 10.11, *)
public protocol MTLCommandQueue: AnyObject {
    /// A new command buffer that retains the resources it uses; blocks while the queue has no free one.
    func makeCommandBuffer() -> (any MTLCommandBuffer)?
    /// A new command buffer made as descriptor says (e.g. recording encoder execution status).
    @available(macOS 11.0, *)
    func makeCommandBuffer(descriptor: MTLCommandBufferDescriptor) -> (any MTLCommandBuffer)?
}

/// A container of encoded GPU commands.
@available(macOS 10.11, *)
public protocol MTLCommandBuffer: AnyObject {
    /// A label for debugging and errors.
    var label: String? { get set }
    /// The current state.
    var status: MTLCommandBufferStatus { get }
    /// The error when status is .error.
    var error: (any Error)? { get }
    /// Host time (seconds) when the GPU started the buffer.
    @available(macOS 10.15, *)
    var gpuStartTime: CFTimeInterval { get }
    /// Host time (seconds) when the GPU finished the buffer.
    @available(macOS 10.15, *)
    var gpuEndTime: CFTimeInterval { get }
    /// A compute encoder (serial dispatch).
    func makeComputeCommandEncoder() -> (any MTLComputeCommandEncoder)?
    /// A blit encoder.
    func makeBlitCommandEncoder() -> (any MTLBlitCommandEncoder)?
    /// Signals event with value after earlier passes.
    @available(macOS 10.14, *)
    func encodeSignalEvent(_ event: any MTLEvent, value: UInt64)
    /// Waits for event to reach value before later passes.
    @available(macOS 10.14, *)
    func encodeWaitForEvent(_ event: any MTLEvent, value: UInt64)
    /// Registers a completion block (before commit).
    func addCompletedHandler(_ block: @escaping MTLCommandBufferHandler)
    /// Submits the buffer.
    func commit()
    /// Blocks until the buffer completes.
    func waitUntilCompleted()
}

/// Common to all encoders.
@available(macOS 10.11, *)
public protocol MTLCommandEncoder: AnyObject {
    /// A label for debugging.
    var label: String? { get set }
    /// Finishes encoding.
    func endEncoding()
    /// Starts a named group of commands (named in GPU error information and captures).
    func pushDebugGroup(_ string: String)
    /// Ends the innermost debug group.
    func popDebugGroup()
}

/// Encodes compute dispatches.
@available(macOS 10.11, *)
public protocol MTLComputeCommandEncoder: MTLCommandEncoder {
    /// Sets the pipeline for later dispatches.
    func setComputePipelineState(_ state: any MTLComputePipelineState)
    /// Binds a buffer at an offset to [[buffer(index)]].
    func setBuffer(_ buffer: (any MTLBuffer)?, offset: Int, index: Int)
    /// Copies up to 4 KB of bytes for [[buffer(index)]].
    func setBytes(_ bytes: UnsafeRawPointer, length: Int, index: Int)
    /// Sets the length of [[threadgroup(index)]] (a multiple of 16).
    func setThreadgroupMemoryLength(_ length: Int, index: Int)
    /// Dispatches threadgroupsPerGrid threadgroups of threadsPerThreadgroup threads.
    func dispatchThreadgroups(_ threadgroupsPerGrid: MTLSize, threadsPerThreadgroup: MTLSize)
}

/// Encodes memory copies and fills.
@available(macOS 10.11, *)
public protocol MTLBlitCommandEncoder: MTLCommandEncoder {
    /// Copies size bytes between buffers (macOS: offsets and size multiples of 4).
    func copy(from sourceBuffer: any MTLBuffer, sourceOffset: Int, to destinationBuffer: any MTLBuffer,
              destinationOffset: Int, size: Int)
    /// Sets every byte of range to value (macOS: bounds multiples of 4).
    func fill(buffer: any MTLBuffer, range: Range<Int>, value: UInt8)
}

/// A GPU-side synchronisation counter.
@available(macOS 10.14, *)
public protocol MTLEvent: AnyObject {
    /// A label for debugging.
    var label: String? { get set }
}

/// An event the CPU and other devices can observe.
@available(macOS 10.14, *)
public protocol MTLSharedEvent: MTLEvent {
    /// The current value; setting it changes it only to a larger value, and releases waiters.
    var signaledValue: UInt64 { get set }
}

// MARK: - Functions

/// Every Metal device of the system; none here, where Metal does not exist (the simulated device is made
/// explicitly with MetalSimulation.makeDevice).
@available(macOS 10.11, *)
public func MTLCopyAllDevices() -> [any MTLDevice] { [] }

/// The default Metal device; none here.
@available(macOS 10.11, *)
public func MTLCreateSystemDefaultDevice() -> (any MTLDevice)? { nil }
#endif
