// swift-tools-version:5.9
// The numba-metal runtime: one dynamic library with a C ABI (Sources/CPUEngine/include/numba_metal_runtime.h)
// behind which sit the Metal backend (macOS) and the CPU reference device (every OS).
import PackageDescription

let package = Package(
    name: "NumbaMetalRuntime",
    products: [
        .library(name: "NumbaMetalRuntime", type: .dynamic, targets: ["MetalRuntime"]),
    ],
    targets: [
        // C that Swift cannot express well: the CPU device's executor, fiber context switches, fault capture,
        // FP control; and the C ABI header the whole library implements.
        .target(
            name: "CPUEngine",
            cSettings: [.unsafeFlags(["-U_FORTIFY_SOURCE"])]
        ),
        // Apple's Metal declarations, mirrored so the Metal backend builds where Metal does not exist.
        .target(name: "MetalSimulator"),
        // The runtime: the C ABI's entry points, the device-independent objects, the CPU reference device
        // and the Metal backend.
        .target(
            name: "MetalRuntime",
            dependencies: [
                "CPUEngine",
                .target(name: "MetalSimulator", condition: .when(platforms: [.linux])),
            ]
        ),
    ],
    swiftLanguageVersions: [.v5]
)
