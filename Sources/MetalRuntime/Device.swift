// Device.swift -- what every device offers behind the C ABI, and the list of devices (the Metal GPUs
// numba-metal can use, then the CPU reference device; the simulated Metal device only when asked for).
import CPUEngine

// MARK: - Device

/// A device backend: a Metal GPU, the CPU reference device, or the Metal backend on the simulated Metal API.
protocol Device: AnyObject {
    /// The description reported by nm_device_get_info.
    var info: nm_device_info { get }
    /// Live statistics (nm_device_get_stats), indexed by DeviceStat.
    var stats: Counters { get }
    /// A zero-filled shared buffer of length bytes (length 0 is valid).
    func makeBuffer(length: UInt64) throws -> Buffer
    /// A buffer over page-aligned host memory, without a copy.
    func wrapBuffer(host: UnsafeMutableRawPointer, length: UInt64) throws -> Buffer
    /// The MTLBuffer under `buffer` (not retained), whose contents are the buffer's from byte 0; DLPack's
    /// kDLMetal data pointer. NM_ERR_UNAVAILABLE on a device without MTLBuffers.
    func nativeHandle(of buffer: Buffer) throws -> UnsafeMutableRawPointer
    /// A buffer over another library's shared-storage MTLBuffer of this device (retained), without a copy.
    func wrapNative(_ handle: UnsafeMutableRawPointer) throws -> Buffer
    /// Compiles kernel `name` from MSL source; `abi`, when given, is the parameter layout the MSL must declare.
    func makePipeline(source: String, name: String, options: nm_compile_options, abi: KernelABI?) throws -> any Pipeline
    /// A new in-order queue.
    func makeQueue() throws -> any Queue
    /// Limits how long one dispatch may run (nanoseconds; 0: no limit): a dispatch running longer is stopped
    /// and fails, naming the kernel. NM_ERR_UNAVAILABLE where the device has its own watchdog (a GPU).
    func setTimeLimit(_ nanoseconds: UInt64) throws
    /// The per-dispatch time limit in nanoseconds (0: none).
    var timeLimit: UInt64 { get }
    /// The bytes this device may use in all: Metal's recommended working set; the CPU device: physical memory.
    var memoryBudget: UInt64 { get }
    /// The bytes this process's device has allocated now (Metal's currentAllocatedSize).
    var allocatedSize: UInt64 { get }
}

/// Index of statistics counters.
enum DeviceStat: Int, CaseIterable {
    case liveBuffers = 0, liveBufferBytes, pipelinesCompiled, pipelinesFromCache, dispatches
}

extension Device {
    /// The statistics snapshot.
    func statistics() -> nm_device_stats {
        nm_device_stats(live_buffers: stats.get(DeviceStat.liveBuffers.rawValue),
                        live_buffer_bytes: stats.get(DeviceStat.liveBufferBytes.rawValue),
                        pipelines_compiled: stats.get(DeviceStat.pipelinesCompiled.rawValue),
                        pipelines_from_cache: stats.get(DeviceStat.pipelinesFromCache.rawValue),
                        dispatches: stats.get(DeviceStat.dispatches.rawValue))
    }

    /// nm_device_get_memory_info: free is what is left of the budget, never negative.
    func memoryInfo() -> nm_memory_info {
        let total = memoryBudget, allocated = allocatedSize
        return nm_memory_info(free: total > allocated ? total - allocated : 0, total: total, allocated: allocated)
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
    /// Guards the tables below.
    private static let lock = Mutex()
    /// Devices opened so far (guarded by lock).
    nonisolated(unsafe) private static var opened: [Int32: any Device] = [:]
    /// Number of usable Metal devices, -1 until asked (guarded by lock).
    nonisolated(unsafe) private static var metalCount: Int32 = -1

    /// How many Metal devices numba-metal can use (0 without Metal).
    static func metalDeviceCount() -> Int32 {
        lock.locked {
            if metalCount < 0 { metalCount = Int32(MetalDevice.deviceCount()) }
            return metalCount
        }
    }

    /// Metal devices first, then the CPU reference device (the simulated device is not counted).
    static var count: Int32 { metalDeviceCount() + 1 }

    /// The description of device index without opening it.
    static func info(index: Int32) throws -> nm_device_info {
        let metal = metalDeviceCount()
        switch index {
        case 0..<metal: return try MetalDevice.info(index: Int(index))
        case metal: return CPUDevice.describe()
        case metal + 1: return try MetalDevice.describeSimulated()
        default: throw noSuchDevice(index, metal)
        }
    }

    /// The device object for index (created on first use, then shared).
    static func open(index: Int32) throws -> any Device {
        let metal = metalDeviceCount()
        guard index >= 0 && index <= metal + 1 else { throw noSuchDevice(index, metal) }
        return try lock.locked {
            if let d = opened[index] { return d }
            let d: any Device
            nm_runtime_started()  // a child forked from now on refuses every call (nm_forked_child)
            switch index {
            case metal: d = CPUDevice()
            case metal + 1: d = try MetalDevice(simulated: ())
            default: d = try MetalDevice(index: Int(index))
            }
            opened[index] = d
            return d
        }
    }

    private static func noSuchDevice(_ index: Int32, _ metal: Int32) -> RuntimeError {
        RuntimeError.unavailable("no device with index \(index); there are \(metal + 1) (indices 0..\(metal)), and index \(metal + 1) "
            + "is the simulated Metal device")
    }
}
