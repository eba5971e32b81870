// ABI.swift -- the C ABI (Sources/CPUEngine/include/numba_metal_runtime.h) as @_cdecl functions.
// Handles are retained Swift objects passed as opaque pointers; every call returns an nm_status and
// leaves a message for nm_last_error() (implemented in C) when it fails. Nothing here traps on bad input.
// Every entry point runs inside an autorelease pool: Python's threads have none, and Metal returns
// autoreleased objects (command buffers, encoders, errors) that would otherwise live until the thread exits.
// In a child forked from a process that had opened a device, every call fails with NM_ERR_FORKED and
// releasing does nothing: the runtime's threads did not survive the fork and its locks may be held forever.
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPUEngine

// MARK: - Plumbing

/// Runs body in an autorelease pool, turning a thrown RuntimeError into its status plus the thread's message.
@inline(__always)
private func guarded(_ body: () throws -> Void) -> nm_status {
    if nm_forked_child() != 0 {
        nm_set_last_error(forkedMessage)
        return NM_ERR_FORKED
    }
    return withAutoreleasePool {
        do {
            try body()
            return NM_OK
        } catch let e as RuntimeError {
            nm_set_last_error(e.message)
            return e.status
        } catch {
            nm_set_last_error("internal error: \(error)")
            return NM_ERR_INTERNAL
        }
    }
}

/// The object behind a handle (not retained), or an NM_ERR_INVALID_ARGUMENT naming the call. T is a class
/// or a class-bound protocol's existential.
@inline(__always)
private func object<T>(_ handle: OpaquePointer?, _ type: T.Type, _ call: StaticString) throws -> T {
    guard let h = handle else { throw RuntimeError.invalid("\(call): the \(kind(T.self)) handle is NULL") }
    guard let o = Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(h)).takeUnretainedValue() as? T else {
        throw RuntimeError.invalid("\(call): the handle is not a \(kind(T.self)) (a handle of another kind was passed)")
    }
    return o
}

/// A handle kind's name for messages ("Device", not "any Device").
private func kind<T>(_ type: T.Type) -> String {
    let name = "\(type)"
    return name.hasPrefix("any ") ? String(name.dropFirst(4)) : name
}

/// A new owned handle for object.
@inline(__always)
private func handle(_ o: AnyObject) -> OpaquePointer { OpaquePointer(Unmanaged.passRetained(o).toOpaque()) }

/// What every call answers in a forked child.
private let forkedMessage = "numba-metal cannot be used in a process forked from one that had already opened a device "
    + "(its device threads do not survive fork()): start worker processes with the 'spawn' (or 'forkserver') start "
    + "method, e.g. multiprocessing.get_context('spawn').Pool(...) or multiprocessing.set_start_method('spawn'), "
    + "or fork before numba-metal first opens a device"

/// Releases an owned handle (NULL is ignored; nothing is released in a forked child).
@inline(__always)
private func releaseHandle(_ h: OpaquePointer?) {
    if let h, nm_forked_child() == 0 { withAutoreleasePool { Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(h)).release() } }
}

/// Checks an out-pointer.
@inline(__always)
private func out<T>(_ p: UnsafeMutablePointer<T>?, _ call: StaticString) throws -> UnsafeMutablePointer<T> {
    guard let p else { throw RuntimeError.invalid("\(call): the output pointer is NULL") }
    return p
}

// MARK: - Library

/// The ABI version this library implements (NM_ABI_VERSION).
@_cdecl("nm_abi_version")
public func nmAbiVersion() -> UInt32 { withAutoreleasePool { UInt32(NM_ABI_VERSION) } }

/// `<cache>` by the one rule (ObjectCache.root()), for Python's disk cache and the advisor: its length, 0 without
/// one; written with its NUL terminator when it fits in `capacity` bytes.
@_cdecl("nm_cache_root")
public func nmCacheRoot(_ out: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
    withAutoreleasePool {
        guard let root = ObjectCache.root() else { return 0 }
        let bytes = Array(root.utf8)
        if let out, bytes.count < capacity {
            for (i, b) in bytes.enumerated() { out[i] = CChar(bitPattern: b) }
            out[bytes.count] = 0
        }
        return bytes.count
    }
}

/// Host monotonic clock in nanoseconds; the base of work timestamps.
@_cdecl("nm_now_ns")
public func nmNowNs() -> UInt64 { withAutoreleasePool { nm_clock_ns() } }

/// The CPU device's clang: path, version, origin, and the candidates skipped before it (ClangToolchain.swift).
@_cdecl("nm_cpu_compiler_info")
public func nmCpuCompilerInfo(_ out: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> nm_status {
    guarded {
        guard let out, capacity > 0 else { throw RuntimeError.invalid("nm_cpu_compiler_info: the output buffer is NULL or empty") }
        let text = Array(try ClangToolchain.shared.describe(cache: ObjectCache.open()).utf8.prefix(capacity - 1))
        for (i, byte) in text.enumerated() { out[i] = CChar(bitPattern: byte) }
        out[text.count] = 0
    }
}

// MARK: - Devices

/// Usable Metal devices first, then the CPU reference device; the simulated device is at this index, uncounted.
/// -1 in a forked child, with the reason in nm_last_error().
@_cdecl("nm_device_count")
public func nmDeviceCount() -> Int32 {
    if nm_forked_child() != 0 {
        nm_set_last_error(forkedMessage)
        return -1
    }
    return withAutoreleasePool { DeviceRegistry.count }
}

/// The description of a device without opening it.
@_cdecl("nm_device_get_info")
public func nmDeviceGetInfo(_ index: Int32, _ info: UnsafeMutablePointer<nm_device_info>?) -> nm_status {
    guarded { try out(info, "nm_device_get_info").pointee = try DeviceRegistry.info(index: index) }
}

/// Opens device index (a new handle to the process-wide device object).
@_cdecl("nm_device_open")
public func nmDeviceOpen(_ index: Int32, _ result: UnsafeMutablePointer<OpaquePointer?>?) -> nm_status {
    guarded {
        let r = try out(result, "nm_device_open")
        r.pointee = handle(try DeviceRegistry.open(index: index))
    }
}

/// Releases a device handle.
@_cdecl("nm_device_release")
public func nmDeviceRelease(_ device: OpaquePointer?) { releaseHandle(device) }

/// Limits how long one dispatch may run (CPU device and simulated Metal device).
@_cdecl("nm_device_set_time_limit")
public func nmDeviceSetTimeLimit(_ device: OpaquePointer?, _ nanoseconds: UInt64) -> nm_status {
    guarded { try object(device, (any Device).self, "nm_device_set_time_limit").setTimeLimit(nanoseconds) }
}

/// The per-dispatch time limit (0: none).
@_cdecl("nm_device_get_time_limit")
public func nmDeviceGetTimeLimit(_ device: OpaquePointer?, _ nanoseconds: UnsafeMutablePointer<UInt64>?) -> nm_status {
    guarded {
        let d = try object(device, (any Device).self, "nm_device_get_time_limit")
        try out(nanoseconds, "nm_device_get_time_limit").pointee = d.timeLimit
    }
}

/// Live statistics of a device.
@_cdecl("nm_device_get_stats")
public func nmDeviceGetStats(_ device: OpaquePointer?, _ stats: UnsafeMutablePointer<nm_device_stats>?) -> nm_status {
    guarded {
        let d = try object(device, (any Device).self, "nm_device_get_stats")
        try out(stats, "nm_device_get_stats").pointee = d.statistics()
    }
}

/// The device's memory budget: free, total, allocated (numba.cuda's get_memory_info).
@_cdecl("nm_device_get_memory_info")
public func nmDeviceGetMemoryInfo(_ device: OpaquePointer?, _ info: UnsafeMutablePointer<nm_memory_info>?) -> nm_status {
    guarded {
        let d = try object(device, (any Device).self, "nm_device_get_memory_info")
        try out(info, "nm_device_get_memory_info").pointee = d.memoryInfo()
    }
}

// MARK: - Buffers

/// A zero-filled shared buffer.
@_cdecl("nm_buffer_new")
public func nmBufferNew(_ device: OpaquePointer?, _ length: UInt64, _ result: UnsafeMutablePointer<OpaquePointer?>?) -> nm_status {
    guarded {
        let d = try object(device, (any Device).self, "nm_buffer_new")
        let r = try out(result, "nm_buffer_new")
        if length > d.info.recommended_working_set * 2 && length > (1 << 32) {
            throw RuntimeError.outOfMemory("nm_buffer_new: \(length) bytes is far beyond the device's recommended working set "
                + "of \(d.info.recommended_working_set) bytes")
        }
        r.pointee = handle(try d.makeBuffer(length: length))
    }
}

/// Wraps page-aligned host memory without copying.
@_cdecl("nm_buffer_wrap")
public func nmBufferWrap(_ device: OpaquePointer?, _ host: UnsafeMutableRawPointer?, _ length: UInt64,
                         _ result: UnsafeMutablePointer<OpaquePointer?>?) -> nm_status {
    guarded {
        let d = try object(device, (any Device).self, "nm_buffer_wrap")
        let r = try out(result, "nm_buffer_wrap")
        guard let host else { throw RuntimeError.invalid("nm_buffer_wrap: the host pointer is NULL") }
        r.pointee = handle(try d.wrapBuffer(host: host, length: length))
    }
}

/// The MTLBuffer under a buffer (DLPack's kDLMetal data pointer).
@_cdecl("nm_buffer_native")
public func nmBufferNative(_ buffer: OpaquePointer?, _ result: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> nm_status {
    guarded {
        let b = try object(buffer, Buffer.self, "nm_buffer_native")
        let r = try out(result, "nm_buffer_native")
        r.pointee = try b.device.nativeHandle(of: b)
    }
}

/// Wraps another library's shared-storage MTLBuffer without copying.
@_cdecl("nm_buffer_wrap_native")
public func nmBufferWrapNative(_ device: OpaquePointer?, _ native: UnsafeMutableRawPointer?,
                               _ result: UnsafeMutablePointer<OpaquePointer?>?) -> nm_status {
    guarded {
        let d = try object(device, (any Device).self, "nm_buffer_wrap_native")
        let r = try out(result, "nm_buffer_wrap_native")
        guard let native else { throw RuntimeError.invalid("nm_buffer_wrap_native: the MTLBuffer is NULL") }
        r.pointee = handle(try d.wrapNative(native))
    }
}

/// Releases a buffer handle (work in flight keeps the memory valid until it completes).
@_cdecl("nm_buffer_release")
public func nmBufferRelease(_ buffer: OpaquePointer?) { releaseHandle(buffer) }

/// Host pointer of a buffer (NULL for a NULL handle; the memory stays valid in a forked child).
@_cdecl("nm_buffer_contents")
public func nmBufferContents(_ buffer: OpaquePointer?) -> UnsafeMutableRawPointer? {
    withAutoreleasePool { (try? object(buffer, Buffer.self, "nm_buffer_contents"))?.contents }
}

/// Length of a buffer in bytes (0 for a NULL handle).
@_cdecl("nm_buffer_length")
public func nmBufferLength(_ buffer: OpaquePointer?) -> UInt64 {
    withAutoreleasePool { (try? object(buffer, Buffer.self, "nm_buffer_length"))?.length ?? 0 }
}

/// Whether queued work still holds a caller-memory buffer.
@_cdecl("nm_buffer_in_use")
public func nmBufferInUse(_ buffer: OpaquePointer?, _ result: UnsafeMutablePointer<Int32>?) -> nm_status {
    guarded {
        let b = try object(buffer, Buffer.self, "nm_buffer_in_use")
        try out(result, "nm_buffer_in_use").pointee = b.inUse ? 1 : 0
    }
}

/// Immediate host copy into a buffer.
@_cdecl("nm_buffer_write")
public func nmBufferWrite(_ buffer: OpaquePointer?, _ offset: UInt64, _ src: UnsafeRawPointer?, _ n: UInt64) -> nm_status {
    guarded {
        let b = try object(buffer, Buffer.self, "nm_buffer_write")
        guard let src else { if n == 0 { return }; throw RuntimeError.invalid("nm_buffer_write: the source pointer is NULL") }
        try b.write(offset: offset, from: src, count: n)
    }
}

/// Immediate host copy out of a buffer.
@_cdecl("nm_buffer_read")
public func nmBufferRead(_ buffer: OpaquePointer?, _ offset: UInt64, _ dst: UnsafeMutableRawPointer?, _ n: UInt64) -> nm_status {
    guarded {
        let b = try object(buffer, Buffer.self, "nm_buffer_read")
        guard let dst else { if n == 0 { return }; throw RuntimeError.invalid("nm_buffer_read: the destination pointer is NULL") }
        try b.read(offset: offset, into: dst, count: n)
    }
}

// MARK: - Pipelines

/// Compiles a kernel from MSL source.
@_cdecl("nm_pipeline_new")
public func nmPipelineNew(_ device: OpaquePointer?, _ source: UnsafePointer<CChar>?, _ name: UnsafePointer<CChar>?,
                          _ options: UnsafePointer<nm_compile_options>?, _ abi: UnsafePointer<nm_kernel_abi>?,
                          _ result: UnsafeMutablePointer<OpaquePointer?>?) -> nm_status {
    guarded {
        let d = try object(device, (any Device).self, "nm_pipeline_new")
        let r = try out(result, "nm_pipeline_new")
        guard let source, let name else { throw RuntimeError.invalid("nm_pipeline_new: the source or kernel name is NULL") }
        let opts = options?.pointee ?? nm_compile_options(fast_math: UInt32(NM_MATH_SAFE), language_version: 0)
        _ = try requestedMathMode(opts)
        let declared = try abi.map { try KernelABI($0) }
        r.pointee = handle(try d.makePipeline(source: String(cString: source), name: String(cString: name), options: opts,
                                              abi: declared))
    }
}

/// Releases a pipeline handle.
@_cdecl("nm_pipeline_release")
public func nmPipelineRelease(_ pipeline: OpaquePointer?) { releaseHandle(pipeline) }

/// Limits and compile facts of a pipeline.
@_cdecl("nm_pipeline_get_info")
public func nmPipelineGetInfo(_ pipeline: OpaquePointer?, _ info: UnsafeMutablePointer<nm_pipeline_info>?) -> nm_status {
    guarded {
        let p = try object(pipeline, (any Pipeline).self, "nm_pipeline_get_info")
        try out(info, "nm_pipeline_get_info").pointee = p.info
    }
}

// MARK: - Queues

/// A new in-order queue.
@_cdecl("nm_queue_new")
public func nmQueueNew(_ device: OpaquePointer?, _ result: UnsafeMutablePointer<OpaquePointer?>?) -> nm_status {
    guarded {
        let d = try object(device, (any Device).self, "nm_queue_new")
        let r = try out(result, "nm_queue_new")
        r.pointee = handle(try d.makeQueue())
    }
}

/// Submits what is encoded and releases the handle without waiting: queued work still runs.
@_cdecl("nm_queue_release")
public func nmQueueRelease(_ queue: OpaquePointer?) {
    if nm_forked_child() != 0 { return }
    withAutoreleasePool {
        guard let q = try? object(queue, (any Queue).self, "nm_queue_release") else { return }
        try? q.flush()
        releaseHandle(queue)
    }
}

/// Validates and enqueues a dispatch.
@_cdecl("nm_queue_dispatch")
public func nmQueueDispatch(_ queue: OpaquePointer?, _ desc: UnsafePointer<nm_dispatch_desc>?, _ workID: UnsafeMutablePointer<UInt64>?) -> nm_status {
    guarded {
        let q = try object(queue, (any Queue).self, "nm_queue_dispatch")
        guard let desc else { throw RuntimeError.invalid("nm_queue_dispatch: the descriptor is NULL") }
        workID?.pointee = try q.dispatch(desc)
    }
}

/// Enqueues a copy between buffers.
@_cdecl("nm_queue_copy")
public func nmQueueCopy(_ queue: OpaquePointer?, _ src: OpaquePointer?, _ srcOffset: UInt64, _ dst: OpaquePointer?,
                        _ dstOffset: UInt64, _ n: UInt64, _ workID: UnsafeMutablePointer<UInt64>?) -> nm_status {
    guarded {
        let q = try object(queue, (any Queue).self, "nm_queue_copy")
        let s = try object(src, Buffer.self, "nm_queue_copy")
        let d = try object(dst, Buffer.self, "nm_queue_copy")
        guard s.device === q.device, d.device === q.device else {
            throw RuntimeError.invalid("nm_queue_copy: a buffer belongs to another device")
        }
        try s.checkRange(offset: srcOffset, count: n, what: "nm_queue_copy source")
        try d.checkRange(offset: dstOffset, count: n, what: "nm_queue_copy destination")
        let id = try q.copy(from: s, srcOffset: srcOffset, to: d, dstOffset: dstOffset, count: n)
        workID?.pointee = id
    }
}

/// Enqueues a byte fill.
@_cdecl("nm_queue_fill")
public func nmQueueFill(_ queue: OpaquePointer?, _ buffer: OpaquePointer?, _ offset: UInt64, _ n: UInt64, _ value: UInt8,
                        _ workID: UnsafeMutablePointer<UInt64>?) -> nm_status {
    guarded {
        let q = try object(queue, (any Queue).self, "nm_queue_fill")
        let b = try object(buffer, Buffer.self, "nm_queue_fill")
        guard b.device === q.device else { throw RuntimeError.invalid("nm_queue_fill: the buffer belongs to another device") }
        try b.checkRange(offset: offset, count: n, what: "nm_queue_fill")
        let id = try q.fill(b, offset: offset, count: n, value: value)
        workID?.pointee = id
    }
}

/// Enqueues a marker.
@_cdecl("nm_queue_marker")
public func nmQueueMarker(_ queue: OpaquePointer?, _ workID: UnsafeMutablePointer<UInt64>?) -> nm_status {
    guarded {
        let q = try object(queue, (any Queue).self, "nm_queue_marker")
        let id = try q.marker()
        workID?.pointee = id
    }
}

/// Later work on queue starts after other's work id completes.
@_cdecl("nm_queue_wait_for")
public func nmQueueWaitFor(_ queue: OpaquePointer?, _ other: OpaquePointer?, _ otherWorkID: UInt64) -> nm_status {
    guarded {
        let q = try object(queue, (any Queue).self, "nm_queue_wait_for")
        let o = try object(other, (any Queue).self, "nm_queue_wait_for")
        guard o.device === q.device else { throw RuntimeError.invalid("nm_queue_wait_for: the other queue belongs to another device") }
        if otherWorkID == 0 || otherWorkID > o.lastIssued {
            throw RuntimeError.invalid("nm_queue_wait_for: work id \(otherWorkID) was never issued on the other queue")
        }
        if o === q { return }  // a queue's own work is already in order
        try q.waitFor(o, workID: otherWorkID)
    }
}

/// Submits encoded work without waiting.
@_cdecl("nm_queue_flush")
public func nmQueueFlush(_ queue: OpaquePointer?) -> nm_status {
    guarded { try object(queue, (any Queue).self, "nm_queue_flush").flush() }
}

/// Flushes and waits for all submitted work.
@_cdecl("nm_queue_wait")
public func nmQueueWait(_ queue: OpaquePointer?) -> nm_status {
    guarded { _ = try object(queue, (any Queue).self, "nm_queue_wait").wait(for: 0, timeoutNs: nil) }
}

/// nm_queue_wait for at most maxNs at a time.
@_cdecl("nm_queue_wait_bounded")
public func nmQueueWaitBounded(_ queue: OpaquePointer?, _ workID: UnsafeMutablePointer<UInt64>?, _ maxNs: UInt64,
                               _ done: UnsafeMutablePointer<Int32>?) -> nm_status {
    guarded {
        let q = try object(queue, (any Queue).self, "nm_queue_wait_bounded")
        let id = try out(workID, "nm_queue_wait_bounded"), d = try out(done, "nm_queue_wait_bounded")
        d.pointee = 0
        if id.pointee > q.lastIssued {
            throw RuntimeError.invalid("nm_queue_wait_bounded: work id \(id.pointee) was never issued on this queue")
        }
        do {
            let r = try q.wait(for: id.pointee, timeoutNs: maxNs)
            id.pointee = r.id
            d.pointee = r.done ? 1 : 0
        } catch let e as RuntimeError where e.status == NM_ERR_EXECUTION {
            d.pointee = 1  // the work completed, and failed
            throw e
        }
    }
}

/// Abandons the queue's unfinished work.
@_cdecl("nm_queue_cancel")
public func nmQueueCancel(_ queue: OpaquePointer?) -> nm_status {
    guarded { try object(queue, (any Queue).self, "nm_queue_cancel").cancel() }
}

/// Whether work id has completed.
@_cdecl("nm_queue_query")
public func nmQueueQuery(_ queue: OpaquePointer?, _ workID: UInt64, _ done: UnsafeMutablePointer<Int32>?) -> nm_status {
    guarded {
        let q = try object(queue, (any Queue).self, "nm_queue_query")
        try out(done, "nm_queue_query").pointee = try q.query(workID) ? 1 : 0
    }
}

/// Device start/end of completed work.
@_cdecl("nm_queue_timestamps")
public func nmQueueTimestamps(_ queue: OpaquePointer?, _ workID: UInt64, _ start: UnsafeMutablePointer<UInt64>?,
                              _ end: UnsafeMutablePointer<UInt64>?) -> nm_status {
    guarded {
        let q = try object(queue, (any Queue).self, "nm_queue_timestamps")
        let s = try out(start, "nm_queue_timestamps"), e = try out(end, "nm_queue_timestamps")
        (s.pointee, e.pointee) = try q.timestamps(workID)
    }
}

// MARK: - The simulated Metal device

/// Injects a fault into, or holds, the simulated Metal device's GPU.
@_cdecl("nm_sim_control")
public func nmSimControl(_ device: OpaquePointer?, _ action: UInt32, _ value: UInt64) -> nm_status {
    guarded { try simulated(try object(device, (any Device).self, "nm_sim_control"), "nm_sim_control").control(action, value) }
}

/// The simulated Metal API's counters.
@_cdecl("nm_sim_get_stats")
public func nmSimGetStats(_ device: OpaquePointer?, _ stats: UnsafeMutablePointer<nm_sim_stats>?) -> nm_status {
    guarded {
        let d = try simulated(try object(device, (any Device).self, "nm_sim_get_stats"), "nm_sim_get_stats")
        try out(stats, "nm_sim_get_stats").pointee = d.simulationStatistics()
    }
}

/// The device as the simulated Metal device, or NM_ERR_UNAVAILABLE.
private func simulated(_ device: any Device, _ call: StaticString) throws -> MetalDevice {
    guard let m = device as? MetalDevice, m.info.kind == NM_DEVICE_METAL_SIM else {
        throw RuntimeError.unavailable("\(call): the device is not the simulated Metal device")
    }
    return m
}
