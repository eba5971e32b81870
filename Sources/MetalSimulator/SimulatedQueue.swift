// SimulatedQueue.swift -- MTLCommandQueue, MTLCommandBuffer, the compute and blit encoders and
// MTLSharedEvent, with the behaviour Apple documents and its validation layer enforces:
//  - a queue allows maxCommandBufferCount (64 by default) uncompleted command buffers; makeCommandBuffer()
//    blocks the caller while none is free. A slot is freed only after the buffer's completed handlers have
//    returned (the stricter of the orders Apple's documentation allows), so a handler that waits for a lock
//    held by a thread blocked in makeCommandBuffer() deadlocks here as it can on a Mac;
//  - makeCommandBuffer() and make...CommandEncoder() return autoreleased objects (Objective-C's +0
//    convention), as does the error property (an atomic property);
//  - command buffers of one queue start in commit order on that queue's GPU thread; completed handlers run
//    on another thread, serially, in registration order;
//  - one encoder open at a time per command buffer; endEncoding before another encoder, an event
//    signal/wait or commit; handlers added before commit; argument limits (31 buffers, 4 KB of setBytes,
//    threadgroup lengths multiples of 16, every index the kernel declares bound) checked at dispatch;
//  - a command buffer that faults or that the watchdog ends (injected, or waiting on an event longer than
//    the profile's eventWaitTimeout) runs none of its remaining commands: its encoded signals never happen;
//  - a shared event's value only grows; waiters run when it reaches their value.
// Built only where Metal does not exist: on a Mac the backend uses Apple's Metal itself.
#if !canImport(Metal)
#if canImport(Glibc)
import Glibc
#endif
import Locks

// MARK: - Command queue

/// A command queue with its GPU thread and its completion thread.
final class SimCommandQueue: SimObject, MTLCommandQueue, @unchecked Sendable {
    let device: SimDevice
    /// The state both threads share (they keep it alive after the queue goes away).
    let core: QueueCore

    init(device: SimDevice, maxCommandBufferCount: Int) {
        self.device = device
        core = QueueCore(device: device, maxCommandBufferCount: maxCommandBufferCount, shared: device.completionsForNewQueue())
        super.init()
        let core = self.core
        startThread { core.runGPU() }
        if core.shared == nil { startThread { core.runCompletions() } }   // else the device's shared one
    }

    deinit { core.stop() }

    func makeCommandBuffer() -> (any MTLCommandBuffer)? { makeCommandBuffer(descriptor: MTLCommandBufferDescriptor()) }

    func makeCommandBuffer(descriptor: MTLCommandBufferDescriptor) -> (any MTLCommandBuffer)? {
        core.acquireSlot()
        let cb = SimCommandBuffer(queue: self, errorOptions: descriptor.errorOptions)
        autorelease(cb)
        return cb
    }
}

/// The queue's shared state: slots, the GPU's FIFO and the completion FIFO.
final class QueueCore: @unchecked Sendable {
    let device: SimDevice
    let maxCommandBufferCount: Int
    let lock = Monitor()
    // Guarded by lock:
    var uncompleted = 0
    var committed: [SimCommandBuffer] = []
    var finished: [SimCommandBuffer] = []
    var stopping = false
    /// The device-wide completion thread that calls this queue's handlers instead of its own (nil: its own).
    let shared: SharedCompletions?

    init(device: SimDevice, maxCommandBufferCount: Int, shared: SharedCompletions? = nil) {
        self.device = device
        self.maxCommandBufferCount = maxCommandBufferCount
        self.shared = shared
    }

    /// Blocks while every command buffer of the queue is uncompleted (Apple: makeCommandBuffer() "blocks
    /// the calling CPU thread when the queue doesn't have any free command buffers").
    func acquireSlot() {
        _ = lock.wait(until: { uncompleted < maxCommandBufferCount })
        let now = lock.locked { () -> Int in
            uncompleted += 1
            return uncompleted
        }
        device.countUncompleted(1, queueNow: now)
    }

    /// A command buffer that will never be committed (released before commit) frees its slot.
    func releaseSlot() {
        lock.update { uncompleted -= 1 }
        device.countUncompleted(-1, queueNow: 0)
    }

    func submit(_ cb: SimCommandBuffer) { lock.update { committed.append(cb) } }

    func stop() { lock.update { stopping = true } }

    /// The GPU: runs committed command buffers in order, one at a time.
    func runGPU() {
        while true {
            var next: SimCommandBuffer? = nil
            _ = lock.wait(until: { !committed.isEmpty || stopping })
            lock.locked { if !committed.isEmpty { next = committed.removeFirst() } }
            guard let cb = next else { return }
            device.waitWhileHeld()
            cb.execute()
            if let shared { shared.post(self, cb) } else { lock.update { finished.append(cb) } }
        }
    }

    /// The completion thread: calls each finished buffer's handlers, then frees its slot.
    func runCompletions() {
        while true {
            var next: SimCommandBuffer? = nil
            _ = lock.wait(until: { !finished.isEmpty || (stopping && committed.isEmpty) })
            lock.locked { if !finished.isEmpty { next = finished.removeFirst() } }
            guard let cb = next else {
                if lock.locked({ stopping && committed.isEmpty && finished.isEmpty }) { return }
                continue
            }
            cb.callCompletedHandlers()
            releaseSlot()
        }
    }
}

/// One completion thread for every queue of a device made while MetalSimulation.shareCompletionThread is on:
/// it calls the completed handlers of all of them, serially, in the order the GPU finished their command
/// buffers (across queues, not the order they were committed in), so a handler that blocks holds up every queue.
final class SharedCompletions: @unchecked Sendable {
    private let lock = Monitor()
    private var finished: [(QueueCore, SimCommandBuffer)] = []   // guarded by lock

    init() { startThread { [self] in run() } }

    func post(_ core: QueueCore, _ cb: SimCommandBuffer) { lock.update { finished.append((core, cb)) } }

    private func run() {
        while true {
            _ = lock.wait(until: { !finished.isEmpty })
            let (core, cb) = lock.locked { finished.removeFirst() }
            cb.callCompletedHandlers()
            core.releaseSlot()
        }
    }
}

// MARK: - Command buffer

/// One encoded pass or synchronisation command.
enum SimCommand {
    case dispatch(SimDispatch)
    case copy(source: SimBuffer, sourceOffset: Int, destination: SimBuffer, destinationOffset: Int, size: Int)
    case fill(buffer: SimBuffer, range: Range<Int>, value: UInt8)
    case signal(SimSharedEvent, UInt64)
    case wait(SimSharedEvent, UInt64)
}

/// A command buffer.
final class SimCommandBuffer: SimObject, MTLCommandBuffer, @unchecked Sendable {
    /// Apple's commandQueue property holds the queue strongly.
    let queue: SimCommandQueue
    /// Guards everything below (the GPU and completion threads read and write it).
    private let lock = Monitor()
    private var labelValue: String? = nil
    private var statusValue: MTLCommandBufferStatus = .notEnqueued
    private var errorValue: MTLCommandBufferError? = nil
    private var startTime: Double = 0
    private var endTime: Double = 0
    private var commands: [SimCommand] = []
    private var handlers: [MTLCommandBufferHandler] = []
    private var handlersDone = false
    /// The encoder being encoded into, if any (weak: an encoder released without endEncoding is an error).
    private weak var openEncoder: SimEncoder? = nil
    private var fault: MetalSimulation.Fault? = nil
    /// Whether a command was encoded (the simulation's uncommitted-work statistic).
    private var holdsWork = false
    /// What extra error information it records (its descriptor's errorOptions).
    let errorOptions: MTLCommandBufferErrorOption

    init(queue: SimCommandQueue, errorOptions: MTLCommandBufferErrorOption) {
        self.queue = queue
        self.errorOptions = errorOptions
    }

    deinit {
        // Never committed: its slot was never given back.
        if statusValue == .notEnqueued {
            queue.core.releaseSlot()
            if holdsWork { queue.device.workLeft(ObjectIdentifier(self), committed: false) }
        }
    }

    /// An encoder recorded a command: the first one starts the time the buffer holds work uncommitted.
    func noteWork() {
        let first = lock.locked { () -> Bool in
            defer { holdsWork = true }
            return !holdsWork
        }
        if first { queue.device.workEncoded(ObjectIdentifier(self)) }
    }

    var label: String? {
        get { lock.locked { labelValue } }
        set { lock.locked { labelValue = newValue } }
    }
    var status: MTLCommandBufferStatus { lock.locked { statusValue } }
    var error: (any Error)? {
        let e = lock.locked { errorValue }
        if let box = e?.storage { autorelease(box) }
        return e
    }
    var gpuStartTime: CFTimeInterval { lock.locked { startTime } }
    var gpuEndTime: CFTimeInterval { lock.locked { endTime } }

    // MARK: encoding (the client's thread)

    /// Checks that a new pass or command may be encoded now.
    private func checkEncodable(_ what: String) -> Bool {
        lock.locked {
            if statusValue != .notEnqueued {
                validationFailure("\(what) on a command buffer that was already committed")
                return false
            }
            if openEncoder != nil {
                validationFailure("\(what) while a command encoder is still encoding into this command buffer; call endEncoding() first")
                return false
            }
            return true
        }
    }

    func makeComputeCommandEncoder() -> (any MTLComputeCommandEncoder)? {
        guard checkEncodable("makeComputeCommandEncoder()") else { return nil }
        let e = SimComputeEncoder(commandBuffer: self)
        lock.locked { openEncoder = e }
        autorelease(e)
        return e
    }

    func makeBlitCommandEncoder() -> (any MTLBlitCommandEncoder)? {
        guard checkEncodable("makeBlitCommandEncoder()") else { return nil }
        let e = SimBlitEncoder(commandBuffer: self)
        lock.locked { openEncoder = e }
        autorelease(e)
        return e
    }

    func encodeSignalEvent(_ event: any MTLEvent, value: UInt64) {
        guard checkEncodable("encodeSignalEvent(_:value:)"), let e = event as? SimSharedEvent else { return }
        lock.locked { commands.append(.signal(e, value)) }
    }

    func encodeWaitForEvent(_ event: any MTLEvent, value: UInt64) {
        guard checkEncodable("encodeWaitForEvent(_:value:)"), let e = event as? SimSharedEvent else { return }
        lock.locked { commands.append(.wait(e, value)) }
    }

    /// An encoder ended: its commands join the buffer in order.
    func encoderEnded(_ encoder: SimEncoder, commands encoded: [SimCommand]) {
        lock.locked {
            commands.append(contentsOf: encoded)
            if openEncoder === encoder { openEncoder = nil }
        }
    }

    func addCompletedHandler(_ block: @escaping MTLCommandBufferHandler) {
        lock.locked {
            if statusValue != .notEnqueued {
                validationFailure("addCompletedHandler(_:) after commit(): completed handlers must be added before commit")
                return
            }
            handlers.append(block)
        }
    }

    func commit() {
        let ok = lock.locked { () -> Bool in
            if statusValue != .notEnqueued {
                validationFailure("commit() of a command buffer that was already committed")
                return false
            }
            if openEncoder != nil {
                validationFailure("commit() with a command encoder still encoding; call endEncoding() first")
                return false
            }
            statusValue = .committed
            return true
        }
        guard ok else { return }
        if lock.locked({ holdsWork }) { queue.device.workLeft(ObjectIdentifier(self), committed: true) }
        // An injected fault, or the penalty box's answer once the device has seen enough failures.
        let injected = queue.device.takeFault() ?? (queue.device.inPenaltyBox() ? .accessRevoked : nil)
        lock.locked { fault = injected }
        queue.core.submit(self)
    }

    func waitUntilCompleted() {
        if lock.locked({ statusValue == .notEnqueued }) {
            validationFailure("waitUntilCompleted() on a command buffer that was not committed")
            return
        }
        _ = lock.wait(until: { handlersDone })
    }

    // MARK: execution (the queue's GPU thread)

    /// Runs the commands in order; a failure skips everything after it, encoded signals included.
    func execute() {
        let (list, injected) = lock.update { () -> ([SimCommand], MetalSimulation.Fault?) in
            statusValue = .scheduled
            startTime = monotonicSeconds()
            return (commands, fault)
        }
        var failure: Failure? = nil
        let aborted = "Execution of the command buffer was aborted due to an error during execution. "
        switch injected {
        case .pageFault?: failure = Failure(Int(MTLCommandBufferError.Code.pageFault.rawValue),
            aborted + "Caused GPU Address Fault Error (0000000b:kIOGPUCommandBufferCallbackErrorPageFault) [simulated]")
        case .watchdog?: failure = Failure(Int(MTLCommandBufferError.Code.timeout.rawValue),
            aborted + "Caused GPU Timeout Error (00000002:kIOGPUCommandBufferCallbackErrorTimeout) [simulated watchdog]")
        case .accessRevoked?: failure = Failure(Int(MTLCommandBufferError.Code.accessRevoked.rawValue),
            aborted + "Ignored (for causing prior/excessive GPU errors) (00000004:kIOGPUCommandBufferCallbackErrorSubmissionsIgnored) "
            + "[simulated penalty box]")
        case .impactingInteractivity?: failure = Failure(14,
            aborted + "Impacting Interactivity (0000000e:kIOGPUCommandBufferCallbackErrorImpactingInteractivity) [simulated]")
        case nil, .pageFaultAtDispatch?:
            var faultAt = 0, dispatches = 0
            if case .pageFaultAtDispatch(let n)? = injected { faultAt = n }
            for command in list {
                if case .dispatch(let d) = command {
                    dispatches += 1
                    if dispatches == faultAt {
                        failure = Failure(Int(MTLCommandBufferError.Code.pageFault.rawValue), aborted + "Caused GPU Address "
                            + "Fault Error (0000000b:kIOGPUCommandBufferCallbackErrorPageFault) [simulated, at dispatch \(faultAt)]",
                            debugGroups: d.debugGroups)
                        break
                    }
                }
                if let f = run(command) {
                    failure = f
                    break
                }
            }
        }
        let end = monotonicSeconds()
        if failure != nil { queue.device.countFailure() }
        lock.update {
            endTime = end
            commands = []  // "The command buffer releases these references after it finishes running on the GPU."
            if let f = failure {
                statusValue = .error
                // With .encoderExecutionStatus the error names the faulting encoder's debug groups (one
                // encoder info per failed dispatch here: the simulator keeps no encoder boundaries).
                var info: [String: Any] = [:]
                if errorOptions.contains(.encoderExecutionStatus) {
                    info[MTLCommandBufferEncoderInfoErrorKey] = [SimEncoderInfo(label: labelValue ?? "", debugSignposts: f.debugGroups,
                                                                                 errorState: f.debugGroups.isEmpty ? .unknown : .faulted)]
                }
                errorValue = MTLCommandBufferError(errorCode: f.code, description: f.message, userInfo: info, storage: SimErrorObject())
            } else {
                statusValue = .completed
            }
        }
    }

    /// How a command buffer failed: the raw error code, the description, the failed dispatch's debug groups.
    struct Failure {
        let code: Int
        let message: String
        var debugGroups: [String] = []
        init(_ code: Int, _ message: String, debugGroups: [String] = []) {
            self.code = code
            self.message = message
            self.debugGroups = debugGroups
        }
    }

    /// Runs one command; the failure, if it failed.
    private func run(_ command: SimCommand) -> Failure? {
        switch command {
        case .dispatch(let d):
            if let f = queue.device.engine.runReporting(d.pipeline.kernel, d.engineDispatch()) {
                let code = f.timedOut ? MTLCommandBufferError.Code.timeout : .pageFault  // the watchdog on a running dispatch
                return Failure(Int(code.rawValue), f.message, debugGroups: d.debugGroups)
            }
        case .copy(let s, let so, let t, let to, let n):
            memmove(t.contents() + to, s.contents() + so, n)
        case .fill(let b, let range, let value):
            memset(b.contents() + range.lowerBound, Int32(value), range.count)
        case .signal(let event, let value):
            event.signaledValue = value
        case .wait(let event, let value):
            if !event.wait(for: value, timeout: queue.device.profile.eventWaitTimeout) {
                return Failure(Int(MTLCommandBufferError.Code.timeout.rawValue), "Execution of the command buffer was aborted: it "
                    + "timed out waiting for a shared event to reach \(value) (it stayed at \(event.signaledValue)) [simulated watchdog]")
            }
        }
        return nil
    }

    // MARK: completion (the queue's completion thread)

    /// Calls the completed handlers in order, then releases waitUntilCompleted().
    func callCompletedHandlers() {
        let list = lock.locked { () -> [MTLCommandBufferHandler] in
            let l = handlers
            handlers = []
            return l
        }
        for h in list { h(self) }
        lock.update { handlersDone = true }
    }
}

/// The object behind a command buffer's error (Apple's NSError), so that reading `error` autoreleases a
/// counted object as Objective-C does.
final class SimErrorObject: SimObject {}

/// An encoder's execution status in a failed command buffer's error.
final class SimEncoderInfo: MTLCommandBufferEncoderInfo, @unchecked Sendable {
    let label: String
    let debugSignposts: [String]
    let errorState: MTLCommandEncoderErrorState
    init(label: String, debugSignposts: [String], errorState: MTLCommandEncoderErrorState) {
        self.label = label
        self.debugSignposts = debugSignposts
        self.errorState = errorState
    }
}

// MARK: - Encoders

/// What the two encoders share: one command buffer, endEncoding exactly once, nothing after it.
class SimEncoder: SimObject {
    let commandBuffer: SimCommandBuffer
    var label: String? = nil
    /// Commands encoded so far, handed to the command buffer by endEncoding().
    var encoded: [SimCommand] = []
    var ended = false
    /// The debug groups open now, outermost first.
    var debugGroups: [String] = []

    init(commandBuffer: SimCommandBuffer) { self.commandBuffer = commandBuffer }

    deinit {
        if !ended { validationFailure("Command encoder released without endEncoding") }
    }

    /// False (after reporting it) when the encoder was already ended.
    func usable(_ what: String) -> Bool {
        if ended { validationFailure("\(what) on an encoder after endEncoding()") }
        return !ended
    }

    func pushDebugGroup(_ string: String) {
        guard usable("pushDebugGroup(_:)") else { return }
        debugGroups.append(string)
    }

    func popDebugGroup() {
        guard usable("popDebugGroup()") else { return }
        if debugGroups.popLast() == nil { validationFailure("popDebugGroup() without a matching pushDebugGroup(_:)") }
    }

    func endEncoding() {
        guard usable("endEncoding()") else { return }
        if !debugGroups.isEmpty { validationFailure("endEncoding() with \(debugGroups.count) debug group(s) still pushed") }
        ended = true
        commandBuffer.encoderEnded(self, commands: encoded)
        encoded = []
    }
}

/// A dispatch as encoded: the pipeline and a snapshot of every binding.
struct SimDispatch {
    let pipeline: SimPipelineState
    let buffers: [(SimBuffer, Int)?]
    let bytes: [SimBytes?]
    let threadgroupLengths: [Int]
    let groups: MTLSize
    let threads: MTLSize
    /// The encoder's debug groups when it was encoded.
    let debugGroups: [String]

    /// The addresses and lengths the engine runs with.
    func engineDispatch() -> MetalSimulation.Dispatch {
        var addresses = [UnsafeMutableRawPointer?](repeating: nil, count: 31)
        for i in 0..<31 {
            if let (b, offset) = buffers[i] { addresses[i] = b.contents() + offset } else if let s = bytes[i] { addresses[i] = s.pointer }
        }
        return MetalSimulation.Dispatch(buffers: addresses, threadgroupMemoryLengths: threadgroupLengths,
                                        threadgroupsPerGrid: groups, threadsPerThreadgroup: threads)
    }
}

/// A copy of setBytes data, kept until the dispatch has run.
final class SimBytes {
    let pointer: UnsafeMutableRawPointer
    init(_ bytes: UnsafeRawPointer, length: Int) {
        pointer = UnsafeMutableRawPointer.allocate(byteCount: max(length, 16), alignment: 16)
        pointer.copyMemory(from: bytes, byteCount: length)
    }
    deinit { pointer.deallocate() }
}

/// A compute command encoder.
final class SimComputeEncoder: SimEncoder, MTLComputeCommandEncoder, @unchecked Sendable {
    private var pipeline: SimPipelineState? = nil
    private var buffers = [(SimBuffer, Int)?](repeating: nil, count: 31)
    private var bytes = [SimBytes?](repeating: nil, count: 31)
    private var threadgroupLengths = [Int](repeating: 0, count: 31)

    func setComputePipelineState(_ state: any MTLComputePipelineState) {
        guard usable("setComputePipelineState(_:)") else { return }
        guard let p = state as? SimPipelineState, p.device === commandBuffer.queue.device else {
            return validationFailure("setComputePipelineState(_:): the pipeline belongs to another device")
        }
        pipeline = p
    }

    func setBuffer(_ buffer: (any MTLBuffer)?, offset: Int, index: Int) {
        guard usable("setBuffer(_:offset:index:)") else { return }
        guard (0..<31).contains(index) else { return validationFailure("setBuffer(_:offset:index:): index (\(index)) must be < 31") }
        guard let buffer else {
            buffers[index] = nil
            return
        }
        guard let b = buffer as? SimBuffer, b.device === commandBuffer.queue.device else {
            return validationFailure("setBuffer(_:offset:index:): the buffer belongs to another device")
        }
        if offset < 0 || offset > b.length {
            return validationFailure("setBuffer(_:offset:index:): offset (\(offset)) must be within the buffer's length (\(b.length))")
        }
        buffers[index] = (b, offset)
        bytes[index] = nil
    }

    func setBytes(_ data: UnsafeRawPointer, length: Int, index: Int) {
        guard usable("setBytes(_:length:index:)") else { return }
        guard (0..<31).contains(index) else { return validationFailure("setBytes(_:length:index:): index (\(index)) must be < 31") }
        guard length > 0 && length <= 4096 else {
            return validationFailure("setBytes(_:length:index:): length (\(length)) must be between 1 and 4096 bytes")
        }
        bytes[index] = SimBytes(data, length: length)
        buffers[index] = nil
    }

    func setThreadgroupMemoryLength(_ length: Int, index: Int) {
        guard usable("setThreadgroupMemoryLength(_:index:)") else { return }
        guard (0..<31).contains(index) else {
            return validationFailure("setThreadgroupMemoryLength(_:index:): index (\(index)) must be < 31")
        }
        guard length >= 0 && length % 16 == 0 else {
            return validationFailure("setThreadgroupMemoryLength(_:index:): length (\(length)) must be a multiple of 16")
        }
        threadgroupLengths[index] = length
    }

    func dispatchThreadgroups(_ threadgroupsPerGrid: MTLSize, threadsPerThreadgroup: MTLSize) {
        guard usable("dispatchThreadgroups(_:threadsPerThreadgroup:)") else { return }
        guard let p = pipeline else { return validationFailure("dispatchThreadgroups: no compute pipeline state is set") }
        let g = threadgroupsPerGrid, t = threadsPerThreadgroup
        if min(g.width, g.height, g.depth, t.width, t.height, t.depth) <= 0 {
            return validationFailure("dispatchThreadgroups: every dimension of threadgroupsPerGrid (\(g.width), \(g.height), \(g.depth)) "
                + "and threadsPerThreadgroup (\(t.width), \(t.height), \(t.depth)) must be greater than 0")
        }
        let perGroup = t.width * t.height * t.depth
        if perGroup > p.maxTotalThreadsPerThreadgroup {
            return validationFailure("dispatchThreadgroups: threadsPerThreadgroup (\(perGroup)) must be <= "
                + "maxTotalThreadsPerThreadgroup (\(p.maxTotalThreadsPerThreadgroup))")
        }
        for i in p.kernel.bufferIndices where buffers[i] == nil && bytes[i] == nil {
            return validationFailure("dispatchThreadgroups: the kernel declares [[buffer(\(i))]] but no buffer or bytes are bound at index \(i)")
        }
        for i in p.kernel.threadgroupIndices where threadgroupLengths[i] == 0 {
            return validationFailure("dispatchThreadgroups: the kernel declares [[threadgroup(\(i))]] but its threadgroup memory length "
                + "at index \(i) is not set (setThreadgroupMemoryLength)")
        }
        let total = threadgroupLengths.reduce(p.staticThreadgroupMemoryLength, +)
        if total > commandBuffer.queue.device.maxThreadgroupMemoryLength {
            return validationFailure("dispatchThreadgroups: threadgroup memory (\(total) bytes) exceeds the device's "
                + "\(commandBuffer.queue.device.maxThreadgroupMemoryLength)")
        }
        encoded.append(.dispatch(SimDispatch(pipeline: p, buffers: buffers, bytes: bytes, threadgroupLengths: threadgroupLengths,
                                             groups: g, threads: t, debugGroups: debugGroups)))
        commandBuffer.noteWork()
    }
}

/// A blit command encoder (copies and fills between shared buffers).
final class SimBlitEncoder: SimEncoder, MTLBlitCommandEncoder, @unchecked Sendable {
    func copy(from sourceBuffer: any MTLBuffer, sourceOffset: Int, to destinationBuffer: any MTLBuffer,
              destinationOffset: Int, size: Int) {
        guard usable("copy(from:sourceOffset:to:destinationOffset:size:)") else { return }
        guard let s = sourceBuffer as? SimBuffer, let d = destinationBuffer as? SimBuffer else {
            return validationFailure("copy(from:...): a buffer is not from this device")
        }
        if sourceOffset % 4 != 0 || destinationOffset % 4 != 0 || size % 4 != 0 {
            return validationFailure("copy(from:sourceOffset:to:destinationOffset:size:): on macOS the offsets (\(sourceOffset), "
                + "\(destinationOffset)) and size (\(size)) must be multiples of 4")
        }
        if sourceOffset < 0 || size < 0 || sourceOffset + size > s.length || destinationOffset < 0 || destinationOffset + size > d.length {
            return validationFailure("copy(from:sourceOffset:to:destinationOffset:size:): the range is outside a buffer")
        }
        encoded.append(.copy(source: s, sourceOffset: sourceOffset, destination: d, destinationOffset: destinationOffset, size: size))
        commandBuffer.noteWork()
    }

    func fill(buffer: any MTLBuffer, range: Range<Int>, value: UInt8) {
        guard usable("fill(buffer:range:value:)") else { return }
        guard let b = buffer as? SimBuffer else { return validationFailure("fill(buffer:range:value:): the buffer is not from this device") }
        if range.lowerBound % 4 != 0 || range.count % 4 != 0 {
            return validationFailure("fill(buffer:range:value:): on macOS the range's start (\(range.lowerBound)) and length "
                + "(\(range.count)) must be multiples of 4")
        }
        if range.lowerBound < 0 || range.upperBound > b.length {
            return validationFailure("fill(buffer:range:value:): the range is outside the buffer")
        }
        encoded.append(.fill(buffer: b, range: range, value: value))
        commandBuffer.noteWork()
    }
}

// MARK: - Shared events

/// A shared event: a value that only grows, and waiters for values.
final class SimSharedEvent: SimObject, MTLSharedEvent, @unchecked Sendable {
    private let lock = Monitor()
    private var value: UInt64 = 0
    private var labelValue: String? = nil

    var label: String? {
        get { lock.locked { labelValue } }
        set { lock.locked { labelValue = newValue } }
    }

    var signaledValue: UInt64 {
        get { lock.locked { value } }
        // Apple: "its value is changed only if you provide a larger value than the value currently stored".
        set { lock.update { value = max(value, newValue) } }
    }

    /// Blocks until the value reaches target; false when timeout seconds pass first.
    func wait(for target: UInt64, timeout: Double) -> Bool {
        lock.wait(until: { value >= target }, deadline: monotonicSeconds() + timeout)
    }
}
#endif
