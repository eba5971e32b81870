// placeholder, replaced below
import CNumbaMetal
final class MetalDevice: Device {
    static func deviceCount() -> Int { 0 }
    static func info(index: Int) throws -> nm_device_info { throw RuntimeError.unavailable("no Metal") }
    init(index: Int) throws { throw RuntimeError.unavailable("no Metal") }
}
