// Device.swift -- what every device offers behind the C ABI, and the list of devices
// (Metal devices first, then the CPU reference device).
import CPUEngine

// MARK: - Device

/// A device: Metal GPU or the CPU reference device. Subclasses override every operation.
class Device {
    /// Index of statistics counters.
    enum Stat: Int, CaseIterable {
        case liveBuffers = 0, liveBufferBytes, pipelinesCompiled, pipelinesFromCache, dispatches
    }

    /// The description reported by nm_device_get_info.
    let info: nm_device_info
    /// Live statistics (nm_device_get_stats).
    let stats = Counters(count: Stat.allCases.count)

    /// Creates a device with its fixed description.
    init(info: nm_device_info) { self.info = info }

    /// A zero-filled shared buffer of length bytes (length 0 is valid).
    func makeBuffer(length: UInt64) throws -> Buffer { throw RuntimeError.internal("makeBuffer not implemented") }

    /// A buffer over page-aligned host memory, without a copy.
    func wrapBuffer(host: UnsafeMutableRawPointer, length: UInt64) throws -> Buffer {
        throw RuntimeError.internal("wrapBuffer not implemented")
    }

    /// Compiles kernel `name` from MSL source; `abi`, when given, is the parameter layout the MSL must declare.
    func makePipeline(source: String, name: String, options: nm_compile_options, abi: KernelABI?) throws -> Pipeline {
        throw RuntimeError.internal("makePipeline not implemented")
    }

    /// A new in-order queue.
    func makeQueue() throws -> Queue { throw RuntimeError.internal("makeQueue not implemented") }

    /// The statistics snapshot.
    func statistics() -> nm_device_stats {
        nm_device_stats(live_buffers: stats.get(Stat.liveBuffers.rawValue),
                        live_buffer_bytes: stats.get(Stat.liveBufferBytes.rawValue),
                        pipelines_compiled: stats.get(Stat.pipelinesCompiled.rawValue),
                        pipelines_from_cache: stats.get(Stat.pipelinesFromCache.rawValue),
                        dispatches: stats.get(Stat.dispatches.rawValue))
    }

    /// Checks that a host pointer may be wrapped: page-aligned, as Metal's makeBuffer(bytesNoCopy:) requires.
    func checkWrappable(host: UnsafeMutableRawPointer, length: UInt64) throws {
        let address = UInt64(UInt(bitPattern: host))
        if address % info.page_size != 0 {
            throw RuntimeError.invalid(
                "nm_buffer_wrap: host address 0x\(String(address, radix: 16)) is not aligned to the page size "
                + "(\(info.page_size) bytes); Metal can only wrap page-aligned memory without a copy. Allocate the "
                + "host memory page-aligned (e.g. mmap) or create a new buffer and copy into it.")
        }
    }
}

// MARK: - Device list

/// The devices this process can use, in ABI index order. Built once.
enum DeviceRegistry {
    /// Lazily creates devices; the same index always returns the same object.
    private static let lock = Mutex()
    /// Devices opened so far (guarded by lock).
    nonisolated(unsafe) private static var opened: [Int32: Device] = [:]
    /// Number of Metal devices, -1 until asked (guarded by lock).
    nonisolated(unsafe) private static var metalCount: Int32 = -1

    /// How many Metal devices exist (0 without Metal).
    static func metalDeviceCount() -> Int32 {
        lock.locked {
            if metalCount < 0 { metalCount = Int32(MetalDevice.deviceCount()) }
            return metalCount
        }
    }

    /// Metal devices first, then the CPU reference device.
    static var count: Int32 { metalDeviceCount() + 1 }

    /// The description of device index without opening it.
    static func info(index: Int32) throws -> nm_device_info {
        let metal = metalDeviceCount()
        guard index >= 0 && index < metal + 1 else {
            throw RuntimeError.unavailable("no device with index \(index); there are \(metal + 1) (indices 0..\(metal))")
        }
        if index < metal { return try MetalDevice.info(index: Int(index)) }
        return CPUDevice.describe()
    }

    /// The device object for index (created on first use, then shared).
    static func open(index: Int32) throws -> Device {
        let metal = metalDeviceCount()
        guard index >= 0 && index < metal + 1 else {
            throw RuntimeError.unavailable("no device with index \(index); there are \(metal + 1) (indices 0..\(metal))")
        }
        return try lock.locked {
            if let d = opened[index] { return d }
            let d: Device = index < metal ? try MetalDevice(index: Int(index)) : CPUDevice()
            opened[index] = d
            return d
        }
    }
}
