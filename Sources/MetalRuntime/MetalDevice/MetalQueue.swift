// MetalQueue.swift -- one MTLCommandQueue per nm_queue. Dispatches are encoded into an open command buffer
// and compute encoder, committed at flush/wait or every `commitEvery` dispatches; a completed handler
// records status, error and GPU times per command buffer. Cross-queue waits use an MTLSharedEvent that each
// queue signals with the last work id of every command buffer it commits.
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

/// An in-order Metal queue.
final class MetalQueue: Queue, @unchecked Sendable {
    /// Dispatches per command buffer before it is committed without waiting for a flush.
    static let commitEvery = 64
    /// Completed work whose timestamps are kept.
    static let historyLength = 65_536

    /// The Metal command queue.
    private let queue: any MTLCommandQueue
    /// Signalled with the last work id of each committed command buffer.
    let event: any MTLSharedEvent
    /// Guards everything below and signals completion.
    private let state = Monitor()

    // Guarded by `state`.
    /// The open (uncommitted) command buffer.
    private var commandBuffer: (any MTLCommandBuffer)? = nil
    /// The open compute encoder of commandBuffer.
    private var compute: (any MTLComputeCommandEncoder)? = nil
    /// The open blit encoder of commandBuffer.
    private var blit: (any MTLBlitCommandEncoder)? = nil
    /// Dispatches in commandBuffer.
    private var encodedDispatches = 0
    /// Objects commandBuffer's work uses, kept until it completes.
    private var retained: [AnyObject] = []
    /// Kernel labels in commandBuffer (first 8), for error messages.
    private var labels: [String] = []
    /// First work id in commandBuffer.
    private var firstID: UInt64 = 0
    /// Last work id handed out.
    private var lastIssued: UInt64 = 0
    /// Last work id in a committed command buffer.
    private var committedThrough: UInt64 = 0
    /// Last work id known complete.
    private var completedThrough: UInt64 = 0
    /// First failure since the last wait.
    private var failure: String? = nil
    /// Start/end times of recent work ids (ring).
    private var history = [(id: UInt64, start: UInt64, end: UInt64)](repeating: (0, 0, 0), count: MetalQueue.historyLength)

    /// Creates the queue over a Metal command queue.
    init(device: Device, queue: any MTLCommandQueue, event: any MTLSharedEvent) {
        self.queue = queue
        self.event = event
        super.init(device: device)
    }

    // MARK: encoding (state held)

    /// The open command buffer, created on demand.
    private func openCommandBuffer() throws -> any MTLCommandBuffer {
        if let cb = commandBuffer { return cb }
        guard let cb = queue.makeCommandBuffer() else { throw RuntimeError.outOfMemory("Metal could not create a command buffer") }
        commandBuffer = cb
        firstID = lastIssued + 1
        return cb
    }

    /// Ends whichever encoder is open.
    private func endEncoders() {
        compute?.endEncoding()
        compute = nil
        blit?.endEncoding()
        blit = nil
    }

    /// The open compute encoder, created on demand.
    private func computeEncoder() throws -> any MTLComputeCommandEncoder {
        if let e = compute { return e }
        endEncoders()
        guard let e = try openCommandBuffer().makeComputeCommandEncoder() else {
            throw RuntimeError.outOfMemory("Metal could not create a compute command encoder")
        }
        compute = e
        return e
    }

    /// The open blit encoder, created on demand.
    private func blitEncoder() throws -> any MTLBlitCommandEncoder {
        if let e = blit { return e }
        endEncoders()
        guard let e = try openCommandBuffer().makeBlitCommandEncoder() else {
            throw RuntimeError.outOfMemory("Metal could not create a blit command encoder")
        }
        blit = e
        return e
    }

    /// The next work id.
    private func issue() -> UInt64 {
        lastIssued += 1
        return lastIssued
    }

    /// Commits the open command buffer (state held).
    private func commitLocked() {
        guard let cb = commandBuffer else { return }
        endEncoders()
        let first = firstID, last = lastIssued
        let kept = retained, names = labels
        cb.label = names.first
        cb.encodeSignalEvent(event, value: last)
        cb.addCompletedHandler { [self] done in
            let start = UInt64(max(0, done.gpuStartTime) * 1e9), end = UInt64(max(0, done.gpuEndTime) * 1e9)
            var message: String? = nil
            if done.status == .error {
                let detail = done.error.map(describeMetalError) ?? "unknown GPU error"
                let others = names.count > 1 ? " (its command buffer also ran " + names.dropFirst().map { "'\($0)'" }.joined(separator: ", ") + ")" : ""
                message = "kernel '\(names.first ?? "?")' failed on the GPU\(others): \(detail)"
            }
            state.update {
                for id in first...max(first, last) where id <= last {
                    history[Int(id % UInt64(MetalQueue.historyLength))] = (id, start, end)
                }
                completedThrough = max(completedThrough, last)
                if failure == nil, let m = message { failure = m }
            }
            _ = kept
        }
        cb.commit()
        committedThrough = last
        commandBuffer = nil
        retained = []
        labels = []
        encodedDispatches = 0
    }

    /// Flushes, then waits until everything issued so far has completed (state not held).
    private func drain() {
        let target = state.locked { () -> UInt64 in
            commitLocked()
            return lastIssued
        }
        state.wait { completedThrough >= target }
    }

    /// Completes an id that ran on the host (after draining), keeping ids in order.
    private func completeOnHost(_ body: () -> Void) -> UInt64 {
        drain()
        let start = nm_clock_ns()
        body()
        let end = nm_clock_ns()
        var id: UInt64 = 0
        state.update {
            id = issue()
            history[Int(id % UInt64(MetalQueue.historyLength))] = (id, start, end)
            committedThrough = id
            completedThrough = id
            // Queues waiting for this id (encodeWaitForEvent) must see it complete too.
            event.signaledValue = id
        }
        return id
    }

    // MARK: operations

    /// Validates, then encodes into the open compute encoder.
    override func dispatch(_ descPtr: UnsafePointer<nm_dispatch_desc>) throws -> UInt64 {
        let d = descPtr.pointee
        guard let ph = d.pipeline else { throw RuntimeError.invalid("nm_queue_dispatch: the pipeline is NULL") }
        guard let pipelineObject = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(ph)).takeUnretainedValue() as? Pipeline else {
            throw RuntimeError.invalid("nm_queue_dispatch: the pipeline handle is not a pipeline")
        }
        guard let pipeline = pipelineObject as? MetalPipeline, pipeline.device === device else {
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipelineObject))': the pipeline was compiled for another device")
        }
        try validateDispatch(d, pipeline: pipeline, device: device, label: dispatchLabel(d, pipeline))
        let id: UInt64 = try state.locked {
            let enc = try computeEncoder()
            enc.setComputePipelineState(pipeline.state)
            for i in 0..<Int(d.buffer_count) {
                let b = Unmanaged<Buffer>.fromOpaque(UnsafeRawPointer(d.buffers![i]!)).takeUnretainedValue() as! MetalBuffer
                enc.setBuffer(b.mtl, offset: Int(d.buffer_offsets![i]), index: Int(d.buffer_slots![i]))
                retained.append(b)
            }
            if d.arg_length > 0 {
                enc.setBytes(d.arg_bytes!, length: Int(d.arg_length), index: Int(d.arg_slot))
            }
            for i in 0..<Int(d.threadgroup_memory_count) where d.threadgroup_memory_lengths![i] > 0 {
                enc.setThreadgroupMemoryLength((Int(d.threadgroup_memory_lengths![i]) + 15) & ~15, index: i)
            }
            let g = d.groups, t = d.threads
            enc.dispatchThreadgroups(MTLSize(width: Int(g.0), height: Int(g.1), depth: Int(g.2)),
                                     threadsPerThreadgroup: MTLSize(width: Int(t.0), height: Int(t.1), depth: Int(t.2)))
            retained.append(pipeline)
            if labels.count < 8 { labels.append(dispatchLabel(d, pipeline)) }
            let id = issue()
            encodedDispatches += 1
            if encodedDispatches >= MetalQueue.commitEvery { commitLocked() }
            return id
        }
        device.stats.add(Device.Stat.dispatches.rawValue, 1)
        return id
    }

    /// A blit copy, or a host copy after earlier work when Metal's 4-byte rule is not met.
    override func copy(from src: Buffer, srcOffset: UInt64, to dst: Buffer, dstOffset: UInt64, count: UInt64) throws -> UInt64 {
        guard let s = src as? MetalBuffer, let t = dst as? MetalBuffer, s.device === device, t.device === device else {
            throw RuntimeError.invalid("nm_queue_copy: a buffer belongs to another device")
        }
        try src.checkRange(offset: srcOffset, count: count, what: "nm_queue_copy source")
        try dst.checkRange(offset: dstOffset, count: count, what: "nm_queue_copy destination")
        if count > 0 && srcOffset % 4 == 0 && dstOffset % 4 == 0 && count % 4 == 0 {
            return try state.locked {
                try blitEncoder().copy(from: s.mtl, sourceOffset: Int(srcOffset), to: t.mtl, destinationOffset: Int(dstOffset), size: Int(count))
                retained.append(s)
                retained.append(t)
                return issue()
            }
        }
        // macOS blits need offsets and sizes that are multiples of 4: copy on the host after earlier work.
        return completeOnHost { if count > 0 { memmove(t.contents + Int(dstOffset), s.contents + Int(srcOffset), Int(count)) } }
    }

    /// A blit fill, or a host memset after earlier work when Metal's 4-byte rule is not met.
    override func fill(_ buffer: Buffer, offset: UInt64, count: UInt64, value: UInt8) throws -> UInt64 {
        guard let b = buffer as? MetalBuffer, b.device === device else {
            throw RuntimeError.invalid("nm_queue_fill: the buffer belongs to another device")
        }
        try buffer.checkRange(offset: offset, count: count, what: "nm_queue_fill")
        if count > 0 && offset % 4 == 0 && count % 4 == 0 {
            return try state.locked {
                try blitEncoder().fill(buffer: b.mtl, range: Int(offset)..<Int(offset + count), value: value)
                retained.append(b)
                return issue()
            }
        }
        return completeOnHost { if count > 0 { memset(b.contents + Int(offset), Int32(value), Int(count)) } }
    }

    /// A work id in the open command buffer.
    override func marker() throws -> UInt64 {
        try state.locked {
            _ = try openCommandBuffer()
            return issue()
        }
    }

    /// encodeWaitForEvent on the other queue's shared event.
    override func waitFor(_ other: Queue, workID: UInt64) throws {
        guard let o = other as? MetalQueue, o.device === device else {
            throw RuntimeError.invalid("nm_queue_wait_for: the other queue belongs to another device")
        }
        let issued = o.state.locked { o.lastIssued }
        if workID == 0 || workID > issued {
            throw RuntimeError.invalid("nm_queue_wait_for: work id \(workID) was never issued on the other queue")
        }
        if o === self { return }
        // The other queue must have committed the command buffer holding workID, or we would wait forever.
        let needsFlush = o.state.locked { o.committedThrough < workID }
        if needsFlush { try o.flush() }
        try state.locked {
            endEncoders()
            try openCommandBuffer().encodeWaitForEvent(o.event, value: workID)
            retained.append(o)
        }
    }

    /// Commits the open command buffer.
    override func flush() throws { state.locked { commitLocked() } }

    /// Commits and waits; reports the first GPU failure since the last wait.
    override func wait() throws {
        drain()
        let message = state.locked { () -> String? in
            let m = failure
            failure = nil
            return m
        }
        if let message { throw RuntimeError.execution(message) }
    }

    /// Whether workID's command buffer completed.
    override func query(_ workID: UInt64) throws -> Bool {
        try state.locked {
            if workID == 0 { return completedThrough >= lastIssued }  // all work issued so far
            if workID > lastIssued { throw RuntimeError.invalid("nm_queue_query: work id \(workID) was never issued on this queue") }
            return workID <= completedThrough
        }
    }

    /// The GPU start/end of workID's command buffer.
    override func timestamps(_ workID: UInt64) throws -> (UInt64, UInt64) {
        try state.locked {
            if workID == 0 || workID > lastIssued {
                throw RuntimeError.invalid("nm_queue_timestamps: work id \(workID) was never issued on this queue")
            }
            if workID > completedThrough {
                throw RuntimeError.invalid("nm_queue_timestamps: work \(workID) has not completed; wait for it first")
            }
            let h = history[Int(workID % UInt64(MetalQueue.historyLength))]
            if h.id != workID {
                throw RuntimeError.invalid("nm_queue_timestamps: work \(workID) is older than the last \(MetalQueue.historyLength) "
                    + "items this queue keeps timestamps for")
            }
            return (h.start, h.end)
        }
    }

    /// Commits and waits for everything.
    override func close() { drain() }
}
