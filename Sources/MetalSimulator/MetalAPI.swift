// MetalSimulator/MetalAPI.swift -- Apple's Metal declarations as the numba-metal Metal backend uses them, with Apple's exact
// Swift names, argument labels and types, so that the backend type-checks on Linux and a misspelling
// fails here instead of on the first Mac build. Nothing in it does any work: MTLCopyAllDevices() returns
// no devices, so the backend is never instantiated. Keep it to what the backend uses; add a declaration
// only after checking its spelling against developer.apple.com/documentation/metal.

// MARK: - Basic types

/// Seconds on the host clock (CoreFoundation's CFTimeInterval).
public typealias CFTimeInterval = Double

/// The dimensions of a grid, threadgroup or region.
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
public struct MTLResourceOptions: OptionSet, Sendable {
    /// The raw bits.
    public let rawValue: UInt
    /// Creates options from raw bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }
    /// CPU and GPU share the memory (the default on Apple silicon).
    public static let storageModeShared = MTLResourceOptions([])
    /// GPU-only memory.
    public static let storageModePrivate = MTLResourceOptions(rawValue: 2 << 4)
}

/// Floating-point optimisation modes of the Metal compiler (macOS 15+).
public enum MTLMathMode: Int, Sendable {
    /// No unsafe floating-point optimisations.
    case safe = 0
    /// Aggressive optimisations that keep Inf/NaN (Apple silicon default).
    case relaxed = 1
    /// Aggressive optimisations.
    case fast = 2
}

/// Which FP32 math function implementations Metal uses (macOS 15+).
public enum MTLMathFloatingPointFunctions: Int, Sendable {
    /// The fast versions (default).
    case fast = 0
    /// The precise versions.
    case precise = 1
}

/// Metal Shading Language versions.
public enum MTLLanguageVersion: UInt, Sendable {
    /// MSL 1.0 (iOS only).
    case version1_0 = 65536
    /// MSL 1.1.
    case version1_1 = 65537
    /// MSL 1.2.
    case version1_2 = 65538
    /// MSL 2.0.
    case version2_0 = 131072
    /// MSL 2.1.
    case version2_1 = 131073
    /// MSL 2.2.
    case version2_2 = 131074
    /// MSL 2.3.
    case version2_3 = 131075
    /// MSL 2.4.
    case version2_4 = 131076
    /// MSL 3.0.
    case version3_0 = 196608
    /// MSL 3.1 (macOS 14+).
    case version3_1 = 196609
    /// MSL 3.2 (macOS 15+).
    case version3_2 = 196610
}

/// The states a command buffer passes through.
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

/// Compiler options for makeLibrary(source:options:).
open class MTLCompileOptions {
    /// Default options.
    public init() {}
    /// Floating-point optimisation mode (macOS 15+).
    @available(macOS 15.0, iOS 18.0, *)
    open var mathMode: MTLMathMode = .relaxed
    /// FP32 math function implementations (macOS 15+).
    @available(macOS 15.0, iOS 18.0, *)
    open var mathFloatingPointFunctions: MTLMathFloatingPointFunctions = .fast
    /// Deprecated switch between fast and safe/precise math.
    open var fastMathEnabled: Bool = true
    /// The MSL version to compile as (default: the newest).
    open var languageVersion: MTLLanguageVersion = .version3_2
}

/// The block a command buffer calls when it completes.
public typealias MTLCommandBufferHandler = @Sendable (any MTLCommandBuffer) -> Void

// MARK: - Protocols

/// A GPU.
public protocol MTLDevice: AnyObject {
    /// The device's name.
    var name: String { get }
    /// Maximum threads per threadgroup for a trivial kernel.
    var maxThreadsPerThreadgroup: MTLSize { get }
    /// Maximum threadgroup memory in bytes.
    var maxThreadgroupMemoryLength: Int { get }
    /// Whether CPU and GPU share memory.
    var hasUnifiedMemory: Bool { get }
    /// The working-set size Metal recommends.
    var recommendedMaxWorkingSetSize: UInt64 { get }
    /// A new zero-filled buffer.
    func makeBuffer(length: Int, options: MTLResourceOptions) -> (any MTLBuffer)?
    /// A buffer over existing page-aligned memory, without a copy.
    func makeBuffer(bytesNoCopy pointer: UnsafeMutableRawPointer, length: Int, options: MTLResourceOptions,
                    deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?) -> (any MTLBuffer)?
    /// Compiles MSL source.
    func makeLibrary(source: String, options: MTLCompileOptions?) throws -> any MTLLibrary
    /// A compute pipeline state for a kernel function.
    func makeComputePipelineState(function: any MTLFunction) throws -> any MTLComputePipelineState
    /// A new command queue.
    func makeCommandQueue() -> (any MTLCommandQueue)?
    /// A new shared event.
    func makeSharedEvent() -> (any MTLSharedEvent)?
}

/// A GPU memory allocation.
public protocol MTLBuffer: AnyObject {
    /// The length in bytes.
    var length: Int { get }
    /// The CPU address of the contents (shared storage).
    func contents() -> UnsafeMutableRawPointer
}

/// Compiled MSL.
public protocol MTLLibrary: AnyObject {
    /// The functions in the library.
    var functionNames: [String] { get }
    /// The function with this name, if any.
    func makeFunction(name: String) -> (any MTLFunction)?
}

/// One function of a library.
public protocol MTLFunction: AnyObject {
    /// Its name.
    var name: String { get }
}

/// A compiled compute pipeline.
public protocol MTLComputePipelineState: AnyObject {
    /// Maximum threads per threadgroup for this pipeline.
    var maxTotalThreadsPerThreadgroup: Int { get }
    /// The SIMD-group width.
    var threadExecutionWidth: Int { get }
    /// Bytes of threadgroup memory declared in the kernel.
    var staticThreadgroupMemoryLength: Int { get }
}

/// A queue of command buffers.
public protocol MTLCommandQueue: AnyObject {
    /// A new command buffer.
    func makeCommandBuffer() -> (any MTLCommandBuffer)?
}

/// A container of encoded GPU commands.
public protocol MTLCommandBuffer: AnyObject {
    /// A label for debugging and errors.
    var label: String? { get set }
    /// The current state.
    var status: MTLCommandBufferStatus { get }
    /// The error when status is .error.
    var error: (any Error)? { get }
    /// Host time (seconds) when the GPU started the buffer.
    var gpuStartTime: CFTimeInterval { get }
    /// Host time (seconds) when the GPU finished the buffer.
    var gpuEndTime: CFTimeInterval { get }
    /// A compute encoder (serial dispatch).
    func makeComputeCommandEncoder() -> (any MTLComputeCommandEncoder)?
    /// A blit encoder.
    func makeBlitCommandEncoder() -> (any MTLBlitCommandEncoder)?
    /// Signals event with value after earlier passes.
    func encodeSignalEvent(_ event: any MTLEvent, value: UInt64)
    /// Waits for event to reach value before later passes.
    func encodeWaitForEvent(_ event: any MTLEvent, value: UInt64)
    /// Registers a completion block (before commit).
    func addCompletedHandler(_ block: @escaping MTLCommandBufferHandler)
    /// Submits the buffer.
    func commit()
    /// Blocks until the buffer completes.
    func waitUntilCompleted()
}

/// Common to all encoders.
public protocol MTLCommandEncoder: AnyObject {
    /// A label for debugging.
    var label: String? { get set }
    /// Finishes encoding.
    func endEncoding()
}

/// Encodes compute dispatches.
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
public protocol MTLBlitCommandEncoder: MTLCommandEncoder {
    /// Copies size bytes between buffers (macOS: offsets and size multiples of 4).
    func copy(from sourceBuffer: any MTLBuffer, sourceOffset: Int, to destinationBuffer: any MTLBuffer,
              destinationOffset: Int, size: Int)
    /// Sets every byte of range to value (macOS: bounds multiples of 4).
    func fill(buffer: any MTLBuffer, range: Range<Int>, value: UInt8)
}

/// A GPU-side synchronisation counter.
public protocol MTLEvent: AnyObject {
    /// A label for debugging.
    var label: String? { get set }
}

/// An event the CPU and other devices can observe.
public protocol MTLSharedEvent: MTLEvent {
    /// The current value.
    var signaledValue: UInt64 { get set }
}

// MARK: - Functions

/// Every Metal device of the system; none where Metal does not exist.
public func MTLCopyAllDevices() -> [any MTLDevice] { [] }

/// The default Metal device; none where Metal does not exist.
public func MTLCreateSystemDefaultDevice() -> (any MTLDevice)? { nil }
