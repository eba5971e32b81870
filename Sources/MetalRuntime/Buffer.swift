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

    /// Records a live buffer in the device statistics.
    init(device: any Device, contents: UnsafeMutableRawPointer, length: UInt64, storage: AnyObject?) {
        self.device = device
        self.contents = contents
        self.length = length
        self.storage = storage
        device.stats.add(DeviceStat.liveBuffers.rawValue, 1)
        device.stats.add(DeviceStat.liveBufferBytes.rawValue, Int64(length))
    }

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
