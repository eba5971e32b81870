// CPUQueue.swift -- the CPU device's queue: records validated work into the C executor's ring
// (Sources/CPUEngine/cpu_queue.c), retaining every buffer and pipeline the work uses until it completes.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPUEngine

/// Releases one retained runtime object; called by the executor when work completes.
private let releaseReference: @convention(c) (UnsafeMutableRawPointer?) -> Void = { p in
    if let p { Unmanaged<AnyObject>.fromOpaque(p).release() }
}

/// An in-order queue executed by its own executor thread.
final class CPUQueue: Queue {
    let device: any Device
    /// The C executor (nm_cq).
    private let cq: OpaquePointer
    /// The per-dispatch time limit in nanoseconds (0: none), read at each dispatch.
    private let timeLimit: () -> UInt64

    /// Starts the executor thread.
    init(device: any Device, timeLimit: @escaping () -> UInt64) throws {
        guard let q = nm_cq_new(releaseReference) else { throw RuntimeError.outOfMemory("could not create a queue (thread or memory)") }
        cq = q
        self.device = device
        self.timeLimit = timeLimit
    }

    /// The executor finishes what is queued, then frees itself: letting go never blocks.
    deinit { nm_cq_release(cq) }

    /// Keeps object alive until the work item completes (at most 33 per item: 31 buffers, a pipeline, a queue).
    @inline(__always)
    private func keep(_ object: AnyObject, in w: UnsafeMutablePointer<nm_work>) {
        let p = Unmanaged.passRetained(object).toOpaque()
        if nm_work_keep(w, p) != 0 { Unmanaged<AnyObject>.fromOpaque(p).release() }
    }

    /// Validates, then records the dispatch in the executor's ring.
    func dispatch(_ desc: UnsafePointer<nm_dispatch_desc>) throws -> UInt64 {
        let d = try validateDispatch(desc, on: self, pipelines: CPUPipeline.self)
        let pipeline = d.pipeline
        guard let w = nm_cq_reserve(cq) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_DISPATCH)
        w.pointee.time_limit_ns = timeLimit()
        w.pointee.kernel = UnsafePointer(pipeline.kernel.entry)
        w.pointee.launch.groups = d.groups
        w.pointee.launch.threads = d.threads
        keep(pipeline, in: w)
        for i in 0..<d.bufferCount {
            let b = d.buffer(i)
            nm_launch_bind_buffer(&w.pointee.launch, d.slot(i), b.contents + Int(d.offset(i)))
            keep(b.keptForWork(), in: w)
        }
        if let arguments = d.arguments {
            w.pointee.arg_slot = d.argumentSlot
            w.pointee.arg_length = UInt32(arguments.count)
            if let inline = nm_work_inline_arguments(w, UInt32(arguments.count)) {
                inline.copyMemory(from: arguments.baseAddress!, byteCount: arguments.count)
            } else {
                guard let heap = malloc(arguments.count) else {
                    nm_cq_abandon(cq, w)
                    throw RuntimeError.outOfMemory("could not copy the argument block")
                }
                heap.copyMemory(from: arguments.baseAddress!, byteCount: arguments.count)
                w.pointee.arg_heap = heap
            }
        }
        for slot in 0..<d.threadgroupSlotCount {
            let length = d.threadgroupLength(slot)
            if length > 0 { nm_work_set_threadgroup_length(w, UInt32(slot), UInt32(length)) }
        }
        if let label = d.desc.label { nm_work_set_label(w, label) }
        let id = w.pointee.id
        nm_cq_commit(cq, w)
        return id
    }

    /// Records a host memmove run in queue order.
    func copy(from src: Buffer, srcOffset: UInt64, to dst: Buffer, dstOffset: UInt64, count: UInt64) throws -> UInt64 {
        guard let w = nm_cq_reserve(cq) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_COPY)
        w.pointee.src = UnsafePointer((src.contents + Int(srcOffset)).assumingMemoryBound(to: UInt8.self))
        w.pointee.dst = (dst.contents + Int(dstOffset)).assumingMemoryBound(to: UInt8.self)
        w.pointee.n = count
        keep(src.keptForWork(), in: w)
        keep(dst.keptForWork(), in: w)
        let id = w.pointee.id
        nm_cq_commit(cq, w)
        return id
    }

    /// Records a host memset run in queue order.
    func fill(_ buffer: Buffer, offset: UInt64, count: UInt64, value: UInt8) throws -> UInt64 {
        guard let w = nm_cq_reserve(cq) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_FILL)
        w.pointee.dst = (buffer.contents + Int(offset)).assumingMemoryBound(to: UInt8.self)
        w.pointee.n = count
        w.pointee.value = value
        keep(buffer.keptForWork(), in: w)
        let id = w.pointee.id
        nm_cq_commit(cq, w)
        return id
    }

    /// Records an item that does nothing but complete in order.
    func marker() throws -> UInt64 {
        guard let w = nm_cq_reserve(cq) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_MARKER)
        let id = w.pointee.id
        nm_cq_commit(cq, w)
        return id
    }

    var lastIssued: UInt64 { nm_cq_last_id(cq) }

    /// Records an item that blocks this queue's executor until other's work completes.
    func waitFor(_ other: any Queue, workID: UInt64) throws {
        guard let o = other as? CPUQueue else { throw RuntimeError.invalid("nm_queue_wait_for: the other queue belongs to another device") }
        guard let w = nm_cq_reserve(cq) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_WAIT_FOR)
        w.pointee.other = o.cq
        w.pointee.other_id = workID
        keep(o, in: w)
        nm_cq_commit(cq, w)
    }

    /// Work is executed as soon as it is recorded: nothing to submit.
    func flush() throws {}

    /// Waits for workID (0: everything committed) up to timeoutNs; reports the calling thread's first
    /// unreported failure up to that id.
    func wait(for workID: UInt64, timeoutNs: UInt64?) throws -> (id: UInt64, done: Bool) {
        var id = workID
        var message: UnsafeMutablePointer<CChar>? = nil
        let deadline = timeoutNs.map { nm_clock_ns() &+ max($0, 1) } ?? 0
        switch nm_cq_wait(cq, &id, deadline, nm_owner_current(), &message) {
        case NM_CQ_TIMED_OUT: return (id, false)
        case NM_CQ_FAILED:
            defer { free(message) }
            throw RuntimeError.execution(message.map { String(cString: $0) } ?? "a kernel failed")
        default: return (id, true)
        }
    }

    /// Stops the running dispatch and skips the rest of what is committed.
    func cancel() throws {
        if nm_cq_cancel(cq, nm_owner_current(), nm_clock_ns() + 5_000_000_000) != 0 {
            throw RuntimeError.execution("nm_queue_cancel: the queue's running work did not stop within 5 s (a signal "
                + "handler for SIGURG that does not pass the signal on keeps the CPU device from interrupting kernels)")
        }
    }

    /// Whether the executor has completed workID.
    func query(_ workID: UInt64) throws -> Bool {
        let st = nm_cq_query(cq, workID)
        if st < 0 { throw RuntimeError.invalid("nm_queue_query: work id \(workID) was never issued on this queue") }
        return st == 1
    }

    /// Executor start/end times of completed work (last 65,536 items).
    func timestamps(_ workID: UInt64) throws -> (UInt64, UInt64) {
        var s: UInt64 = 0, e: UInt64 = 0
        switch nm_cq_timestamps(cq, workID, &s, &e) {
        case 0: return (s, e)
        case 1: throw RuntimeError.invalid("nm_queue_timestamps: work \(workID) has not completed; wait for it first")
        case 2: throw RuntimeError.invalid("nm_queue_timestamps: work \(workID) is older than the last \(nm_cq_history_length()) "
            + "items this queue keeps timestamps for")
        default: throw RuntimeError.invalid("nm_queue_timestamps: work id \(workID) was never issued on this queue")
        }
    }
}
