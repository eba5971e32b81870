// Queue.swift -- in-order work queues (one per stream) and the dispatch validation both devices share.
import CPUEngine

// MARK: - Queue

/// An in-order queue of work. Subclasses implement each operation for their device.
class Queue {
    /// The device whose work this queue carries.
    let device: Device

    /// Creates a queue on device.
    init(device: Device) { self.device = device }

    /// Validates and enqueues a dispatch; returns its work id.
    func dispatch(_ desc: UnsafePointer<nm_dispatch_desc>) throws -> UInt64 { throw RuntimeError.internal("dispatch") }
    /// Enqueues a buffer-to-buffer copy.
    func copy(from src: Buffer, srcOffset: UInt64, to dst: Buffer, dstOffset: UInt64, count: UInt64) throws -> UInt64 {
        throw RuntimeError.internal("copy")
    }
    /// Enqueues a byte fill.
    func fill(_ buffer: Buffer, offset: UInt64, count: UInt64, value: UInt8) throws -> UInt64 { throw RuntimeError.internal("fill") }
    /// Enqueues a marker that completes after all earlier work.
    func marker() throws -> UInt64 { throw RuntimeError.internal("marker") }
    /// Makes later work on this queue wait for other's work id.
    func waitFor(_ other: Queue, workID: UInt64) throws { throw RuntimeError.internal("waitFor") }
    /// Submits encoded work without waiting.
    func flush() throws {}
    /// Flushes and waits; throws NM_ERR_EXECUTION naming the first failed kernel since the last wait.
    func wait() throws {}
    /// Whether work id has completed.
    func query(_ workID: UInt64) throws -> Bool { throw RuntimeError.internal("query") }
    /// Device start/end of completed work, in nm_now_ns's base.
    func timestamps(_ workID: UInt64) throws -> (UInt64, UInt64) { throw RuntimeError.internal("timestamps") }
    /// Waits for outstanding work before the handle goes away.
    func close() {}
}

// MARK: - Dispatch validation (both devices)

/// Checks a dispatch against the device and pipeline limits before anything is queued, as Metal's
/// validation layer would; every message says what, the limit and what to do.
func validateDispatch(_ d: nm_dispatch_desc, pipeline: Pipeline, device: Device, label: @autoclosure () -> String) throws {
    let t = d.threads, g = d.groups
    if t.0 == 0 || t.1 == 0 || t.2 == 0 || g.0 == 0 || g.1 == 0 || g.2 == 0 {
        throw RuntimeError.invalid("kernel '\(label())': launch with groups (\(g.0), \(g.1), \(g.2)) and threads (\(t.0), \(t.1), "
            + "\(t.2)) has a zero dimension; every dimension must be at least 1")
    }
    let perGroup = UInt64(t.0) * UInt64(t.1) * UInt64(t.2)
    let maxThreads = UInt64(pipeline.info.max_total_threads_per_threadgroup)
    if perGroup > maxThreads {
        throw RuntimeError.limit("kernel '\(label())': \(perGroup) threads per threadgroup (\(t.0)x\(t.1)x\(t.2)) exceeds this "
            + "pipeline's maximum of \(maxThreads); use smaller threadgroups and more of them")
    }
    let totalGroups = UInt64(g.0) * UInt64(g.1) * UInt64(g.2)
    if totalGroups > UInt64(UInt32.max) || perGroup * totalGroups / perGroup != totalGroups {
        throw RuntimeError.limit("kernel '\(label())': \(totalGroups) threadgroups exceed the 2^32-1 this runtime supports")
    }
    if d.arg_length > UInt32(NM_MAX_ARGUMENT_BYTES) {
        throw RuntimeError.limit("kernel '\(label())': argument block of \(d.arg_length) bytes exceeds Metal's setBytes limit of "
            + "\(NM_MAX_ARGUMENT_BYTES) bytes; pass large data in a buffer")
    }
    if d.arg_length > 0 && d.arg_bytes == nil {
        throw RuntimeError.invalid("kernel '\(label())': arg_length is \(d.arg_length) but arg_bytes is NULL")
    }
    if d.arg_length > 0 && d.arg_slot > 30 {
        throw RuntimeError.invalid("kernel '\(label())': argument block slot \(d.arg_slot) is out of range; Metal buffer slots are 0..30")
    }
    if d.buffer_count > UInt32(NM_MAX_BUFFER_SLOTS) {
        throw RuntimeError.limit("kernel '\(label())': \(d.buffer_count) buffers exceed Metal's \(NM_MAX_BUFFER_SLOTS) buffer slots; "
            + "pass fewer arrays per kernel")
    }
    if d.buffer_count > 0 && (d.buffers == nil || d.buffer_offsets == nil || d.buffer_slots == nil) {
        throw RuntimeError.invalid("kernel '\(label())': buffer_count is \(d.buffer_count) but a buffer array is NULL")
    }
    var used: UInt32 = d.arg_length > 0 ? (1 << d.arg_slot) : 0
    for i in 0..<Int(d.buffer_count) {
        let slot = d.buffer_slots![i]
        if slot > 30 {
            throw RuntimeError.invalid("kernel '\(label())': buffer slot \(slot) is out of range; Metal buffer slots are 0..30 "
                + "(at most 31 buffers per kernel)")
        }
        if used & (1 << slot) != 0 {
            let what = d.arg_length > 0 && slot == d.arg_slot ? "the argument block's slot" : "another buffer's slot"
            throw RuntimeError.invalid("kernel '\(label())': buffer slot \(slot) is bound twice (it is also \(what)); give every "
                + "buffer its own [[buffer(i)]] index")
        }
        used |= 1 << slot
        guard let handle = d.buffers![i] else {
            throw RuntimeError.invalid("kernel '\(label())': buffer \(i) (slot \(slot)) is NULL")
        }
        guard let buffer = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue() as? Buffer else {
            throw RuntimeError.invalid("kernel '\(label())': buffer \(i) (slot \(slot)) is not a buffer handle")
        }
        if buffer.device !== device {
            throw RuntimeError.invalid("kernel '\(label())': buffer \(i) (slot \(slot)) belongs to another device")
        }
        let offset = d.buffer_offsets![i]
        if offset > buffer.length {
            throw RuntimeError.invalid("kernel '\(label())': buffer \(i) (slot \(slot)) is bound at offset \(offset), beyond its "
                + "length of \(buffer.length) bytes")
        }
    }
    if d.threadgroup_memory_count > UInt32(NM_MAX_THREADGROUP_MEMORY_SLOTS) {
        throw RuntimeError.limit("kernel '\(label())': \(d.threadgroup_memory_count) threadgroup memory slots exceed Metal's "
            + "\(NM_MAX_THREADGROUP_MEMORY_SLOTS)")
    }
    if d.threadgroup_memory_count > 0 && d.threadgroup_memory_lengths == nil {
        throw RuntimeError.invalid("kernel '\(label())': threadgroup_memory_count is \(d.threadgroup_memory_count) but the lengths are NULL")
    }
    var dynamic: UInt64 = 0
    for i in 0..<Int(d.threadgroup_memory_count) {
        dynamic += (UInt64(d.threadgroup_memory_lengths![i]) + 15) & ~15
    }
    let total = dynamic + pipeline.info.static_threadgroup_memory
    if total > device.info.max_threadgroup_memory {
        throw RuntimeError.limit("kernel '\(label())': \(total) bytes of threadgroup memory (\(pipeline.info.static_threadgroup_memory) "
            + "static + \(dynamic) dynamic, each dynamic slot rounded up to 16) exceed the device's \(device.info.max_threadgroup_memory); "
            + "use smaller shared arrays or fewer threads per threadgroup")
    }
}

/// The name a dispatch reports in errors: its label, else the kernel function name.
@inline(__always)
func dispatchLabel(_ d: nm_dispatch_desc, _ pipeline: Pipeline) -> String {
    if let l = d.label { return String(cString: l) }
    return pipeline.kernelName
}
