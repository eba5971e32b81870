// Queue.swift -- in-order work queues (one per stream), and the one place a dispatch descriptor is
// checked: each queue's dispatch starts with validateDispatch, which turns an nm_dispatch_desc into a
// Dispatch whose handles are resolved (the pipeline as the queue's own kind) and whose limits hold, so
// that the queue only encodes it. These checks are the last line of defence for
// what the caller could not know or got wrong; the host layer checks its launches before it gets here.
import CPUEngine

// MARK: - Queue

/// An in-order queue of work on one device.
protocol Queue: AnyObject {
    /// The device whose work this queue carries.
    var device: any Device { get }
    /// Validates (validateDispatch) and enqueues a dispatch; returns its work id.
    func dispatch(_ desc: UnsafePointer<nm_dispatch_desc>) throws -> UInt64
    /// Enqueues a buffer-to-buffer copy (ranges already checked).
    func copy(from src: Buffer, srcOffset: UInt64, to dst: Buffer, dstOffset: UInt64, count: UInt64) throws -> UInt64
    /// Enqueues a byte fill (range already checked).
    func fill(_ buffer: Buffer, offset: UInt64, count: UInt64, value: UInt8) throws -> UInt64
    /// Enqueues a marker that completes after all earlier work.
    func marker() throws -> UInt64
    /// Makes later work on this queue wait for other's work id (same device, id already issued).
    func waitFor(_ other: any Queue, workID: UInt64) throws
    /// The last work id issued on this queue (0 before any).
    var lastIssued: UInt64 { get }
    /// Submits encoded work without waiting.
    func flush() throws
    /// Flushes, then waits until work workID (0: everything issued so far) has completed, or for at most
    /// timeoutNs (nil: no limit). Returns the id waited for and whether it completed. Once it has, throws
    /// NM_ERR_EXECUTION naming the first failure, up to that id, of work the calling thread submitted (or
    /// whose submitting thread has exited) that no wait reported yet; other threads' failures stay theirs.
    func wait(for workID: UInt64, timeoutNs: UInt64?) throws -> (id: UInt64, done: Bool)
    /// Abandons the work that has not completed (the failures go to its submitters, the caller's excepted),
    /// or NM_ERR_UNAVAILABLE where the device cannot stop work it has started.
    func cancel() throws
    /// Whether work id has completed (0: everything issued so far).
    func query(_ workID: UInt64) throws -> Bool
    /// Device start/end of completed work, in nm_now_ns's base.
    func timestamps(_ workID: UInt64) throws -> (UInt64, UInt64)
}

// MARK: - A validated dispatch

/// A dispatch descriptor that validateDispatch accepted. Its pointers are the caller's, valid for the
/// duration of the nm_queue_dispatch call only.
struct Dispatch<P: Pipeline> {
    /// The caller's descriptor.
    let desc: nm_dispatch_desc
    /// Its pipeline, of the queue's kind and device.
    let pipeline: P
    /// Bit i set when the kernel declares [[threadgroup(i)]].
    let declaredThreadgroupSlots: UInt32

    /// How many buffers are bound.
    var bufferCount: Int { Int(desc.buffer_count) }
    /// The i-th bound buffer (a checked handle of the queue's device).
    func buffer(_ i: Int) -> Buffer { Unmanaged<Buffer>.fromOpaque(UnsafeRawPointer(desc.buffers![i]!)).takeUnretainedValue() }
    /// The byte offset the i-th buffer is bound at.
    func offset(_ i: Int) -> UInt64 { desc.buffer_offsets![i] }
    /// The [[buffer(slot)]] index of the i-th buffer.
    func slot(_ i: Int) -> UInt32 { desc.buffer_slots![i] }
    /// The argument block (setBytes), if any.
    var arguments: UnsafeRawBufferPointer? {
        desc.arg_length > 0 ? UnsafeRawBufferPointer(start: desc.arg_bytes, count: Int(desc.arg_length)) : nil
    }
    /// The argument block's [[buffer(slot)]] index.
    var argumentSlot: UInt32 { desc.arg_slot }
    /// Threadgroup-memory slots to bind: 0..<threadgroupSlotCount.
    var threadgroupSlotCount: Int {
        max(Int(desc.threadgroup_memory_count), 32 - declaredThreadgroupSlots.leadingZeroBitCount)
    }
    /// Bytes to bind at [[threadgroup(slot)]]: the launch's length rounded up to 16 (Metal's granularity);
    /// a slot the kernel declares but the launch gave no memory gets 16 bytes, so that it is always bound
    /// (a kernel declaring dynamic shared memory may be launched with none). 0: nothing to bind.
    func threadgroupLength(_ slot: Int) -> UInt64 {
        let asked = slot < Int(desc.threadgroup_memory_count) ? desc.threadgroup_memory_lengths![slot] : 0
        if asked > 0 { return (UInt64(asked) + 15) & ~15 }
        return declaredThreadgroupSlots & (1 << UInt32(slot)) != 0 ? 16 : 0
    }
    /// Threadgroups per grid.
    var groups: (UInt32, UInt32, UInt32) { desc.groups }
    /// Threads per threadgroup.
    var threads: (UInt32, UInt32, UInt32) { desc.threads }
    /// The name errors give the dispatch: its label, else the kernel function name.
    var label: String { dispatchLabel(desc, pipeline) }
}

/// The name errors give a dispatch: its label, else the kernel function name.
func dispatchLabel(_ desc: nm_dispatch_desc, _ pipeline: any Pipeline) -> String {
    desc.label.map { String(cString: $0) } ?? pipeline.kernelName
}

// MARK: - Validation

/// Checks a dispatch for queue, whose pipelines are P, before anything is queued, as Metal's validation layer
/// would (a GPU would otherwise fault, hang or read garbage), and counts it; every message says what, the
/// limit and what to do.
func validateDispatch<P: Pipeline>(_ desc: UnsafePointer<nm_dispatch_desc>, on queue: any Queue, pipelines: P.Type) throws -> Dispatch<P> {
    let d = desc.pointee
    guard let ph = d.pipeline else { throw RuntimeError.invalid("nm_queue_dispatch: the pipeline is NULL") }
    let object = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(ph)).takeUnretainedValue()
    guard let pipeline = object as? P else {
        guard let other = object as? any Pipeline else { throw RuntimeError.invalid("nm_queue_dispatch: the pipeline handle is not a pipeline") }
        throw RuntimeError.invalid("kernel '\(dispatchLabel(d, other))': the pipeline was compiled for another device")
    }
    let bindings = pipeline.bindings
    let dispatch = Dispatch(desc: d, pipeline: pipeline, declaredThreadgroupSlots: bindings.threadgroupSlots)
    let device = queue.device
    if pipeline.device !== device {
        throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': the pipeline was compiled for another device")
    }
    let t = d.threads, g = d.groups
    if t.0 == 0 || t.1 == 0 || t.2 == 0 || g.0 == 0 || g.1 == 0 || g.2 == 0 {
        throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': launch with groups (\(g.0), \(g.1), \(g.2)) and threads (\(t.0), \(t.1), "
            + "\(t.2)) has a zero dimension; every dimension must be at least 1")
    }
    let perGroup = UInt64(t.0) * UInt64(t.1) * UInt64(t.2)
    let maxThreads = UInt64(pipeline.info.max_total_threads_per_threadgroup)
    if perGroup > maxThreads {
        throw RuntimeError.limit("kernel '\(dispatchLabel(d, pipeline))': \(perGroup) threads per threadgroup (\(t.0)x\(t.1)x\(t.2)) exceeds this "
            + "pipeline's maximum of \(maxThreads); use smaller threadgroups and more of them")
    }
    let totalGroups = UInt64(g.0) * UInt64(g.1) * UInt64(g.2)
    if totalGroups > UInt64(UInt32.max) {
        throw RuntimeError.limit("kernel '\(dispatchLabel(d, pipeline))': \(totalGroups) threadgroups exceed the 2^32-1 this runtime supports")
    }
    if d.arg_length > UInt32(NM_MAX_ARGUMENT_BYTES) {
        throw RuntimeError.limit("kernel '\(dispatchLabel(d, pipeline))': argument block of \(d.arg_length) bytes exceeds Metal's setBytes limit of "
            + "\(NM_MAX_ARGUMENT_BYTES) bytes; pass large data in a buffer")
    }
    if d.arg_length > 0 && d.arg_bytes == nil {
        throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': arg_length is \(d.arg_length) but arg_bytes is NULL")
    }
    if d.arg_length > 0 && d.arg_slot > 30 {
        throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': argument block slot \(d.arg_slot) is out of range; Metal buffer slots are 0..30")
    }
    if d.buffer_count > UInt32(NM_MAX_BUFFER_SLOTS) {
        throw RuntimeError.limit("kernel '\(dispatchLabel(d, pipeline))': \(d.buffer_count) buffers exceed Metal's \(NM_MAX_BUFFER_SLOTS) buffer slots; "
            + "pass fewer arrays per kernel")
    }
    if d.buffer_count > 0 && (d.buffers == nil || d.buffer_offsets == nil || d.buffer_slots == nil) {
        throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': buffer_count is \(d.buffer_count) but a buffer array is NULL")
    }
    var bound: UInt32 = d.arg_length > 0 ? (1 << d.arg_slot) : 0
    for i in 0..<Int(d.buffer_count) {
        let slot = d.buffer_slots![i]
        if slot > 30 {
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': buffer slot \(slot) is out of range; Metal buffer slots are 0..30 "
                + "(at most 31 buffers per kernel)")
        }
        if bound & (1 << slot) != 0 {
            let what = d.arg_length > 0 && slot == d.arg_slot ? "the argument block's slot" : "another buffer's slot"
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': buffer slot \(slot) is bound twice (it is also \(what)); give every "
                + "buffer its own [[buffer(i)]] index")
        }
        bound |= 1 << slot
        guard let handle = d.buffers![i] else {
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': buffer \(i) (slot \(slot)) is NULL")
        }
        guard let buffer = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue() as? Buffer else {
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': buffer \(i) (slot \(slot)) is not a buffer handle")
        }
        if buffer.device !== device {
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': buffer \(i) (slot \(slot)) belongs to another device")
        }
        let offset = d.buffer_offsets![i]
        if offset > buffer.length {
            throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': buffer \(i) (slot \(slot)) is bound at offset \(offset), beyond its "
                + "length of \(buffer.length) bytes")
        }
    }
    let unbound = bindings.bufferSlots & ~bound
    if unbound != 0 {
        let slot = unbound.trailingZeroBitCount
        throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))' declares [[buffer(\(slot))]] ('\(bindings.bufferName(slot))') but the "
            + "dispatch binds no buffer or argument block there; bind every buffer the kernel declares")
    }
    if d.threadgroup_memory_count > UInt32(NM_MAX_THREADGROUP_MEMORY_SLOTS) {
        throw RuntimeError.limit("kernel '\(dispatchLabel(d, pipeline))': \(d.threadgroup_memory_count) threadgroup memory slots exceed Metal's "
            + "\(NM_MAX_THREADGROUP_MEMORY_SLOTS)")
    }
    if d.threadgroup_memory_count > 0 && d.threadgroup_memory_lengths == nil {
        throw RuntimeError.invalid("kernel '\(dispatchLabel(d, pipeline))': threadgroup_memory_count is \(d.threadgroup_memory_count) but the lengths are NULL")
    }
    var dynamic: UInt64 = 0
    for slot in 0..<dispatch.threadgroupSlotCount { dynamic += dispatch.threadgroupLength(slot) }
    let total = dynamic + pipeline.info.static_threadgroup_memory
    if total > device.info.max_threadgroup_memory {
        throw RuntimeError.limit("kernel '\(dispatchLabel(d, pipeline))': \(total) bytes of threadgroup memory (\(pipeline.info.static_threadgroup_memory) "
            + "static + \(dynamic) dynamic, each dynamic slot rounded up to 16 and at least 16 when declared) exceed the device's \(device.info.max_threadgroup_memory); "
            + "use smaller shared arrays or fewer threads per threadgroup")
    }
    device.stats.add(DeviceStat.dispatches.rawValue, 1)
    return dispatch
}
