// Buffer.swift -- shared-storage buffers: the host pointer stays valid for the buffer's life.
import CPUEngine

/// A device buffer in shared (unified) memory; the same object for every device kind.
final class Buffer {
    /// The device that made it.
    let device: any Device
    /// Host address of byte 0.
    let contents: UnsafeMutableRawPointer
    /// Length in bytes as requested.
    let length: UInt64
    /// What keeps the memory alive: the MTLBuffer, the CPU device's mapping, or nil for caller memory.
    let storage: AnyObject?
    /// Whether the memory is the caller's (nm_buffer_wrap, nm_buffer_wrap_native): queued work then holds the
    /// buffer through a BufferUse, which counts it, so that the caller can learn when it may free the memory.
    let callerMemory: Bool
    /// Counter 0: the BufferUse objects alive (queued work not completed).
    private let uses = Counters(count: 1)

    /// Records a live buffer in the device statistics.
    init(device: any Device, contents: UnsafeMutableRawPointer, length: UInt64, storage: AnyObject?, callerMemory: Bool = false) {
        self.device = device
        self.contents = contents
        self.length = length
        self.storage = storage
        self.callerMemory = callerMemory
        device.stats.add(DeviceStat.liveBuffers.rawValue, 1)
        device.stats.add(DeviceStat.liveBufferBytes.rawValue, Int64(length))
    }

    /// What queued work keeps until it completes: the buffer itself, or for caller memory a BufferUse that
    /// counts as a use while it lives (whatever drops it: a completed command buffer, a cancelled item, a
    /// queue released with work in it).
    func keptForWork() -> AnyObject { callerMemory ? BufferUse(self) : self }

    /// Whether queued work still holds this buffer (always false for memory the device allocated).
    var inUse: Bool { uses.get(0) != 0 }

    fileprivate func countUse(_ delta: Int64) { uses.add(0, delta) }

    deinit {
        device.stats.add(DeviceStat.liveBuffers.rawValue, -1)
        device.stats.add(DeviceStat.liveBufferBytes.rawValue, -Int64(length))
    }

    /// Checks that [offset, offset+n) lies inside the buffer.
    func checkRange(offset: UInt64, count n: UInt64, what: String) throws {
        if offset > length || n > length - offset {
            throw RuntimeError.invalid("\(what): range [\(offset), \(offset &+ n)) is outside the buffer of \(length) bytes")
        }
    }

    /// Immediate host copy into the buffer.
    func write(offset: UInt64, from src: UnsafeRawPointer, count n: UInt64) throws {
        try checkRange(offset: offset, count: n, what: "nm_buffer_write")
        if n > 0 { (contents + Int(offset)).copyMemory(from: src, byteCount: Int(n)) }
    }

    /// Immediate host copy out of the buffer.
    func read(offset: UInt64, into dst: UnsafeMutableRawPointer, count n: UInt64) throws {
        try checkRange(offset: offset, count: n, what: "nm_buffer_read")
        if n > 0 { dst.copyMemory(from: contents + Int(offset), byteCount: Int(n)) }
    }
}

/// A use of a caller-memory buffer by queued work: counted from creation to deinit.
final class BufferUse {
    let buffer: Buffer
    init(_ buffer: Buffer) {
        self.buffer = buffer
        buffer.countUse(1)
    }
    deinit { buffer.countUse(-1) }
}
