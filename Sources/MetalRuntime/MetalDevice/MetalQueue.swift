// MetalQueue.swift -- one MTLCommandQueue per nm_queue. Dispatches are encoded into an open command buffer
// and compute encoder. Work starts when it is queued: the call that queues it commits the open command
// buffer when the queue has no committed, unfinished one (the GPU is idle), and the completed handler that
// leaves the queue idle commits what was encoded meanwhile; so command buffers batch only while the GPU is
// busy. A thread inside nm_set_batching(1) (metal.batch()) leaves its work for a flush or wait. Every
// `dispatchesPerCommandBuffer` dispatches commit too. A completed handler records status, error and GPU
// times per command buffer. Cross-queue waits use an MTLSharedEvent
// that each queue signals with the last work id of every command buffer it commits; a wait is encoded only
// once the command buffer it waits for has started (before that the waiting thread is held on the host), as
// a command buffer that waits on an event too long fails with `timeout`.
//
// Two locks, so that nothing a completed handler needs is ever held across a call into Metal that can
// block: `encoding` serialises the client side (encoding, makeCommandBuffer(), commit()) and completed
// handlers never take it; `state` holds what handlers update and is never held across a Metal call that
// can block. makeCommandBuffer() blocks while all of the queue's 64 command buffers are uncompleted, so the
// queue itself bounds committed command buffers to 63 (the 64th is the one being encoded). A completed
// handler commits only if it can take `encoding` without waiting (lockedIfFree); when it cannot, the thread
// holding it finds `idleKick` set as it lets go, and commits then.
//
// A command buffer that fails (a fault, the GPU watchdog) never runs its encoded signal: its handler sets
// the event from the host instead, so that queues waiting for it are released, and each queue that waited
// for failed work reports that failure at its next wait. A failure is reported to the threads that encoded
// work into the failed command buffer (its commands after the fault never ran), each at its own next wait;
// another thread's wait does not take it. A failure whose code means the GPU refuses this process
// (GPUErrors.swift) latches the device as lost: every later launch, wait, copy or allocation on it fails with
// one message saying to restart the process, instead of blaming each later kernel. With NUMBA_METAL_GPU_DEBUG=1
// (or Metal's validation layer on, MTL_DEBUG_LAYER=1) command buffers record the encoders' execution status
// and each dispatch runs in a debug group named after its kernel, so that Metal names the faulting kernel.
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
import Locks

/// What a committed command buffer's work uses, released by its completed handler.
private final class Kept: @unchecked Sendable {
    var objects: [AnyObject]
    init(_ objects: [AnyObject]) { self.objects = objects }
}

/// An in-order Metal queue.
final class MetalQueue: Queue, @unchecked Sendable {
    /// Uncompleted command buffers the MTLCommandQueue allows (makeCommandQueue(maxCommandBufferCount:)).
    static let maxCommandBuffers = 64
    /// Dispatches per command buffer before it is committed without waiting for a flush.
    static let dispatchesPerCommandBuffer = 64
    /// Completed work whose timestamps are kept (a power of two; the ring grows to it as work is issued).
    static let historyLength = 65_536
    /// The ring's first size.
    static let historyInitial = 64
    /// Failed command buffers remembered for the queues that waited on them.
    static let failuresKept = 1024

    let device: any Device
    /// The same device, as the Metal device it is (its lost state).
    private let metal: MetalDevice
    /// Whether command buffers record encoder execution status and dispatches run in named debug groups.
    static let gpuDebug: Bool = {
        if let v = environment("NUMBA_METAL_GPU_DEBUG") { return !v.isEmpty && v != "0" }
        return environment("MTL_DEBUG_LAYER") == "1"
    }()
    /// The Metal command queue.
    private let queue: any MTLCommandQueue
    /// Signalled with the last work id of each committed command buffer.
    let event: any MTLSharedEvent

    /// The command buffer being encoded and what it needs until it completes.
    private struct OpenCommandBuffer {
        let commandBuffer: any MTLCommandBuffer
        var compute: (any MTLComputeCommandEncoder)? = nil
        var blit: (any MTLBlitCommandEncoder)? = nil
        /// First work id in it.
        let firstID: UInt64
        /// Dispatches in it.
        var dispatches = 0
        /// Whether a thread that does not batch queued work here: it must start without a flush.
        var unbatched = false
        /// Objects its work uses, kept until it completes.
        var kept: [AnyObject] = []
        /// Kernel labels (first 8), for error messages.
        var labels: [String] = []
        /// Work of other queues it waits for.
        var waits: [(queue: MetalQueue, id: UInt64)] = []
        /// The threads that encoded work into it: its failure is theirs.
        var owners: [nm_owner] = []

        /// Notes that the calling thread encoded work here.
        mutating func addOwner() {
            let me = nm_owner_current()
            if !owners.contains(where: { nm_owner_same($0, me) != 0 }) { owners.append(me) }
        }
    }

    /// A failure not reported yet, for its owner's wait.
    private struct Failure {
        let id: UInt64
        let owner: nm_owner
        let message: String
    }

    /// Work of another queue that a completed command buffer waited for, not known to have succeeded yet.
    private struct Upstream {
        let queue: MetalQueue
        let id: UInt64
        /// The waiting command buffer's first work id and owners.
        let waiterID: UInt64
        let owners: [nm_owner]
    }

    /// Serialises encoding and committing; completed handlers never take it.
    private let encoding = Mutex()
    /// Guarded by `encoding`.
    private var open: OpenCommandBuffer? = nil

    /// What completed handlers update; never held across a Metal call that can block.
    private let state = Monitor()
    // Guarded by `state`:
    /// Last work id handed out.
    private var issued: UInt64 = 0
    /// Committed command buffers not yet completed.
    private var inFlight = 0
    /// The first work id of each committed command buffer not yet completed, ascending.
    private var committedFirsts: [UInt64] = []
    /// Every id up to this one has completed.
    private var completedThrough: UInt64 = 0
    /// Completed id ranges above completedThrough (command buffers need not complete in commit order).
    private var completedAhead: [(first: UInt64, last: UInt64)] = []
    /// Unreported failures, at most one per owner (the first since its last report).
    private var failures: [Failure] = []
    /// Work of other queues that completed command buffers waited for and whose outcome those queues had not
    /// recorded yet (a later command buffer's signal can release a waiter first); checked by the next wait.
    private var waitedFor: [Upstream] = []
    /// Recent failed ranges and their messages, for the queues that waited on them.
    private var failedRanges: [(first: UInt64, last: UInt64, message: String)] = []
    /// Start/end times of recent work ids (ring, grown on demand up to historyLength entries).
    private var history: [(id: UInt64, start: UInt64, end: UInt64)] = []
    /// Set when a completed handler left the queue with nothing committed and unfinished; the open command
    /// buffer is then committed by whoever takes `encoding` next (startIdleWork).
    private var idleKick = false

    /// Creates the queue over a Metal command queue.
    init(device: MetalDevice, queue: any MTLCommandQueue, event: any MTLSharedEvent) {
        self.device = device
        metal = device
        self.queue = queue
        self.event = event
    }

    // MARK: encoding (`encoding` held)

    /// The open command buffer, created on demand once fewer than 63 committed ones are uncompleted.
    private func openCommandBuffer() throws -> OpenCommandBuffer {
        if let o = open { return o }
        state.wait { inFlight < MetalQueue.maxCommandBuffers - 1 }
        let made: (any MTLCommandBuffer)?
        if MetalQueue.gpuDebug {
            let descriptor = MTLCommandBufferDescriptor()
            descriptor.errorOptions = .encoderExecutionStatus  // "useful during development": names the faulting encoder
            made = queue.makeCommandBuffer(descriptor: descriptor)
        } else {
            made = queue.makeCommandBuffer()
        }
        guard let cb = made else { throw RuntimeError.outOfMemory("Metal could not create a command buffer") }
        let o = OpenCommandBuffer(commandBuffer: cb, firstID: state.locked { issued } + 1)
        open = o
        return o
    }

    /// Ends whichever encoder is open.
    private func endEncoders() {
        open?.compute?.endEncoding()
        open?.compute = nil
        open?.blit?.endEncoding()
        open?.blit = nil
    }

    /// The open compute encoder, created on demand.
    private func computeEncoder() throws -> any MTLComputeCommandEncoder {
        if let e = try openCommandBuffer().compute { return e }
        endEncoders()
        guard let e = open!.commandBuffer.makeComputeCommandEncoder() else {
            throw RuntimeError.outOfMemory("Metal could not create a compute command encoder")
        }
        open!.compute = e
        return e
    }

    /// The open blit encoder, created on demand.
    private func blitEncoder() throws -> any MTLBlitCommandEncoder {
        if let e = try openCommandBuffer().blit { return e }
        endEncoders()
        guard let e = open!.commandBuffer.makeBlitCommandEncoder() else {
            throw RuntimeError.outOfMemory("Metal could not create a blit command encoder")
        }
        open!.blit = e
        return e
    }

    /// The next work id.
    private func issue() -> UInt64 {
        state.locked {
            issued += 1
            return issued
        }
    }

    /// Commits the open command buffer, if any.
    private func commitLocked() {
        guard open != nil else { return }
        endEncoders()
        let o = open!
        open = nil
        let first = o.firstID, last = state.locked { issued }
        let cb = o.commandBuffer
        cb.label = o.labels.first
        cb.encodeSignalEvent(event, value: last)
        let kept = Kept(o.kept), names = o.labels, waits = o.waits, owners = o.owners
        cb.addCompletedHandler { [self] done in
            // Let go of what the work used before it counts as completed: a waiter that returns then finds
            // caller memory no longer in use (nm_buffer_in_use), whenever Metal releases this handler.
            kept.objects = []
            withAutoreleasePool { completed(done, first: first, last: last, names: names, waits: waits, owners: owners) }
        }
        state.locked { inFlight += 1; committedFirsts.append(first) }
        cb.commit()
    }

    // MARK: completion (Metal's completion thread)

    /// Records a finished command buffer: times, failure (its own, or that of other queues' work it waited
    /// for: its results are then suspect too), and completion, which wakes waiters. A handler never waits for
    /// another queue: work whose outcome is not known yet is left to the next wait.
    private func completed(_ done: any MTLCommandBuffer, first: UInt64, last: UInt64, names: [String],
                           waits: [(queue: MetalQueue, id: UInt64)], owners: [nm_owner]) {
        let start = UInt64(max(0, done.gpuStartTime) * 1e9), end = UInt64(max(0, done.gpuEndTime) * 1e9)
        var message: String? = nil
        if done.status == .error {
            let error = done.error
            let kind = GPUErrorKind.of(error.map(commandBufferErrorCode) ?? 1)
            let detail = error.map(describeMetalError) ?? "unknown GPU error"
            let named = error.map(faultingKernels) ?? []
            if kind.deviceLost { metal.markLost(deviceLostMessage(kind, kernel: named.first ?? names.first ?? "?", detail: detail)) }
            let who: String
            if !named.isEmpty {
                who = "kernel " + named.map { "'\($0)'" }.joined(separator: ", ") + " failed on the GPU (named by Metal's encoder "
                    + "execution status)"
            } else {
                // Metal does not say which kernel of the command buffer failed: name them all, blame none.
                who = names.count > 1
                    ? "one of the kernels " + names.map { "'\($0)'" }.joined(separator: ", ") + " of a command buffer failed on the GPU "
                        + "(Metal does not say which; NUMBA_METAL_GPU_DEBUG=1 names it)"
                    : "kernel '\(names.first ?? "?")' failed on the GPU"
            }
            // Metal's own words first (reports cut long messages short), then what the code means.
            message = "\(who) (MTLCommandBufferError \(kind.name), code \(kind.code)): \(detail); \(kind.meaning)"
        }
        var unresolved: [Upstream] = []
        var upstream: String? = nil
        for w in waits {
            switch w.queue.outcome(of: w.id) {
            case nil: unresolved.append(Upstream(queue: w.queue, id: w.id, waiterID: first, owners: owners))
            case .some(nil): break
            case .some(let failure?): upstream = upstream ?? MetalQueue.waitedForFailure(w.id, failure)
            }
        }
        state.update {
            for id in first...max(first, last) where id <= last { record(id, start, end) }
            markCompleted(first, last)
            inFlight -= 1
            if inFlight == 0 { idleKick = true }
            if let m = message {
                failedRanges.append((first, last, m))
                if failedRanges.count > MetalQueue.failuresKept { failedRanges.removeFirst() }
            }
            if let m = message ?? upstream { recordFailure(m, id: first, owners: owners) }
            waitedFor += unresolved
        }
        // Its encoded signal never ran: release the queues waiting for this work (values only grow).
        if done.status == .error { event.signaledValue = last }
        startIdleWork(wait: false)
    }

    /// Records the GPU times of work id in the history ring (state held), growing the ring while ids outrun
    /// it: a queue that runs little work never holds 65,536 entries.
    private func record(_ id: UInt64, _ start: UInt64, _ end: UInt64) {
        if history.count < MetalQueue.historyLength && id >= UInt64(history.count) {
            var size = max(history.count, MetalQueue.historyInitial)
            while UInt64(size) <= id && size < MetalQueue.historyLength { size *= 2 }
            var grown = [(id: UInt64, start: UInt64, end: UInt64)](repeating: (0, 0, 0), count: size)
            for h in history where h.id != 0 { grown[Int(h.id % UInt64(size))] = h }
            history = grown
        }
        history[Int(id % UInt64(history.count))] = (id, start, end)
    }

    /// The GPU times of work id, if the ring still holds them (state held).
    private func recorded(_ id: UInt64) -> (start: UInt64, end: UInt64)? {
        guard !history.isEmpty else { return nil }
        let h = history[Int(id % UInt64(history.count))]
        return h.id == id ? (h.start, h.end) : nil
    }

    // MARK: starting work

    /// Commits the open command buffer if a completed handler left the queue idle and it holds work a
    /// non-batching thread queued. wait: false (a completed handler) gives up when another thread holds
    /// `encoding`: that thread calls this again as it lets go (submitting).
    private func startIdleWork(wait: Bool) {
        let body = { [self] in
            let kicked = state.locked { () -> Bool in
                let k = idleKick && inFlight == 0
                idleKick = false
                return k
            }
            if kicked && open?.unbatched == true { commitLocked() }
        }
        if wait { encoding.locked(body) } else { _ = encoding.lockedIfFree(body) }
    }

    /// Queues work (body, run with `encoding` held), then starts it unless the calling thread batches: the
    /// open command buffer is committed at once when the queue has nothing committed and unfinished, and
    /// otherwise by the completed handler that leaves it so.
    private func submitting<T>(_ body: () throws -> T) throws -> T {
        let batching = nm_thread_batching() != 0
        let result = try encoding.locked { () -> T in
            let r = try body()
            if !batching && open != nil {
                open!.unbatched = true
                if state.locked({ inFlight == 0 }) { commitLocked() }
            }
            return r
        }
        if state.locked({ idleKick }) { startIdleWork(wait: true) }
        return result
    }

    /// Keeps message for each owner's next wait, unless it has an unreported failure already (state held).
    private func recordFailure(_ message: String, id: UInt64, owners: [nm_owner]) {
        for o in owners where failures.count < MetalQueue.failuresKept && !failures.contains(where: { nm_owner_same($0.owner, o) != 0 }) {
            failures.append(Failure(id: id, owner: o, message: message))
        }
    }

    /// Marks [first, last] complete and advances completedThrough over what is now contiguous (state held).
    private func markCompleted(_ first: UInt64, _ last: UInt64) {
        committedFirsts.removeAll { $0 == first }
        completedAhead.append((first, last))
        var advanced = true
        while advanced {
            advanced = false
            if let i = completedAhead.firstIndex(where: { $0.first <= completedThrough + 1 }) {
                completedThrough = max(completedThrough, completedAhead[i].last)
                completedAhead.remove(at: i)
                advanced = true
            }
        }
    }

    /// nil while work id has not completed; then its command buffer's failure, or .some(nil) if it succeeded.
    private func outcome(of id: UInt64) -> String?? {
        state.locked {
            completedThrough >= id ? .some(failedRanges.last(where: { $0.first <= id && id <= $0.last })?.message) : nil
        }
    }

    /// The failure a queue reports for having waited for failed work id of another queue.
    private static func waitedForFailure(_ id: UInt64, _ failure: String) -> String {
        "work on this stream waited for work \(id) of another stream, which failed, so its results may be wrong: \(failure)"
    }

    // MARK: host-side work


    /// Runs body on the host after all earlier work, as one completed work id.
    private func completeOnHost(_ body: () -> Void) -> UInt64 {
        encoding.locked {
            commitLocked()
            let target = state.locked { issued }
            state.wait { completedThrough >= target }
            let start = nm_clock_ns()
            body()
            let end = nm_clock_ns()
            let id = state.update { () -> UInt64 in
                issued += 1
                record(issued, start, end)
                completedThrough = issued
                return issued
            }
            // Queues waiting for this id (encodeWaitForEvent) must see it complete too.
            event.signaledValue = id
            return id
        }
    }

    // MARK: operations

    /// Validates, then encodes into the open compute encoder.
    func dispatch(_ desc: UnsafePointer<nm_dispatch_desc>) throws -> UInt64 {
        try metal.checkUsable()
        let d = try validateDispatch(desc, on: self, pipelines: MetalPipeline.self)
        let pipeline = d.pipeline
        return try submitting {
            let enc = try computeEncoder()
            open!.addOwner()
            enc.setComputePipelineState(pipeline.state)
            for i in 0..<d.bufferCount {
                let b = d.buffer(i)
                enc.setBuffer(b.storage as? any MTLBuffer, offset: Int(d.offset(i)), index: Int(d.slot(i)))
                open!.kept.append(b.keptForWork())
            }
            if let arguments = d.arguments {
                enc.setBytes(arguments.baseAddress!, length: arguments.count, index: Int(d.argumentSlot))
            }
            for slot in 0..<d.threadgroupSlotCount {
                let length = d.threadgroupLength(slot)
                if length > 0 { enc.setThreadgroupMemoryLength(Int(length), index: slot) }
            }
            let g = d.groups, t = d.threads
            if MetalQueue.gpuDebug { enc.pushDebugGroup(d.label) }  // Metal names it if this dispatch faults
            enc.dispatchThreadgroups(MTLSize(width: Int(g.0), height: Int(g.1), depth: Int(g.2)),
                                     threadsPerThreadgroup: MTLSize(width: Int(t.0), height: Int(t.1), depth: Int(t.2)))
            if MetalQueue.gpuDebug { enc.popDebugGroup() }
            open!.kept.append(pipeline)
            if open!.labels.count < 8 { open!.labels.append(d.label) }
            let id = issue()
            open!.dispatches += 1
            if open!.dispatches >= MetalQueue.dispatchesPerCommandBuffer { commitLocked() }
            return id
        }
    }

    /// A blit copy, or a host copy after earlier work when Metal's 4-byte rule is not met.
    func copy(from src: Buffer, srcOffset: UInt64, to dst: Buffer, dstOffset: UInt64, count: UInt64) throws -> UInt64 {
        try metal.checkUsable()
        if count > 0 && srcOffset % 4 == 0 && dstOffset % 4 == 0 && count % 4 == 0,
           let s = src.storage as? any MTLBuffer, let t = dst.storage as? any MTLBuffer {
            return try submitting {
                try blitEncoder().copy(from: s, sourceOffset: Int(srcOffset), to: t, destinationOffset: Int(dstOffset), size: Int(count))
                open!.addOwner()
                open!.kept += [src.keptForWork(), dst.keptForWork()]
                return issue()
            }
        }
        // macOS blits need offsets and sizes that are multiples of 4: copy on the host after earlier work.
        return completeOnHost { if count > 0 { memmove(dst.contents + Int(dstOffset), src.contents + Int(srcOffset), Int(count)) } }
    }

    /// A blit fill, or a host memset after earlier work when Metal's 4-byte rule is not met.
    func fill(_ buffer: Buffer, offset: UInt64, count: UInt64, value: UInt8) throws -> UInt64 {
        try metal.checkUsable()
        if count > 0 && offset % 4 == 0 && count % 4 == 0, let b = buffer.storage as? any MTLBuffer {
            return try submitting {
                try blitEncoder().fill(buffer: b, range: Int(offset)..<Int(offset + count), value: value)
                open!.addOwner()
                open!.kept.append(buffer.keptForWork())
                return issue()
            }
        }
        return completeOnHost { if count > 0 { memset(buffer.contents + Int(offset), Int32(value), Int(count)) } }
    }

    /// A work id in the open command buffer.
    func marker() throws -> UInt64 {
        try metal.checkUsable()
        return try submitting {
            _ = try openCommandBuffer()
            return issue()
        }
    }

    var lastIssued: UInt64 { state.locked { issued } }

    /// Whether the command buffer holding workID has started or finished: committed, with all earlier work of
    /// this queue completed (or workID completed). A command buffer that waits on an event too long fails with
    /// `timeout` (Apple's MTLCommandBufferError.timeout), so a GPU-side wait is encoded only behind such work.
    private func startedOrDone(_ workID: UInt64) -> Bool {
        state.locked { startedOrDone_locked(workID) }
    }

    /// startedOrDone with `state` held.
    private func startedOrDone_locked(_ workID: UInt64) -> Bool {
        guard workID > completedThrough, let first = committedFirsts.last(where: { $0 <= workID }) else { return true }
        return completedThrough + 1 >= first
    }

    /// encodeWaitForEvent on the other queue's shared event, once the other queue's work is committed and
    /// has started; until then the calling thread is held on the host (issue 26 item 8).
    func waitFor(_ other: any Queue, workID: UInt64) throws {
        guard let o = other as? MetalQueue else { throw RuntimeError.invalid("nm_queue_wait_for: the other queue belongs to another device") }
        try metal.checkUsable()
        // The other queue must commit the command buffer holding workID, or we would wait forever.
        try o.flush()
        if o !== self && !o.startedOrDone(workID) {
            // This queue's own work goes first (the other queue's earlier work may wait for it), then the
            // host holds this thread until the other queue's work has started: the GPU-side wait encoded
            // after it cannot outlast Metal's event-wait timeout behind work that has not even begun.
            try flush()
            o.state.wait { o.startedOrDone_locked(workID) }
        }
        try encoding.locked {
            endEncoders()
            _ = try openCommandBuffer()
            open!.commandBuffer.encodeWaitForEvent(o.event, value: workID)
            open!.kept.append(o)
            open!.waits.append((o, workID))
        }
    }

    /// Commits the open command buffer.
    func flush() throws { encoding.locked { commitLocked() } }

    /// Commits, waits for workID (0: everything issued so far) for at most timeoutNs, then reports the calling
    /// thread's first unreported GPU failure up to that id: of its own work, or of other queues' work its work
    /// waited for (its later work then ran on what the failed work left).
    func wait(for workID: UInt64, timeoutNs: UInt64?) throws -> (id: UInt64, done: Bool) {
        try metal.checkUsable()
        let deadline = timeoutNs.map { monotonicSeconds() + Double(max($0, 1)) * 1e-9 }
        let target = try encoding.locked { () -> UInt64 in
            commitLocked()
            let issuedNow = state.locked { issued }
            if workID > issuedNow { throw RuntimeError.invalid("nm_queue_wait: work id \(workID) was never issued on this queue") }
            return workID == 0 ? issuedNow : workID
        }
        if !state.wait(until: { completedThrough >= target }, deadline: deadline) { return (target, false) }
        // Work of other queues that this queue's work waited for: its outcome becomes this queue's.
        let upstream = state.locked { waitedFor.filter { $0.waiterID <= target } }
        for w in upstream {
            if !w.queue.state.wait(until: { w.queue.completedThrough >= w.id }, deadline: deadline) { return (target, false) }
            let failure = w.queue.outcome(of: w.id) ?? nil
            state.locked {
                waitedFor.removeAll { $0.queue === w.queue && $0.id == w.id && $0.waiterID == w.waiterID }
                if let failure { recordFailure(MetalQueue.waitedForFailure(w.id, failure), id: w.waiterID, owners: w.owners) }
            }
        }
        // The GPU refused this process: that, not the kernel the refused command buffer held, is the failure.
        try metal.checkUsable()
        let me = nm_owner_current()
        let mine = state.locked { () -> String? in
            guard let i = failures.firstIndex(where: { $0.id <= target && nm_owner_reports_to($0.owner, me) != 0 }) else { return nil }
            return failures.remove(at: i).message
        }
        if let mine { throw RuntimeError.execution(mine) }
        return (target, true)
    }

    /// A GPU cannot be told to stop a command buffer it has been given.
    func cancel() throws {
        throw RuntimeError.unavailable("nm_queue_cancel: a Metal GPU cannot stop work it has been given; the GPU's watchdog "
            + "ends command buffers that run too long")
    }

    /// Whether workID's command buffer completed.
    func query(_ workID: UInt64) throws -> Bool {
        try state.locked {
            if workID == 0 { return completedThrough >= issued }  // all work issued so far
            if workID > issued { throw RuntimeError.invalid("nm_queue_query: work id \(workID) was never issued on this queue") }
            return workID <= completedThrough
        }
    }

    /// The GPU start/end of workID's command buffer.
    func timestamps(_ workID: UInt64) throws -> (UInt64, UInt64) {
        try state.locked {
            if workID == 0 || workID > issued {
                throw RuntimeError.invalid("nm_queue_timestamps: work id \(workID) was never issued on this queue")
            }
            if workID > completedThrough {
                throw RuntimeError.invalid("nm_queue_timestamps: work \(workID) has not completed; wait for it first")
            }
            guard let h = recorded(workID) else {
                throw RuntimeError.invalid("nm_queue_timestamps: work \(workID) is older than the last \(MetalQueue.historyLength) "
                    + "items this queue keeps timestamps for")
            }
            return (h.start, h.end)
        }
    }
}
