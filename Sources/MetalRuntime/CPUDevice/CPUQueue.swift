// CPUQueue.swift -- the CPU device's queue: validates and records work into the C executor's ring
// (Sources/CPUEngine/cpu_engine.c), retaining every buffer and pipeline the work uses until it completes.
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
    /// The C executor (nm_cq).
    private let cq: OpaquePointer

    /// Starts the executor thread.
    init(cpuDevice device: Device) throws {
        guard let q = nm_cq_new(releaseReference) else { throw RuntimeError.outOfMemory("could not create a queue (thread or memory)") }
        cq = q
        super.init(device: device)
    }

    deinit { nm_cq_destroy(cq) }

    /// The C executor handle.
    private var raw: OpaquePointer { cq }

    /// Keeps object alive until the work item completes.
    @inline(__always)
    private func retain(_ object: AnyObject, in w: UnsafeMutablePointer<nm_work>) {
        let p = Unmanaged.passRetained(object).toOpaque()
        withUnsafeMutableBytes(of: &w.pointee.refs) { $0.storeBytes(of: p, toByteOffset: Int(w.pointee.ref_count) * 8, as: UnsafeMutableRawPointer.self) }
        w.pointee.ref_count += 1
    }

    /// Validates, then records the dispatch in the executor's ring.
    override func dispatch(_ descPtr: UnsafePointer<nm_dispatch_desc>) throws -> UInt64 {
        let d = descPtr.pointee
        guard let ph = d.pipeline else { throw RuntimeError.invalid("nm_queue_dispatch: the pipeline is NULL") }
        guard let pipelineObject = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(ph)).takeUnretainedValue() as? Pipeline else {
            throw RuntimeError.invalid("nm_queue_dispatch: the pipeline handle is not a pipeline")
        }
        guard let pipeline = pipelineObject as? CPUPipeline, pipeline.device === device else {
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipelineObject))': the pipeline was compiled for another device")
        }
        try validateDispatch(d, pipeline: pipeline, device: device, label: dispatchLabel(d, pipeline))
        let analysis = pipeline.kernel.analysis
        var bound: UInt32 = d.arg_length > 0 ? (1 << d.arg_slot) : 0
        for i in 0..<Int(d.buffer_count) { bound |= 1 << d.buffer_slots![i] }
        let missing = analysis.declaredBufferSlots & ~bound
        if missing != 0 {
            let slot = missing.trailingZeroBitCount
            let name = analysis.parameters.first { if case .buffer(let s, _) = $0.binding { return s == slot }; return false }?.name ?? "?"
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))' declares [[buffer(\(slot))]] ('\(name)') but the "
                + "dispatch binds no buffer or argument block there; bind every buffer the kernel declares")
        }
        let tgMissing = analysis.declaredThreadgroupSlots
        if tgMissing != 0 {
            for slot in 0..<31 where tgMissing & (1 << UInt32(slot)) != 0 {
                if slot >= Int(d.threadgroup_memory_count) || d.threadgroup_memory_lengths![slot] == 0 {
                    throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))' declares [[threadgroup(\(slot))]] but the "
                        + "dispatch gives it no memory; pass its length in threadgroup_memory_lengths[\(slot)]")
                }
            }
        }
        guard let w = nm_cq_reserve(raw) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_DISPATCH)
        w.pointee.kernel = UnsafePointer(pipeline.kernel.entry)
        w.pointee.launch.groups = d.groups
        w.pointee.launch.threads = d.threads
        retain(pipeline, in: w)
        withUnsafeMutableBytes(of: &w.pointee.launch.buffers) { slots in
            for i in 0..<Int(d.buffer_count) {
                let b = Unmanaged<Buffer>.fromOpaque(UnsafeRawPointer(d.buffers![i]!)).takeUnretainedValue()
                slots.storeBytes(of: b.contents + Int(d.buffer_offsets![i]), toByteOffset: Int(d.buffer_slots![i]) * 8,
                                 as: UnsafeMutableRawPointer.self)
                retain(b, in: w)
            }
        }
        if d.arg_length > 0 {
            w.pointee.arg_slot = d.arg_slot
            w.pointee.arg_length = d.arg_length
            if d.arg_length > UInt32(NM_WORK_INLINE_ARGS) {
                guard let heap = malloc(Int(d.arg_length)) else {
                    nm_cq_cancel(raw, w)
                    throw RuntimeError.outOfMemory("could not copy the argument block")
                }
                heap.copyMemory(from: d.arg_bytes!, byteCount: Int(d.arg_length))
                w.pointee.arg_heap = heap
            } else {
                withUnsafeMutableBytes(of: &w.pointee.arg_inline) { $0.baseAddress!.copyMemory(from: d.arg_bytes!, byteCount: Int(d.arg_length)) }
            }
        }
        w.pointee.tg_count = d.threadgroup_memory_count
        if d.threadgroup_memory_count > 0 {
            withUnsafeMutableBytes(of: &w.pointee.tg_lengths) {
                $0.baseAddress!.copyMemory(from: d.threadgroup_memory_lengths!, byteCount: Int(d.threadgroup_memory_count) * 4)
            }
        }
        if let label = d.label {
            withUnsafeMutableBytes(of: &w.pointee.label) { dst in
                let n = min(strnlen(label, dst.count - 1), dst.count - 1)
                dst.baseAddress!.copyMemory(from: label, byteCount: n)
                dst[n] = 0
            }
        }
        let id = w.pointee.id
        nm_cq_commit(raw, w)
        device.stats.add(Device.Stat.dispatches.rawValue, 1)
        return id
    }

    /// Records a host memmove run in queue order.
    override func copy(from src: Buffer, srcOffset: UInt64, to dst: Buffer, dstOffset: UInt64, count: UInt64) throws -> UInt64 {
        guard src.device === device, dst.device === device else { throw RuntimeError.invalid("nm_queue_copy: a buffer belongs to another device") }
        try src.checkRange(offset: srcOffset, count: count, what: "nm_queue_copy source")
        try dst.checkRange(offset: dstOffset, count: count, what: "nm_queue_copy destination")
        guard let w = nm_cq_reserve(raw) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_COPY)
        w.pointee.src = UnsafePointer((src.contents + Int(srcOffset)).assumingMemoryBound(to: UInt8.self))
        w.pointee.dst = (dst.contents + Int(dstOffset)).assumingMemoryBound(to: UInt8.self)
        w.pointee.n = count
        retain(src, in: w)
        retain(dst, in: w)
        let id = w.pointee.id
        nm_cq_commit(raw, w)
        return id
    }

    /// Records a host memset run in queue order.
    override func fill(_ buffer: Buffer, offset: UInt64, count: UInt64, value: UInt8) throws -> UInt64 {
        guard buffer.device === device else { throw RuntimeError.invalid("nm_queue_fill: the buffer belongs to another device") }
        try buffer.checkRange(offset: offset, count: count, what: "nm_queue_fill")
        guard let w = nm_cq_reserve(raw) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_FILL)
        w.pointee.dst = (buffer.contents + Int(offset)).assumingMemoryBound(to: UInt8.self)
        w.pointee.n = count
        w.pointee.value = value
        retain(buffer, in: w)
        let id = w.pointee.id
        nm_cq_commit(raw, w)
        return id
    }

    /// Records an item that does nothing but complete in order.
    override func marker() throws -> UInt64 {
        guard let w = nm_cq_reserve(raw) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_MARKER)
        let id = w.pointee.id
        nm_cq_commit(raw, w)
        return id
    }

    /// Records an item that blocks this queue's executor until other's work completes.
    override func waitFor(_ other: Queue, workID: UInt64) throws {
        guard let o = other as? CPUQueue, other.device === device else {
            throw RuntimeError.invalid("nm_queue_wait_for: the other queue belongs to another device")
        }
        if workID == 0 || workID > nm_cq_last_id(o.raw) {
            throw RuntimeError.invalid("nm_queue_wait_for: work id \(workID) was never issued on the other queue")
        }
        if o === self { return } // a queue's own work is already in order
        guard let w = nm_cq_reserve(raw) else { throw RuntimeError.outOfMemory("could not grow the queue") }
        w.pointee.kind = UInt32(NM_WORK_WAIT_FOR)
        w.pointee.other = o.raw
        w.pointee.other_id = workID
        retain(o, in: w)
        nm_cq_commit(raw, w)
    }

    /// Waits for everything committed; reports the first failure since the last wait.
    override func wait() throws {
        var message: UnsafeMutablePointer<CChar>? = nil
        if nm_cq_wait(raw, &message) != 0, let m = message {
            defer { free(m) }
            throw RuntimeError.execution(String(cString: m))
        }
    }

    /// Whether the executor has completed workID.
    override func query(_ workID: UInt64) throws -> Bool {
        let st = nm_cq_query(raw, workID)
        if st < 0 { throw RuntimeError.invalid("nm_queue_query: work id \(workID) was never issued on this queue") }
        return st == 1
    }

    /// Executor start/end times of completed work (last 65,536 items).
    override func timestamps(_ workID: UInt64) throws -> (UInt64, UInt64) {
        var s: UInt64 = 0, e: UInt64 = 0
        switch nm_cq_timestamps(raw, workID, &s, &e) {
        case 0: return (s, e)
        case 1: throw RuntimeError.invalid("nm_queue_timestamps: work \(workID) has not completed; wait for it first")
        case 2: throw RuntimeError.invalid("nm_queue_timestamps: work \(workID) is older than the last \(nm_cq_history_length()) "
            + "items this queue keeps timestamps for")
        default: throw RuntimeError.invalid("nm_queue_timestamps: work id \(workID) was never issued on this queue")
        }
    }

    /// Drains the queue (its failures are dropped: nobody waits for them any more).
    override func close() {
        var message: UnsafeMutablePointer<CChar>? = nil
        _ = nm_cq_wait(raw, &message)
        free(message)
    }
}
